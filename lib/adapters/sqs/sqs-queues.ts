import { type MessageAttributeValue, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { Kick, Result, Ticket } from '../../core/messages.ts';
import { xrayHeaderFor } from '../../core/trace-context.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { PublishOptions, ResultPublisher, SendOptions, TicketQueue, WorkQueue } from '../../ports/queues.ts';
import {
  checkMessageSize,
  delaySecondsOf,
  messageAttributesOf,
  resultAttributes,
  scheduleKick,
  sqsMessageBody,
  validateMessage,
} from '../queue-messages.ts';

export interface SqsQueueOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  /** What a kick's `notBefore` is measured against; the system clock by default. */
  readonly clock?: Clock | undefined;
}

/**
 * Sends one message. The trace context travels twice: as the W3C `traceparent` message
 * attribute (for any consumer, and an OpenTelemetry future) and as the X-Ray header in the
 * `AWSTraceHeader` system attribute, which Lambda's SQS integration turns into a trace link.
 */
async function send(
  queue: SqsQueueOptions,
  body: unknown,
  options: SendOptions | undefined,
  extraAttributes?: Record<string, string>,
): Promise<void> {
  const delaySeconds = delaySecondsOf(options);
  const named = messageAttributesOf(options, extraAttributes);
  checkMessageSize(body, named, 'queue');
  const attributes = Object.entries(named);
  const messageAttributes: Record<string, MessageAttributeValue> = Object.fromEntries(
    attributes.map(([name, value]) => [name, { DataType: 'String', StringValue: value }]),
  );
  const trace = options?.trace;
  await queue.client.send(
    new SendMessageCommand({
      QueueUrl: queue.queueUrl,
      MessageBody: sqsMessageBody(body),
      ...(attributes.length > 0 ? { MessageAttributes: messageAttributes } : {}),
      ...(trace
        ? { MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: xrayHeaderFor(trace) } } }
        : {}),
      ...(delaySeconds === undefined ? {} : { DelaySeconds: delaySeconds }),
    }),
  );
}

/**
 * The work queue on SQS: kicks carry identity and trace context, never state.
 * @example new SqsWorkQueue({ client: createSqsClient({ region }), queueUrl })
 */
export class SqsWorkQueue implements WorkQueue {
  constructor(private readonly queue: SqsQueueOptions) {}

  async sendKick(kick: Kick, options?: SendOptions): Promise<void> {
    const scheduled = scheduleKick(kick, options, (this.queue.clock ?? systemClock).now());
    await send(this.queue, validateMessage(Kick, scheduled.kick, 'kick'), scheduled.options);
  }
}

/** The results queue on SQS; `baton-result-id` (session/turn) lets consumers drop duplicates. */
export class SqsResultPublisher implements ResultPublisher {
  constructor(private readonly queue: SqsQueueOptions) {}

  async publish(result: Result, options?: PublishOptions): Promise<void> {
    const valid = validateMessage(Result, result, 'result');
    await send(this.queue, valid, options, resultAttributes(valid));
  }
}

/** The tickets queue on SQS, as a producer (CLI, client) sees it. */
export class SqsTicketQueue implements TicketQueue {
  constructor(private readonly queue: SqsQueueOptions) {}

  async submit(ticket: Ticket, options?: SendOptions): Promise<void> {
    await send(this.queue, validateMessage(Ticket, ticket, 'ticket'), options);
  }
}
