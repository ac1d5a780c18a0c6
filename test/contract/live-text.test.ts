import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { createDocumentClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbLiveText } from '../../lib/adapters/dynamodb/dynamodb-live-text.ts';
import { DynamoDbSessionStore } from '../../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { MemoryLiveText } from '../../lib/adapters/memory/memory-live-text.ts';
import { MemorySessionStore } from '../../lib/adapters/memory/memory-session-store.ts';
import { pkOf } from '../../lib/adapters/session-item-codec.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { describeLiveTextContract } from './live-text.contract.ts';

const { endpoints, region, resources } = inject('baton');

describeLiveTextContract('MemoryLiveText', () => ({ live: new MemoryLiveText(), store: new MemorySessionStore() }));

const documents = createDocumentClient({ region, endpoints, credentials: LOCAL_CREDENTIALS });
describeLiveTextContract('DynamoDbLiveText on DynamoDB Local', () => ({
  live: new DynamoDbLiveText({ client: documents, table: resources.table }),
  store: new DynamoDbSessionStore({ client: documents, table: resources.table }),
}));

describe('DynamoDbLiveText on stored items it did not write', () => {
  it('skips a malformed or misplaced live text item: followers show only what the owner wrote', async () => {
    const table = resources.table;
    const live = new DynamoDbLiveText({ client: documents, table });
    const key = { tenant: 'contract', agent: 'live-agent', id: `s-${randomUUID()}` };
    await live.put(key, { seq: 4, turnId: 't', index: 0, text: 'good' }, Date.now() + 60_000);
    const raw = (sk: string, item: Record<string, unknown>) =>
      documents.send(new PutCommand({ TableName: table, Item: { pk: pkOf(key), sk, ...item } }));
    await raw('L#000000000004#000001', { seq: 4, turnId: 't', index: 1, text: 42, expiresAt: Date.now() + 60_000 });
    await raw('L#000000000004#000002', {
      seq: 9,
      turnId: 't',
      index: 2,
      text: 'other seq',
      expiresAt: Date.now() + 60_000,
    });
    expect((await live.read(key, 4, { now: Date.now() })).map((c) => c.text)).toEqual(['good']);
  });
});
