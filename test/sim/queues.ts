import type { z } from 'zod';
import {
  checkMessageSize,
  delaySecondsOf,
  messageAttributesOf,
  resultIdOf,
  validateMessage,
} from '../../lib/adapters/queue-messages.ts';
import { Kick, Result, Ticket } from '../../lib/core/messages.ts';
import type { TraceContext } from '../../lib/core/trace-context.ts';
import type { ResultPublisher, SendOptions, TicketQueue, WorkQueue } from '../../lib/ports/queues.ts';
import type { SimClock } from './clock.ts';
import { throttleError } from './faults.ts';
import type { Rng } from './rng.ts';
import type { Scheduler } from './scheduler.ts';

/** One message waiting in a simulated SQS queue. */
export interface Message<T> {
  readonly id: number;
  readonly body: T;
  readonly trace: TraceContext | undefined;
  /** When it was sent (SQS's `SentTimestamp`): every delivery of it, duplicates included, keeps it. */
  readonly sentAt: number;
  visibleAt: number;
  /** Deliveries so far; past the queue's maxReceiveCount it goes to the dead-letter queue. */
  receives: number;
}

/** SQS's redelivery of a message whose consumer failed or died: after the visibility timeout. */
export const VISIBILITY_TIMEOUT_MS = 60_000;
/** Baton's queues move a message to their DLQ after this many receives (lib/core/resources.ts). */
export const MAX_RECEIVES = 5;

/**
 * A queue of the simulated world: sends wait at a gate and may be refused (throttled), lost,
 * duplicated or delayed as the seed says; the scheduler delivers any visible message in any
 * order (SQS's standard queues promise none), and a message whose consumer failed comes back after
 * the visibility timeout, until its receives run out.
 */
export class SimQueue<T> {
  readonly #pending: Message<T>[] = [];
  readonly deadLetters: Message<T>[] = [];
  sent = 0;
  #ids = 0;

  constructor(
    private readonly what: string,
    private readonly schema: z.ZodType<T>,
    private readonly sim: Scheduler,
    private readonly clock: SimClock,
    private readonly rng: Rng,
  ) {}

  async send(message: unknown, options: SendOptions | undefined, label: string): Promise<void> {
    const fault = await this.sim.gate(`${this.what}.send(${label})`, 'send');
    const body = validateMessage(this.schema, message, this.what);
    checkMessageSize(body, messageAttributesOf(options), this.what);
    const delayMs = (delaySecondsOf(options) ?? 0) * 1000;
    if (fault === 'throttle') throw throttleError();
    this.sent++;
    if (fault === 'drop') return;
    const copies = fault === 'duplicate' ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const extra = fault === 'delay' || i > 0 ? this.rng.int(0, 5_000) : 0;
      this.#pending.push({
        id: ++this.#ids,
        body,
        trace: options?.trace,
        sentAt: this.clock.now(),
        visibleAt: this.clock.now() + delayMs + extra,
        receives: 0,
      });
    }
  }

  /** Messages a consumer could receive now. */
  visible(now: number): Message<T>[] {
    return this.#pending.filter((m) => m.visibleAt <= now);
  }

  get pending(): readonly Message<T>[] {
    return this.#pending;
  }

  /** When the next message that is not visible yet becomes visible. */
  nextVisibleAt(now: number): number | undefined {
    let at: number | undefined;
    for (const m of this.#pending) if (m.visibleAt > now && (at === undefined || m.visibleAt < at)) at = m.visibleAt;
    return at;
  }

  /** Takes a message for a consumer (it stays in flight until deleted or returned). */
  receive(message: Message<T>): void {
    this.#pending.splice(this.#pending.indexOf(message), 1);
    message.receives++;
  }

  /** The consumer failed or died: the message comes back after the visibility timeout, or goes to the DLQ. */
  returnLater(message: Message<T>): void {
    if (message.receives >= MAX_RECEIVES) {
      this.deadLetters.push(message);
      return;
    }
    message.visibleAt = this.clock.now() + VISIBILITY_TIMEOUT_MS;
    this.#pending.push(message);
  }
}

export class SimWorkQueue implements WorkQueue {
  readonly queue: SimQueue<Kick>;
  constructor(sim: Scheduler, clock: SimClock, rng: Rng) {
    this.queue = new SimQueue('work', Kick, sim, clock, rng);
  }

  sendKick(kick: Kick, options?: SendOptions): Promise<void> {
    return this.queue.send(kick, options, `${kick.reason} ${kick.session.id.slice(0, 6)}`);
  }
}

export class SimTicketQueue implements TicketQueue {
  readonly queue: SimQueue<Ticket>;
  constructor(sim: Scheduler, clock: SimClock, rng: Rng) {
    this.queue = new SimQueue('tickets', Ticket, sim, clock, rng);
  }

  submit(ticket: Ticket, options?: SendOptions): Promise<void> {
    return this.queue.send(ticket, options, ticket.ticketId);
  }
}

/** One result message as a consumer would read it, with the id it dedupes on. */
export interface PublishedResult {
  readonly id: string;
  readonly result: Result;
  readonly at: number;
}

/** The results queue: every message published, duplicates included (delivery is at least once). */
export class SimResults implements ResultPublisher {
  readonly published: PublishedResult[] = [];

  constructor(
    private readonly sim: Scheduler,
    private readonly clock: SimClock,
  ) {}

  async publish(result: Result, options?: SendOptions): Promise<void> {
    const fault = await this.sim.gate(
      `results.publish(${result.sessionId.slice(0, 6)} ${result.turnId} ${result.status})`,
      'publish',
    );
    const body = validateMessage(Result, result, 'result');
    checkMessageSize(body, messageAttributesOf(options), 'result');
    if (fault === 'throttle') throw throttleError();
    this.published.push({ id: resultIdOf(body), result: body, at: this.clock.now() });
  }
}
