import type { z } from 'zod';
import { Kick, Result, Ticket } from '../../core/messages.ts';
import { type TraceContext, xrayHeaderFor } from '../../core/trace-context.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { ResultPublisher, SendOptions, TicketQueue, WorkQueue } from '../../ports/queues.ts';
import {
  checkMessageSize,
  delaySecondsOf,
  messageAttributesOf,
  resultAttributes,
  scheduleKick,
  validateMessage,
} from '../queue-messages.ts';

/** One message as the in-memory queue holds it: what SQS would carry, plus when it becomes visible. */
export interface SentMessage<T> {
  readonly body: T;
  /** Message attributes, as SQS would deliver them (`traceparent`, `baton-result-id`). */
  readonly attributes: Readonly<Record<string, string>>;
  /** The X-Ray header, as SQS would deliver it in the `AWSTraceHeader` system attribute. */
  readonly awsTraceHeader?: string | undefined;
  readonly trace?: TraceContext | undefined;
  readonly delaySeconds: number;
  readonly sentAt: number;
  readonly visibleAt: number;
}

export interface MemoryQueueOptions {
  /** Decides when a delayed message becomes visible; the system clock by default. */
  readonly clock?: Clock | undefined;
}

/**
 * An in-memory queue: validates like the SQS adapter, keeps every message sent (`sent`) and a
 * pending list that `receive` drains. Delays count against the clock (a ManualClock in tests).
 */
export class MemoryQueue<T> {
  /** Everything ever sent, in order (receiving does not remove from here). */
  readonly sent: SentMessage<T>[] = [];
  #pending: SentMessage<T>[] = [];
  #listeners = new Set<(message: SentMessage<T>) => void>();
  #failures: Error[] = [];
  protected readonly clock: Clock;

  constructor(
    private readonly schema: z.ZodType<T>,
    private readonly what: string,
    options: MemoryQueueOptions = {},
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /** The bodies of everything sent, in order. */
  get bodies(): T[] {
    return this.sent.map((message) => message.body);
  }

  /** How many messages wait to be received (visible or still delayed). */
  get pendingCount(): number {
    return this.#pending.length;
  }

  /** When the earliest waiting message becomes visible; undefined when none waits. */
  get nextVisibleAt(): number | undefined {
    return this.#pending.length === 0 ? undefined : Math.min(...this.#pending.map((message) => message.visibleAt));
  }

  /** Removes and returns the messages visible at `now` (all of them by default), in send order. */
  receive(now = this.clock.now()): SentMessage<T>[] {
    const visible = this.#pending.filter((message) => message.visibleAt <= now);
    this.#pending = this.#pending.filter((message) => message.visibleAt > now);
    return visible;
  }

  /** The last message sent, if any. */
  last(): SentMessage<T> | undefined {
    return this.sent.at(-1);
  }

  /** Forgets everything sent and pending. */
  clear(): void {
    this.sent.length = 0;
    this.#pending = [];
  }

  /** Calls `listener` on every send (e.g. to deliver kicks at once); returns the unsubscribe. */
  onSend(listener: (message: SentMessage<T>) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The next send throws `error` and sends nothing (a throttle, a network error). */
  failNextSend(error: Error = new Error(`injected ${this.what} send failure`)): void {
    this.#failures.push(error);
  }

  protected enqueue(message: unknown, options: SendOptions | undefined, extra?: Record<string, string>): void {
    const body = validateMessage(this.schema, message, this.what);
    const attributes = messageAttributesOf(options, extra);
    checkMessageSize(body, attributes, this.what);
    const delaySeconds = delaySecondsOf(options) ?? 0;
    const failure = this.#failures.shift();
    if (failure) throw failure;
    const sentAt = this.clock.now();
    const trace = options?.trace;
    const sent: SentMessage<T> = {
      body,
      attributes,
      ...(trace ? { trace, awsTraceHeader: xrayHeaderFor(trace) } : {}),
      delaySeconds,
      sentAt,
      visibleAt: sentAt + delaySeconds * 1000,
    };
    this.sent.push(sent);
    this.#pending.push(sent);
    for (const listener of this.#listeners) listener(sent);
  }
}

/** The work queue in memory. */
export class MemoryWorkQueue extends MemoryQueue<Kick> implements WorkQueue {
  constructor(options?: MemoryQueueOptions) {
    super(Kick, 'kick', options);
  }

  async sendKick(kick: Kick, options?: SendOptions): Promise<void> {
    const scheduled = scheduleKick(kick, options, this.clock.now());
    this.enqueue(scheduled.kick, scheduled.options);
  }
}

/** The results queue in memory; each message carries `baton-result-id` as SQS would. */
export class MemoryResultPublisher extends MemoryQueue<Result> implements ResultPublisher {
  constructor(options?: MemoryQueueOptions) {
    super(Result, 'result', options);
  }

  async publish(result: Result, options?: SendOptions): Promise<void> {
    this.enqueue(result, options, resultAttributes(result));
  }
}

/** The tickets queue in memory. */
export class MemoryTicketQueue extends MemoryQueue<Ticket> implements TicketQueue {
  constructor(options?: MemoryQueueOptions) {
    super(Ticket, 'ticket', options);
  }

  async submit(ticket: Ticket, options?: SendOptions): Promise<void> {
    this.enqueue(ticket, options);
  }
}
