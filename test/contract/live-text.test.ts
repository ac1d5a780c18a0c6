import { inject } from 'vitest';
import { createDocumentClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbLiveText } from '../../lib/adapters/dynamodb/dynamodb-live-text.ts';
import { DynamoDbSessionStore } from '../../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { MemoryLiveText } from '../../lib/adapters/memory/memory-live-text.ts';
import { MemorySessionStore } from '../../lib/adapters/memory/memory-session-store.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { describeLiveTextContract } from './live-text.contract.ts';

const { endpoints, region, resources } = inject('baton');

describeLiveTextContract('MemoryLiveText', () => ({ live: new MemoryLiveText(), store: new MemorySessionStore() }));

const documents = createDocumentClient({ region, endpoints, credentials: LOCAL_CREDENTIALS });
describeLiveTextContract('DynamoDbLiveText on DynamoDB Local', () => ({
  live: new DynamoDbLiveText({ client: documents, table: resources.table }),
  store: new DynamoDbSessionStore({ client: documents, table: resources.table }),
}));
