import type { SQSClient } from '@aws-sdk/client-sqs';
import { type AwsClientConfig, createDocumentClient, createSqsClient } from '../adapters/aws-clients.ts';
import { DynamoDbLiveText } from '../adapters/dynamodb/dynamodb-live-text.ts';
import { DynamoDbSessionStore } from '../adapters/dynamodb/dynamodb-session-store.ts';
import { DynamoDbStreamSlots } from '../adapters/dynamodb/dynamodb-stream-slots.ts';
import { S3BlobStore } from '../adapters/s3/s3-blob-store.ts';
import { loadS3Client } from '../adapters/s3/s3-sdk.ts';
import { SqsTicketQueue, SqsWorkQueue } from '../adapters/sqs/sqs-queues.ts';
import type { AgentRegistry } from '../agent/define-agent.ts';
import { systemClock } from '../ports/clock.ts';
import { BatonClient } from './baton-client.ts';

/** The resources a store-backed client talks to: a deployed stack's outputs, or the local stack's. */
export interface StoreResources {
  readonly table: string;
  readonly bucket: string;
  readonly ticketsQueueUrl: string;
  readonly workQueueUrl: string;
}

export interface StoreBackedClientOptions {
  readonly aws: AwsClientConfig;
  readonly resources: StoreResources;
  /** Adjusts the SQS client before use (the local stack adds its trace-header shim). */
  readonly configureSqs?: ((sqs: SQSClient) => void) | undefined;
  /** The deployment's agents: inputs are then admitted against their schemas before they are sent. */
  readonly agents?: AgentRegistry | undefined;
}

/**
 * A client over the production adapters (DynamoDB, SQS, S3), and the store it reads: what the
 * API function, the CLI and `baton dev`'s API build. Nothing of the local stack is imported here.
 * @example const { client } = storeBackedClient({ aws: { region }, resources: { table, bucket, ticketsQueueUrl, workQueueUrl } });
 */
export function storeBackedClient(options: StoreBackedClientOptions): {
  client: BatonClient;
  store: DynamoDbSessionStore;
  /** The API's open event streams per caller, on the same table. */
  streams: DynamoDbStreamSlots;
} {
  const { aws, resources } = options;
  const sqs = createSqsClient(aws);
  options.configureSqs?.(sqs);
  // The S3 SDK loads at the first blob read or write, as in the functions: most calls touch none.
  const blobs = new S3BlobStore({ client: () => loadS3Client(aws), bucket: resources.bucket });
  const documents = createDocumentClient(aws);
  const store = new DynamoDbSessionStore({ client: documents, table: resources.table, blobs });
  const client = new BatonClient({
    store,
    tickets: new SqsTicketQueue({ client: sqs, queueUrl: resources.ticketsQueueUrl }),
    workQueue: new SqsWorkQueue({ client: sqs, queueUrl: resources.workQueueUrl }),
    blobs,
    live: new DynamoDbLiveText({ client: documents, table: resources.table }),
    clock: systemClock,
    agents: options.agents,
  });
  return { client, store, streams: new DynamoDbStreamSlots({ client: documents, table: resources.table }) };
}
