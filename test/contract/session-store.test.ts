import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { inject } from 'vitest';
import { createDocumentClient, createDynamoDbClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { MemoryBlobStore } from '../../lib/adapters/memory/memory-blob-store.ts';
import { MemorySessionStore } from '../../lib/adapters/memory/memory-session-store.ts';
import { S3BlobStore } from '../../lib/adapters/s3/s3-blob-store.ts';
import { createS3Client } from '../../lib/adapters/s3/s3-client.ts';
import { pkOf } from '../../lib/adapters/session-item-codec.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { provisionResources } from '../../lib/local/provision.ts';
import { addRetryAfterCommitFault } from './dynamodb-faults.ts';
import { describeSessionStoreContract } from './session-store.contract.ts';

const { endpoints, region, resources } = inject('baton');

describeSessionStoreContract('MemorySessionStore', (options = {}) => {
  const store = new MemorySessionStore({
    blobs: options.blobs === false ? undefined : new MemoryBlobStore(),
    offloadThresholdBytes: options.offloadThresholdBytes,
  });
  return {
    store,
    rawItem: async (key, sk) => store.rawItem(key, sk),
    putRawItem: async (key, sk, item) => store.putRawItem(key, sk, item),
    retryNextWriteAfterCommit: (operation) => store.injectFault(operation, { kind: 'retry-after-commit' }),
  };
});

// A table of its own: findDue and listSessions see every session in the table, and other suites
// write to the shared one concurrently.
const aws = { region, endpoints, credentials: LOCAL_CREDENTIALS };
const dynamodb = createDynamoDbClient(aws);
const documents = createDocumentClient(aws, dynamodb);
const fault = addRetryAfterCommitFault(dynamodb);
const blobs = new S3BlobStore({ client: createS3Client(aws), bucket: resources.bucket });
let table: Promise<string> | undefined;
const contractTable = () => {
  table ??= provisionResources(endpoints, { prefix: 'contract-store', functionTimeoutS: 5, region }).then(
    (r) => r.table,
  );
  return table;
};

describeSessionStoreContract('DynamoDbSessionStore on DynamoDB Local', async (options = {}) => {
  const tableName = await contractTable();
  const store = new DynamoDbSessionStore({
    client: documents,
    table: tableName,
    blobs: options.blobs === false ? undefined : blobs,
    offloadThresholdBytes: options.offloadThresholdBytes,
  });
  return {
    store,
    rawItem: async (key, sk) =>
      (await documents.send(new GetCommand({ TableName: tableName, Key: { pk: pkOf(key), sk }, ConsistentRead: true })))
        .Item,
    putRawItem: async (key, sk, item) => {
      if (item === undefined)
        await documents.send(new DeleteCommand({ TableName: tableName, Key: { pk: pkOf(key), sk } }));
      else await documents.send(new PutCommand({ TableName: tableName, Item: { ...item, pk: pkOf(key), sk } }));
    },
    retryNextWriteAfterCommit: () => fault.armNextWrite(),
  };
});
