import {
  CreateTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { BucketAlreadyExists, BucketAlreadyOwnedByYou, CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  DLQ_RETENTION_SECONDS,
  QUEUES,
  type QueueDefinition,
  SESSION_TABLE,
  visibilityTimeoutSeconds,
} from '../core/resources.ts';
import { localClients } from './aws-clients.ts';
import type { Endpoints } from './emulators.ts';

/** A queue as a client needs it: the URL to send to, the ARN an event source names. */
export interface QueueRef {
  readonly url: string;
  readonly arn: string;
}

/** The physical names of everything `provisionResources` created (or found). */
export interface Resources {
  readonly table: string;
  readonly bucket: string;
  readonly queues: {
    readonly tickets: QueueRef;
    readonly work: QueueRef;
    readonly results: QueueRef;
    readonly ticketsDlq: QueueRef;
    readonly workDlq: QueueRef;
  };
}

export interface ProvisionOptions {
  /** Prefix of every physical name (lowercase letters, digits, dashes: it names a bucket too). */
  readonly prefix: string;
  /** The consuming functions' timeout; the visibility timeout derives from it as in the cloud. */
  readonly functionTimeoutS: number;
  readonly region: string;
  /** Overrides the derived visibility timeout (tests use 1–2 s). */
  readonly visibilityTimeoutS?: number | undefined;
  /** Overrides each DLQ's maxReceiveCount from the resource definition. */
  readonly maxReceiveCount?: number | undefined;
}

/** SQS's cap on VisibilityTimeout. */
const MAX_VISIBILITY_TIMEOUT_S = 43_200;

/** Physical names for a prefix, without creating anything. */
export function resourceNames(prefix: string) {
  return {
    table: `${prefix}-sessions`,
    bucket: `${prefix}-payloads`,
    queue: (definitionName: string) => `${prefix}-${definitionName}`,
  };
}

/**
 * Creates the session table, the queues with their DLQs and redrive policies, and the payload
 * bucket from lib/core/resources.ts. Idempotent: what exists is reused (queue attributes are
 * brought to the requested values).
 * @example const resources = await provisionResources(emulators.endpoints, { prefix: 'baton', functionTimeoutS: 60, region });
 */
export async function provisionResources(endpoints: Endpoints, options: ProvisionOptions): Promise<Resources> {
  const clients = localClients(endpoints, options.region);
  const names = resourceNames(options.prefix);
  try {
    const [, , queues] = await Promise.all([
      ensureTable(clients.dynamodb, names.table),
      ensureBucket(clients.s3, names.bucket, options.region),
      ensureQueues(clients.sqs, endpoints.sqs, names.queue, options),
    ]);
    return { table: names.table, bucket: names.bucket, queues };
  } finally {
    clients.dynamodb.destroy();
    clients.sqs.destroy();
    clients.s3.destroy();
  }
}

async function ensureTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const { indexes } = SESSION_TABLE;
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: SESSION_TABLE.partitionKey, AttributeType: 'S' },
          { AttributeName: SESSION_TABLE.sortKey, AttributeType: 'S' },
          { AttributeName: indexes.sweep.partitionKey, AttributeType: indexes.sweep.partitionKeyType },
          { AttributeName: indexes.sweep.sortKey, AttributeType: indexes.sweep.sortKeyType },
          { AttributeName: indexes.bySessionId.partitionKey, AttributeType: indexes.bySessionId.partitionKeyType },
          { AttributeName: indexes.byTenant.partitionKey, AttributeType: indexes.byTenant.partitionKeyType },
          { AttributeName: indexes.byTenant.sortKey, AttributeType: indexes.byTenant.sortKeyType },
        ],
        KeySchema: [
          { AttributeName: SESSION_TABLE.partitionKey, KeyType: 'HASH' },
          { AttributeName: SESSION_TABLE.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: indexes.sweep.name,
            KeySchema: [
              { AttributeName: indexes.sweep.partitionKey, KeyType: 'HASH' },
              { AttributeName: indexes.sweep.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: indexes.sweep.projection },
          },
          {
            IndexName: indexes.bySessionId.name,
            KeySchema: [{ AttributeName: indexes.bySessionId.partitionKey, KeyType: 'HASH' }],
            Projection: { ProjectionType: indexes.bySessionId.projection },
          },
          {
            IndexName: indexes.byTenant.name,
            KeySchema: [
              { AttributeName: indexes.byTenant.partitionKey, KeyType: 'HASH' },
              { AttributeName: indexes.byTenant.sortKey, KeyType: 'RANGE' },
            ],
            Projection: {
              ProjectionType: indexes.byTenant.projection,
              NonKeyAttributes: [...indexes.byTenant.nonKeyAttributes],
            },
          },
        ],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    return; // exists: reuse it as it is
  }
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1 }, { TableName: tableName });
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: tableName,
      TimeToLiveSpecification: { AttributeName: SESSION_TABLE.ttlAttribute, Enabled: true },
    }),
  );
}

async function ensureBucket(client: S3Client, bucket: string, region: string): Promise<void> {
  try {
    await client.send(
      new CreateBucketCommand({
        Bucket: bucket,
        ...(region === 'us-east-1' ? {} : { CreateBucketConfiguration: { LocationConstraint: region as never } }),
      }),
    );
  } catch (error) {
    if (error instanceof BucketAlreadyOwnedByYou || error instanceof BucketAlreadyExists) return;
    throw error;
  }
}

async function ensureQueues(
  client: SQSClient,
  endpoint: string,
  physicalName: (name: string) => string,
  options: ProvisionOptions,
): Promise<Resources['queues']> {
  const consumedVisibilityS = Math.min(
    options.visibilityTimeoutS ?? visibilityTimeoutSeconds(options.functionTimeoutS),
    MAX_VISIBILITY_TIMEOUT_S,
  );
  const withDlq = async (definition: QueueDefinition): Promise<{ queue: QueueRef; dlq?: QueueRef }> => {
    const attributes: Record<string, string> = {};
    if (definition.consumed) attributes.VisibilityTimeout = String(consumedVisibilityS);
    let dlq: QueueRef | undefined;
    if (definition.dlq !== undefined) {
      dlq = await ensureQueue(client, endpoint, physicalName(definition.dlq.name), {
        MessageRetentionPeriod: String(DLQ_RETENTION_SECONDS),
      });
      attributes.RedrivePolicy = JSON.stringify({
        deadLetterTargetArn: dlq.arn,
        maxReceiveCount: options.maxReceiveCount ?? definition.dlq.maxReceiveCount,
      });
    }
    const queue = await ensureQueue(client, endpoint, physicalName(definition.name), attributes);
    return dlq === undefined ? { queue } : { queue, dlq };
  };
  const [tickets, work, results] = await Promise.all([
    withDlq(QUEUES.tickets),
    withDlq(QUEUES.work),
    withDlq(QUEUES.results),
  ]);
  return {
    tickets: tickets.queue,
    work: work.queue,
    results: results.queue,
    ticketsDlq: tickets.dlq as QueueRef,
    workDlq: work.dlq as QueueRef,
  };
}

async function ensureQueue(
  client: SQSClient,
  endpoint: string,
  name: string,
  attributes: Record<string, string>,
): Promise<QueueRef> {
  let url: string | undefined;
  try {
    url = (await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))).QueueUrl;
  } catch (error) {
    // Real SQS refuses a create whose attributes differ from the existing queue's: reuse it.
    if (!isQueueNameExists(error)) throw error;
    url = (await client.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl;
  }
  if (url === undefined) throw new Error(`SQS returned no URL for queue ${name}`);
  url = reachableQueueUrl(url, endpoint);
  if (Object.keys(attributes).length > 0) {
    await client.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));
  }
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`SQS returned no ARN for queue ${name}`);
  return { url, arn };
}

/** SQS answers with `QueueNameExists` or, through its query-compatible code, `AWS.SimpleQueueService.QueueNameExists`. */
const isQueueNameExists = (error: unknown): boolean =>
  error instanceof Error && /QueueNameExists|QueueAlreadyExists/.test(error.name);

/**
 * fauxqs names queues `http://sqs.<region>.localhost:<port>/...`. `*.localhost` does not resolve
 * everywhere, and the SDK sends to the queue URL's host when it differs from an endpoint taken
 * from AWS_ENDPOINT_URL_SQS; so such URLs are rewritten onto the endpoint (fauxqs finds a queue
 * by the name in the path). Other URLs are left alone.
 */
export function reachableQueueUrl(queueUrl: string, endpoint: string): string {
  const url = new URL(queueUrl);
  if (url.hostname !== 'localhost' && !url.hostname.endsWith('.localhost')) return queueUrl;
  return new URL(`${url.pathname}${url.search}`, endpoint).href;
}
