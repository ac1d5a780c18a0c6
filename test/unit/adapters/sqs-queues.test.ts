import type { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { SqsResultPublisher, SqsWorkQueue } from '../../../lib/adapters/sqs/sqs-queues.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { Kick, Result } from '../../../lib/core/messages.ts';
import { formatTraceparent, type TraceContext, xrayHeaderFor } from '../../../lib/core/trace-context.ts';
import { systemClock } from '../../../lib/ports/clock.ts';

/** Records the SendMessage inputs an adapter builds; nothing is sent anywhere. */
function recordingClient() {
  const inputs: SendMessageCommand['input'][] = [];
  const client = { send: async (command: SendMessageCommand) => inputs.push(command.input) } as unknown as SQSClient;
  return { client, inputs };
}

const TRACE: TraceContext = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true };
const kick: Kick = {
  v: 1,
  session: { tenant: 'default', agent: 'a', id: deriveSessionId('default', 'a', 's1') },
  reason: 'continuation',
  fromEpoch: 2,
};

describe('SqsWorkQueue', () => {
  it('owns the chaining of a kick due past SQS’s 15-minute cap: delayed 900 s, carrying its due time', async () => {
    // Arrange
    const { client, inputs } = recordingClient();
    const now = 1_800_000_000_000;
    const queue = new SqsWorkQueue({
      client,
      queueUrl: 'https://sqs.local/work',
      clock: { ...systemClock, now: () => now },
    });

    // Act: one due in two hours, one in ten seconds (a stale notBefore on it is dropped).
    await queue.sendKick(kick, { notBefore: now + 2 * 3600_000 });
    await queue.sendKick({ ...kick, notBefore: now - 1 }, { notBefore: now + 10_000 });

    // Assert
    expect(inputs.map((i) => [JSON.parse(i.MessageBody ?? '{}').notBefore, i.DelaySeconds])).toEqual([
      [now + 2 * 3600_000, 900],
      [undefined, 10],
    ]);
  });

  it('puts the X-Ray header in the AWSTraceHeader system attribute and the W3C context in traceparent', async () => {
    // Arrange
    const { client, inputs } = recordingClient();
    const queue = new SqsWorkQueue({ client, queueUrl: 'https://sqs.local/work' });

    // Act
    await queue.sendKick(kick, { trace: TRACE, delaySeconds: 2.2 });

    // Assert
    expect(inputs).toEqual([
      {
        QueueUrl: 'https://sqs.local/work',
        MessageBody: JSON.stringify(kick),
        MessageAttributes: { traceparent: { DataType: 'String', StringValue: formatTraceparent(TRACE) } },
        MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: xrayHeaderFor(TRACE) } },
        DelaySeconds: 3,
      },
    ]);
  });

  it('sends neither attributes nor a delay when none are asked for', async () => {
    // Arrange
    const { client, inputs } = recordingClient();

    // Act
    await new SqsWorkQueue({ client, queueUrl: 'q' }).sendKick(kick);

    // Assert
    expect(inputs).toEqual([{ QueueUrl: 'q', MessageBody: JSON.stringify(kick) }]);
  });

  it('refuses a negative delay before anything is sent', async () => {
    const { client, inputs } = recordingClient();

    await expect(new SqsWorkQueue({ client, queueUrl: 'q' }).sendKick(kick, { delaySeconds: -1 })).rejects.toThrow(
      /delay/,
    );
    expect(inputs).toEqual([]);
  });
});

describe('SqsResultPublisher', () => {
  it('keeps Baton to two message attributes on a result, leaving producers room under SQS’s ten', async () => {
    // Arrange
    const { client, inputs } = recordingClient();
    const result: Result = {
      v: 1,
      ticketId: 't',
      tenant: 'default',
      agent: 'a',
      sessionId: 's1',
      turnId: 't',
      status: 'failed',
      error: 'boom',
      legs: 1,
      steps: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
    };

    // Act
    await new SqsResultPublisher({ client, queueUrl: 'q' }).publish(result, { trace: TRACE });

    // Assert
    expect(Object.keys(inputs[0]?.MessageAttributes ?? {}).sort()).toEqual(['baton-result-id', 'traceparent']);
    expect(inputs[0]?.MessageAttributes?.['baton-result-id']?.StringValue).toBe('s1/t');
  });
});
