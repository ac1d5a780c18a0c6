import type { Kick, Result, Ticket } from '../core/messages.ts';
import type { TraceContext } from '../core/trace-context.ts';

export interface SendOptions {
  /** The session's trace context, sent as `traceparent` (and as the X-Ray header). */
  readonly trace?: TraceContext | undefined;
  /** Up to 900 s (SQS's cap). */
  readonly delaySeconds?: number | undefined;
  /**
   * A kick due at this time (epoch ms), however far ahead: the work queue delays it as far as it
   * can and chains the rest (the kick carries `notBefore`, and the leg that receives it early
   * sends it on again), so callers never deal with SQS's 15-minute cap.
   */
  readonly notBefore?: number | undefined;
}

/** The work queue: kicks that say "make progress on session X". */
export interface WorkQueue {
  sendKick(kick: Kick, options?: SendOptions): Promise<void>;
}

export interface PublishOptions extends SendOptions {
  /**
   * The result's tenant is only what its sender claimed, and the sender may not use that tenant
   * (an outsider's refusal): it goes to the deployment's shared results, never to the tenant's own.
   */
  readonly unattributed?: boolean | undefined;
}

/** The results queue: outcomes, at least once, recognisable by session and turn. */
export interface ResultPublisher {
  publish(result: Result, options?: PublishOptions): Promise<void>;
}

/** The tickets queue, as a producer (CLI, client) sees it. */
export interface TicketQueue {
  submit(ticket: Ticket, options?: SendOptions): Promise<void>;
}
