import { inject } from 'vitest';
import { createDocumentClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbStreamSlots } from '../../lib/adapters/dynamodb/dynamodb-stream-slots.ts';
import { MemoryStreamSlots } from '../../lib/adapters/memory/memory-stream-slots.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { describeStreamSlotsContract } from './stream-slots.contract.ts';

const { endpoints, region, resources } = inject('baton');

describeStreamSlotsContract('MemoryStreamSlots', () => new MemoryStreamSlots());

const documents = createDocumentClient({ region, endpoints, credentials: LOCAL_CREDENTIALS });
describeStreamSlotsContract(
  'DynamoDbStreamSlots on DynamoDB Local',
  () => new DynamoDbStreamSlots({ client: documents, table: resources.table }),
);
