import { createDocumentClient, createS3Client, createSqsClient } from '../adapters/aws-clients.ts';
import { DynamoDbLiveText } from '../adapters/dynamodb/dynamodb-live-text.ts';
import { DynamoDbSessionStore } from '../adapters/dynamodb/dynamodb-session-store.ts';
import { S3BlobStore } from '../adapters/s3/s3-blob-store.ts';
import { SqsTicketQueue, SqsWorkQueue } from '../adapters/sqs/sqs-queues.ts';
import { LOCAL_CREDENTIALS } from '../local/aws-clients.ts';
import { addAwsTraceHeaderShim } from '../local/aws-trace-header-shim.ts';
import { systemClock } from '../ports/clock.ts';
import { BatonClient } from './baton-client.ts';

/** The resources a store-backed client talks to (a deployed stack's outputs or the local stack). */
export interface StoreTarget {
  readonly region: string;
  readonly endpoints?: { dynamodb?: string; sqs?: string; s3?: string } | undefined;
  /** Emulators: local credentials and the AWSTraceHeader shim. */
  readonly local: boolean;
  readonly table: string;
  readonly bucket: string;
  readonly ticketsQueueUrl: string;
  readonly workQueueUrl: string;
}

/** A client over the real adapters (DynamoDB, SQS, S3), and the store it reads. */
export function storeBackedClient(target: StoreTarget): { client: BatonClient; store: DynamoDbSessionStore } {
  const aws = {
    region: target.region,
    endpoints: target.endpoints,
    ...(target.local ? { credentials: LOCAL_CREDENTIALS } : {}),
  };
  const sqs = createSqsClient(aws);
  if (target.local) addAwsTraceHeaderShim(sqs);
  const blobs = new S3BlobStore({ client: createS3Client(aws), bucket: target.bucket });
  const documents = createDocumentClient(aws);
  const store = new DynamoDbSessionStore({ client: documents, table: target.table, blobs });
  const client = new BatonClient({
    store,
    tickets: new SqsTicketQueue({ client: sqs, queueUrl: target.ticketsQueueUrl }),
    workQueue: new SqsWorkQueue({ client: sqs, queueUrl: target.workQueueUrl }),
    blobs,
    live: new DynamoDbLiveText({ client: documents, table: target.table }),
    clock: systemClock,
  });
  return { client, store };
}
