import { MAX_CLOCK_SKEW_MS } from '../core/budget.ts';
import { LeaseLostError } from '../core/errors.ts';
import { renewIntervalMs } from '../core/lease.ts';
import type { CancelTimer, Clock } from '../ports/clock.ts';
import type { SessionRecord } from '../ports/session-store.ts';

/** How soon a renewal that failed on a throttle or a 5xx is tried again. */
const RENEW_RETRY_MS = 250;

export interface HeartbeatOptions {
  readonly ttlMs: number;
  readonly clock: Clock;
  /** One renewal: extends the lease to `until`; throws LeaseLostError when the condition fails. */
  readonly renew: (until: number) => Promise<SessionRecord>;
  /** Every fresh record (it carries cancelRequested, pendingVersion and the inbox), with when its renewal was sent. */
  readonly onRenewed: (record: SessionRecord, sentAt: number) => void;
  /** The lease is gone (a failed condition, or no good renewal for a TTL): stop writing. */
  readonly onLost: (error: Error) => void;
}

/**
 * Renews the lease every TTL/3 while a leg works. Only a failed condition loses the lease;
 * throttles and 5xx are retried until lastGoodRenew + TTL − skew. `stop()` awaits the request in
 * flight, so nothing the leg started outlives it.
 */
export class Heartbeat {
  #cancelTimer: CancelTimer | undefined;
  #inFlight: Promise<void> | undefined;
  #stopped = false;
  #lastGood: number;
  #until: number;

  constructor(
    private readonly options: HeartbeatOptions,
    until: number,
  ) {
    // As if renewed a TTL before the expiry it starts from: an acquire may align the expiry a
    // little off now + TTL (lib/core/lease.ts leaseUntil), and the lease is lost by that expiry.
    this.#lastGood = Math.min(options.clock.now(), until - options.ttlMs);
    this.#until = until;
  }

  /** Lease expiry as of the last good renewal. */
  get until(): number {
    return this.#until;
  }

  /** Starts renewing (again, after a stop). */
  start(): void {
    this.#stopped = false;
    this.#schedule(renewIntervalMs(this.options.ttlMs));
  }

  /** Renews now (before a once-only call) and resolves with the fresh record. */
  async renewNow(): Promise<SessionRecord> {
    await this.#inFlight;
    const sentAt = this.options.clock.now();
    const until = sentAt + this.options.ttlMs;
    const record = await this.options.renew(until);
    // The store may have applied the renewal as soon as it was sent: count from then.
    this.#lastGood = sentAt;
    this.#until = until;
    this.options.onRenewed(record, sentAt);
    return record;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelTimer?.();
    await this.#inFlight;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#cancelTimer = this.options.clock.setTimer(ms, () => {
      this.#inFlight = this.#beat().finally(() => {
        this.#inFlight = undefined;
      });
    });
  }

  async #beat(): Promise<void> {
    const sentAt = this.options.clock.now();
    const until = sentAt + this.options.ttlMs;
    try {
      const record = await this.options.renew(until);
      if (this.#stopped) return;
      this.#lastGood = sentAt;
      this.#until = until;
      this.options.onRenewed(record, sentAt);
      this.#schedule(renewIntervalMs(this.options.ttlMs));
    } catch (error) {
      if (this.#stopped) return;
      if (error instanceof LeaseLostError) return this.options.onLost(error);
      const deadline = this.#lastGood + this.options.ttlMs - MAX_CLOCK_SKEW_MS;
      if (this.options.clock.now() + RENEW_RETRY_MS >= deadline) {
        return this.options.onLost(
          new LeaseLostError(`no successful renewal since ${this.#lastGood}: ${String(error)}`),
        );
      }
      this.#schedule(RENEW_RETRY_MS);
    }
  }
}
