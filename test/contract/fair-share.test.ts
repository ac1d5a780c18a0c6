import { inject } from 'vitest';
import { createDocumentClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbFairShare } from '../../lib/adapters/dynamodb/dynamodb-fair-share.ts';
import { MemoryFairShare } from '../../lib/adapters/memory/memory-fair-share.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { describeFairShareContract } from './fair-share.contract.ts';

const { endpoints, region, resources } = inject('baton');

describeFairShareContract('MemoryFairShare', () => new MemoryFairShare());

const documents = createDocumentClient({ region, endpoints, credentials: LOCAL_CREDENTIALS });
describeFairShareContract(
  'DynamoDbFairShare on DynamoDB Local',
  () => new DynamoDbFairShare({ client: documents, table: resources.table }),
);
