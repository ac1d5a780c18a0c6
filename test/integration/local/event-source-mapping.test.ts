import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localAwsEnv, localClients } from '../../../lib/local/aws-clients.ts';
import { addAwsTraceHeaderShim } from '../../../lib/local/aws-trace-header-shim.ts';
import { provisionResources, type Resources } from '../../../lib/local/provision.ts';
import { type Supervisor, type SupervisorEvent, startSupervisor } from '../../../lib/local/supervisor.ts';
import { RECORD_FILE_ENV } from '../../fixtures/handlers/recording-handler.ts';
import { eventually, RECORDING_HANDLER, recordFile, recordsFor, sendFixture } from './harness.ts';

const { endpoints, region } = inject('baton');

// Short on purpose: every redelivery in this file waits one visibility timeout.
const TIMEOUT_S = 1;
const VISIBILITY_S = 2;
const MAX_RECEIVE_COUNT = 2;

describe('local event-source mapping', () => {
  const { sqs } = localClients(endpoints, region);
  const events: SupervisorEvent[] = [];
  let resources: Resources;
  let supervisor: Supervisor;
  let file: string;

  beforeAll(async () => {
    resources = await provisionResources(endpoints, {
      prefix: `esm-${randomUUID().slice(0, 8)}`,
      functionTimeoutS: TIMEOUT_S,
      region,
      visibilityTimeoutS: VISIBILITY_S,
      maxReceiveCount: MAX_RECEIVE_COUNT,
    });
    file = await recordFile();
    supervisor = startSupervisor({
      workers: 2,
      config: {
        region,
        waitTimeSeconds: 1,
        mappings: [
          {
            queueUrl: resources.queues.work.url,
            queueArn: resources.queues.work.arn,
            module: RECORDING_HANDLER,
            functionName: 'fixture',
            timeoutS: TIMEOUT_S,
          },
        ],
      },
      env: { ...localAwsEnv(endpoints, region), [RECORD_FILE_ENV]: file },
      log: () => {},
      onEvent: (event) => events.push(event),
    });
    await supervisor.ready();
  });

  afterAll(async () => {
    await supervisor?.stop();
    sqs.destroy();
  });

  it('delivers a Lambda-shaped record to the handler and deletes the message on success', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(
      sqs,
      resources.queues.work.url,
      { id, action: 'ok' },
      {
        MessageAttributes: { traceparent: { DataType: 'String', StringValue: '00-abc-def-01' } },
      },
    );
    const [first] = await eventually(() => nullIfEmpty(recordsFor(file, id)), 'the first delivery');
    // Deleted on success: nothing left to come back after the visibility timeout.
    await eventually(
      async () => ((await queueDepth(resources.queues.work.url)) === 0 ? true : undefined),
      'the message to be deleted from the work queue',
    );

    // Assert
    expect(first?.record).toEqual({
      messageId: expect.any(String),
      receiptHandle: expect.any(String),
      body: JSON.stringify({ id, action: 'ok' }),
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d+$/),
        SenderId: expect.any(String),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d+$/),
      },
      messageAttributes: {
        traceparent: { stringValue: '00-abc-def-01', stringListValues: [], binaryListValues: [], dataType: 'String' },
      },
      md5OfBody: expect.stringMatching(/^[0-9a-f]{32}$/),
      md5OfMessageAttributes: expect.stringMatching(/^[0-9a-f]{32}$/),
      eventSource: 'aws:sqs',
      eventSourceARN: resources.queues.work.arn,
      awsRegion: region,
    });
    expect(recordsFor(file, id)).toHaveLength(1);
    expect(await queueDepth(resources.queues.work.url)).toBe(0);
  });

  it('gives the handler a context whose remaining time counts down from the function timeout', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(sqs, resources.queues.work.url, { id, action: 'ok' });
    const [first] = await eventually(() => nullIfEmpty(recordsFor(file, id)), 'the first delivery');

    // Assert
    expect(first?.functionName).toBe('fixture');
    expect(first?.remainingMs).toBeLessThanOrEqual(TIMEOUT_S * 1000);
    // Counting down, not yet run out (how far it has gone depends on how busy the machine is).
    expect(first?.remainingMs).toBeGreaterThan(0);
  });

  it('redelivers a reported failure after the visibility timeout with a higher receive count', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(sqs, resources.queues.work.url, { id, action: 'fail-first' });
    const deliveries = await eventually(() => atLeast(recordsFor(file, id), 2), 'a second delivery');

    // Assert
    expect(deliveries.map((line) => line.record.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    // Measured from the first receive (the handler runs some time after it on a busy machine).
    const firstReceivedAt = Number(deliveries[0]?.record.attributes.ApproximateFirstReceiveTimestamp);
    expect((deliveries[1]?.at ?? 0) - firstReceivedAt).toBeGreaterThanOrEqual(VISIBILITY_S * 1000 - 100);
  });

  it('treats a thrown error as a failure of the whole batch, so the message comes back', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(sqs, resources.queues.work.url, { id, action: 'throw' });
    const deliveries = await eventually(() => atLeast(recordsFor(file, id), 2), 'a second delivery');

    // Assert
    expect(deliveries[1]?.record.attributes.ApproximateReceiveCount).toBe('2');
  });

  it('moves a message that keeps failing to the DLQ after maxReceiveCount receives', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(sqs, resources.queues.work.url, { id, action: 'fail' });
    const dead = await eventually(async () => {
      const { Messages } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: resources.queues.workDlq.url, WaitTimeSeconds: 1 }),
      );
      return Messages?.find((message) => message.Body?.includes(id));
    }, 'the failing message on the DLQ');

    // Assert
    expect(dead.Body).toBe(JSON.stringify({ id, action: 'fail' }));
    expect(recordsFor(file, id)).toHaveLength(MAX_RECEIVE_COUNT);
  });

  it('kills a worker whose invocation overruns its deadline and redelivers the message', async () => {
    // Arrange
    const id = randomUUID();

    // Act
    await sendFixture(sqs, resources.queues.work.url, { id, action: 'overrun-first' });
    const deliveries = await eventually(
      () => atLeast(recordsFor(file, id), 2),
      'a second delivery after the deadline kill',
    );

    // Assert
    const hung = deliveries[0];
    const kill = events.find((event) => event.type === 'deadline-kill' && event.pid === hung?.pid);
    expect(kill).toMatchObject({ type: 'deadline-kill', functionName: 'fixture', requestId: hung?.awsRequestId });
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'worker-exited', pid: hung?.pid, signal: 'SIGKILL' }),
    );
    expect(deliveries[1]?.record.attributes.ApproximateReceiveCount).toBe('2');
    expect(supervisor.workers().map((worker) => worker.pid)).not.toContain(hung?.pid);
  });

  it('replaces a worker killed with SIGKILL and keeps delivering', async () => {
    // Arrange
    const victim = supervisor.workers()[0];
    if (victim === undefined) throw new Error('no worker');
    const id = randomUUID();

    // Act
    process.kill(victim.pid, 'SIGKILL');
    const replacement = await eventually(
      () =>
        supervisor.workers().find((worker) => worker.slot === victim.slot && worker.pid !== victim.pid && worker.ready),
      'a ready replacement worker in the victim slot',
    );
    await sendFixture(sqs, resources.queues.work.url, { id, action: 'ok' });
    await eventually(() => nullIfEmpty(recordsFor(file, id)), 'the first delivery');

    // Assert
    expect(replacement.restarts).toBe(victim.restarts + 1);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'worker-exited', pid: victim.pid, signal: 'SIGKILL' }),
    );
  });

  it('presents a trace header sent as the AWSTraceHeader system attribute in record.attributes', async () => {
    // Arrange
    const producer = addAwsTraceHeaderShim(localClients(endpoints, region).sqs);
    const traceHeader = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
    const id = randomUUID();

    // Act
    await sendFixture(
      producer,
      resources.queues.work.url,
      { id, action: 'ok' },
      {
        MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: traceHeader } },
      },
    );
    const [first] = await eventually(() => nullIfEmpty(recordsFor(file, id)), 'the first delivery');
    producer.destroy();

    // Assert
    expect(first?.record.attributes.AWSTraceHeader).toBe(traceHeader);
    expect(first?.record.messageAttributes).toEqual({});
    expect(first?.record).not.toHaveProperty('md5OfMessageAttributes');
  });

  async function queueDepth(queueUrl: string): Promise<number> {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
  }
});

const nullIfEmpty = <T>(items: T[]): T[] | undefined => (items.length > 0 ? items : undefined);
const atLeast = <T>(items: T[], count: number): T[] | undefined => (items.length >= count ? items : undefined);
