import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { createDocumentClient, createDynamoDbClient, createSqsClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { parseFaultSpec } from '../../lib/adapters/faults/fault-config.ts';
import { FaultCounter, readFaultCounts } from '../../lib/adapters/faults/fault-counter.ts';
import { addDynamoDbFaults, addSqsFaults } from '../../lib/adapters/faults/fault-middleware.ts';
import { installFaultsFromEnv } from '../../lib/adapters/faults/install-faults.ts';
import type { JournalEntry } from '../../lib/core/journal.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { receiveAndDelete } from '../../lib/local/receive-messages.ts';
import { waitFor } from '../fixtures/wait-for.ts';

const { endpoints, region, resources } = inject('baton');
const aws = { region, endpoints, credentials: LOCAL_CREDENTIALS };

/** A random source that plays the given values, then never fires again. */
const scripted = (...values: number[]) => {
  const queue = [...values];
  return () => queue.shift() ?? 0.999;
};
const noSleep = async () => {};
let unique = 0;
const uniquePk = () => `S#faults#test#${process.pid}-${Date.now()}-${++unique}`;

describe('DynamoDB faults', () => {
  it('a write that commits and then fails is retried by the SDK, which meets its own committed write', async () => {
    // Arrange
    const client = createDynamoDbClient(aws);
    const counter = new FaultCounter();
    addDynamoDbFaults(client, parseFaultSpec('commitThenFail=0.5'), { counter, random: scripted(0), sleep: noSleep });
    const pk = uniquePk();

    // Act
    const error = await client
      .send(
        new PutItemCommand({
          TableName: resources.table,
          Item: { pk: { S: pk }, sk: { S: 'X' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      )
      .catch((e: unknown) => e as Error & { $metadata?: { attempts?: number } });

    // Assert: the second attempt, made by the SDK's own retry, found the item the first one wrote.
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).name).toBe('ConditionalCheckFailedException');
    expect((error as { $metadata: { attempts: number } }).$metadata.attempts).toBe(2);
    expect(counter.counts.commitThenFail).toBe(1);
    const read = await createDynamoDbClient(aws).send(
      new GetItemCommand({ TableName: resources.table, Key: { pk: { S: pk }, sk: { S: 'X' } }, ConsistentRead: true }),
    );
    expect(read.Item?.pk?.S).toBe(pk);
  });

  it('the session store recognises a journal append retried after its commit as its own write', async () => {
    // Arrange
    const client = createDynamoDbClient(aws);
    const counter = new FaultCounter();
    addDynamoDbFaults(client, parseFaultSpec('commitThenFail=0.5'), { counter, random: scripted(0), sleep: noSleep });
    const store = new DynamoDbSessionStore({ client: createDocumentClient(aws, client), table: resources.table });
    const key = { tenant: 'faults', agent: 'test', id: `own-${process.pid}-${++unique}` };
    const entry: JournalEntry = {
      seq: 1,
      kind: 'message',
      epoch: 1,
      writeId: 'w-own',
      at: Date.now(),
      data: { text: 'hello' },
    };

    // Act
    await store.append(key, entry);

    // Assert
    expect(counter.counts.commitThenFail).toBe(1);
    expect((await store.readJournal(key)).map((e) => e.writeId)).toEqual(['w-own']);
  });

  it('throttles surface as DynamoDB throttling errors after the SDK spent its attempts on them', async () => {
    // Arrange
    const client = createDynamoDbClient({ ...aws, maxAttempts: 2 });
    const counter = new FaultCounter();
    addDynamoDbFaults(client, parseFaultSpec('dynamoThrottle=1'), { counter, random: () => 0.1, sleep: noSleep });

    // Act
    const error = await client
      .send(new GetItemCommand({ TableName: resources.table, Key: { pk: { S: uniquePk() }, sk: { S: 'X' } } }))
      .catch((e: unknown) => e as Error);

    // Assert
    expect(['ProvisionedThroughputExceededException', 'ThrottlingException']).toContain((error as Error).name);
    expect((error as { $metadata: { attempts: number } }).$metadata.attempts).toBe(2);
    expect(counter.counts.dynamoThrottle).toBe(2);
  });

  it('a 500 before the table is retried and the request then succeeds', async () => {
    // Arrange
    const client = createDynamoDbClient(aws);
    const counter = new FaultCounter();
    addDynamoDbFaults(client, parseFaultSpec('dynamo5xx=0.5'), { counter, random: scripted(0), sleep: noSleep });

    // Act
    const read = await client.send(
      new GetItemCommand({ TableName: resources.table, Key: { pk: { S: uniquePk() }, sk: { S: 'X' } } }),
    );

    // Assert
    expect(read.$metadata.attempts).toBe(2);
    expect(counter.counts.dynamo5xx).toBe(1);
  });
});

describe('SQS faults', () => {
  const freshQueue = async (name: string) => {
    const sqs = createSqsClient(aws);
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `faults-${name}-${process.pid}-${++unique}` }),
    );
    return QueueUrl as string;
  };
  /** Receives until `expected` messages came, then once more to catch any beyond them. */
  const receiveAll = async (queueUrl: string, expected: number) => {
    const sqs = createSqsClient(aws);
    const bodies: string[] = [];
    const receiveOnce = async () =>
      bodies.push(...(await receiveAndDelete(sqs, queueUrl, { waitTimeSeconds: 1 })).map((m) => m.body));
    await waitFor(
      async () => {
        if (bodies.length < expected) await receiveOnce();
        return bodies.length >= expected;
      },
      { what: () => `${expected} messages on ${queueUrl} (have ${bodies.length})`, pollMs: 0 },
    );
    await receiveOnce();
    return bodies;
  };

  it('every message sent to the work queue is sent twice, and other queues are left alone', async () => {
    // Arrange
    const work = await freshQueue('work');
    const results = await freshQueue('results');
    const sqs = createSqsClient(aws);
    const counter = new FaultCounter();
    addSqsFaults(
      sqs,
      parseFaultSpec('duplicateKicks,duplicateDelayMaxS=0'),
      { counter, sleep: noSleep },
      { duplicateQueueUrls: [work] },
    );

    // Act
    await sqs.send(new SendMessageCommand({ QueueUrl: work, MessageBody: 'kick' }));
    await sqs.send(new SendMessageCommand({ QueueUrl: results, MessageBody: 'result' }));

    // Assert
    expect(await receiveAll(work, 2)).toEqual(['kick', 'kick']);
    expect(await receiveAll(results, 1)).toEqual(['result']);
    expect(counter.counts.duplicateKicks).toBe(1);
  });

  it('a failed send reaches no queue when every attempt fails', async () => {
    // Arrange
    const queue = await freshQueue('fail');
    const sqs = createSqsClient({ ...aws, maxAttempts: 2 });
    const counter = new FaultCounter();
    addSqsFaults(sqs, parseFaultSpec('sqsSendFail=1'), { counter, sleep: noSleep });

    // Act
    const error = await sqs
      .send(new SendMessageCommand({ QueueUrl: queue, MessageBody: 'lost' }))
      .catch((e: unknown) => e as Error);

    // Assert
    expect((error as Error).message).toContain('injected');
    expect(counter.counts.sqsSendFail).toBe(2);
    expect(await receiveAll(queue, 0)).toEqual([]);
  });
});

describe('installing faults from the environment', () => {
  it('installs nothing when BATON_FAULTS is not set', () => {
    // Arrange
    const dynamodb = createDynamoDbClient(aws);
    const sqs = createSqsClient(aws);
    const before = [dynamodb.middlewareStack.identify().length, sqs.middlewareStack.identify().length];

    // Act
    const installed = installFaultsFromEnv({ dynamodb, sqs, workQueueUrl: 'http://queue' }, {});

    // Assert
    expect(installed).toBeUndefined();
    expect([dynamodb.middlewareStack.identify().length, sqs.middlewareStack.identify().length]).toEqual(before);
  });

  it('installs the middleware and reports counts to a file the runner sums across processes', () => {
    // Arrange
    const dir = mkdtempSync(join(tmpdir(), 'baton-faults-'));
    const dynamodb = createDynamoDbClient(aws);
    const sqs = createSqsClient(aws);

    // Act
    const installed = installFaultsFromEnv(
      { dynamodb, sqs, workQueueUrl: 'http://queue' },
      { BATON_FAULTS: JSON.stringify({ dynamoThrottle: 0.05, duplicateKicks: true, countsDir: dir }) },
    );
    installed?.counter.record('dynamoThrottle');
    new FaultCounter(dir, 999_999).record('dynamoThrottle');

    // Assert
    expect(dynamodb.middlewareStack.identify().some((name) => name.startsWith('batonFaults'))).toBe(true);
    expect(sqs.middlewareStack.identify().some((name) => name.startsWith('batonDuplicateKicks'))).toBe(true);
    expect(readFaultCounts(dir).dynamoThrottle).toBe(2);
  });
});
