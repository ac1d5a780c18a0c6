import { errorMessage, LeaseLostError } from '../../core/errors.ts';
import type { SessionKey } from '../../core/ids.ts';
import type { CancelTimer, Clock } from '../../ports/clock.ts';
import type { SessionRecord } from '../../ports/session-store.ts';
import type { RuntimeDeps, RuntimeLogger } from '../deps.ts';
import { FailpointCrash } from '../failpoints.ts';
import { Heartbeat } from '../heartbeat.ts';
import type { Invocation } from './invocation.ts';

/** Why the leg's work was interrupted. */
export type AbortWhy = 'lease-lost' | 'cancel' | 'budget';

/**
 * Why the leg's work was interrupted, as an error: the reason of every signal the leg aborts, so
 * whatever rejects with the reason (a sleep, a tool, a model client) throws this, never a bare
 * string that a catch site would take for a failure.
 */
export class LegAborted extends Error {
  constructor(readonly why: AbortWhy) {
    super(`leg aborted: ${why}`);
    this.name = 'LegAborted';
  }
}

/**
 * Is `error` the leg being stopped rather than its step failing: an abort (cancel, budget, lease
 * lost), a write that found the lease gone, or a test's simulated crash? None is ever a step's
 * result or a turn's outcome: it goes up to the leg, which goes on (a cancel), hands off (the
 * budget) or stops. The one check every catch site makes, as Temporal's `isCancellation` is. An
 * abort another error wraps is caught by `throwIfAborted` after the catch (see runStep).
 */
export function isInterruption(error: unknown): error is LegAborted | LeaseLostError | FailpointCrash {
  return error instanceof LegAborted || error instanceof LeaseLostError || error instanceof FailpointCrash;
}

/**
 * A leg's signals and timers: the lease heartbeat (and the freshest session record it brought
 * back), the budget timer, and three abort signals — one for the step in flight (cancel, budget,
 * lease loss), one for work a cancel must not cut short (budget, lease loss), and one for lease
 * loss only, which is all that may stop a once-only call. Each aborts with a LegAborted.
 */
export class LegSignals {
  readonly #step = new AbortController();
  readonly #uncancellable = new AbortController();
  readonly #lease = new AbortController();
  readonly #heartbeat: Heartbeat;
  #record: SessionRecord;
  /** When the record in hand was read (as sent): the inbox step reads again once it is too old. */
  #recordReadAt: number;
  #onceOnlyInFlight = 0;
  #cancelBudgetTimer: CancelTimer | undefined;
  readonly #clock: Clock;

  constructor(
    key: SessionKey,
    owner: string,
    record: SessionRecord,
    deps: RuntimeDeps,
    log: RuntimeLogger,
    progressed: () => boolean,
  ) {
    this.#record = record;
    // The acquire returned it just now (its request's time is not worth carrying for a bound
    // that only decides how soon the next step boundary looks again).
    this.#recordReadAt = deps.clock.now();
    this.#clock = deps.clock;
    this.#heartbeat = new Heartbeat(
      {
        ttlMs: deps.config.leaseTtlMs,
        clock: deps.clock,
        renew: (until) => deps.store.renew(key, { owner, epoch: this.epoch, until, progressed: progressed() }),
        onRenewed: (fresh, sentAt) => {
          this.#record = fresh;
          this.#recordReadAt = sentAt;
          if (fresh.cancelRequested && this.#onceOnlyInFlight === 0) this.abort('cancel');
        },
        onLost: (error) => {
          log.warn('lease lost; stopping without another write', { error: errorMessage(error) });
          this.abort('lease-lost');
        },
      },
      record.until ?? deps.clock.now() + deps.config.leaseTtlMs,
    );
  }

  /** The session record as of the acquire or the last renewal. */
  get record(): SessionRecord {
    return this.#record;
  }

  /** When the record in hand was read: the acquire, the last renewal or the last look. */
  get recordReadAt(): number {
    return this.#recordReadAt;
  }

  get epoch(): number {
    return this.#record.epoch;
  }

  /** Lease expiry as of the last good renewal. */
  get leaseUntil(): number {
    return this.#heartbeat.until;
  }

  /** Aborts the step in flight: cancel, budget or lease loss. */
  get stepSignal(): AbortSignal {
    return this.#step.signal;
  }

  /**
   * Aborts on budget or lease loss, never on a cancel: for work the cancel needs finished before
   * the turn can end — a release waiting for its tasks, the reconcile of an interrupted once-only
   * call. Cut short by a cancel, each would start over at the next pass, on a signal already
   * aborted, for ever.
   */
  get uncancellableSignal(): AbortSignal {
    return this.#uncancellable.signal;
  }

  /** Aborts on lease loss only: a once-only call in flight is never stopped by a cancel. */
  get leaseSignal(): AbortSignal {
    return this.#lease.signal;
  }

  /** Starts renewing, and arms the budget: past it the step in flight is abandoned, leaving half the reserve to hand off. */
  start(invocation: Invocation, reserveMs: number): void {
    this.#heartbeat.start();
    this.#cancelBudgetTimer = this.#clock.setTimer(Math.max(0, invocation.remainingMs() - reserveMs / 2), () =>
      this.abort('budget'),
    );
  }

  /** Stops every timer and awaits the renewal in flight. */
  async stop(): Promise<void> {
    this.#cancelBudgetTimer?.();
    await this.#heartbeat.stop();
  }

  /** Takes a record read at a step boundary (its read sent at `readAt`) as the freshest, when it is still this leg's lease. */
  observe(fresh: SessionRecord, readAt: number): void {
    if (fresh.epoch !== this.#record.epoch || fresh.owner !== this.#record.owner) return;
    this.#record = fresh;
    this.#recordReadAt = readAt;
  }

  /** Stops renewing before a hand-off, so no renewal races the release. */
  stopHeartbeat(): Promise<void> {
    return this.#heartbeat.stop();
  }

  /** Goes on after a hand-off that did not happen: the fresher record, and renewals again. */
  resume(record: SessionRecord): void {
    this.#record = record;
    this.#recordReadAt = this.#clock.now();
    this.#heartbeat.start();
  }

  /** Renews now (before a once-only call) and resolves with the fresh record. */
  renewNow(): Promise<SessionRecord> {
    return this.#heartbeat.renewNow();
  }

  /** Runs a once-only call: while it runs, a cancel waits for the next step boundary. */
  async duringOnceOnly<T>(run: () => Promise<T>): Promise<T> {
    this.#onceOnlyInFlight++;
    try {
      return await run();
    } finally {
      this.#onceOnlyInFlight--;
    }
  }

  /** Aborts the signals `why` concerns; a signal aborted already keeps its first reason. */
  abort(why: AbortWhy): void {
    const reason = new LegAborted(why);
    this.#step.abort(reason);
    if (why !== 'cancel') this.#uncancellable.abort(reason);
    if (why === 'lease-lost') this.#lease.abort(reason);
  }

  get aborted(): boolean {
    return this.#step.signal.aborted;
  }

  throwIfLeaseLost(): void {
    this.#lease.signal.throwIfAborted();
  }

  throwIfAborted(): void {
    this.#step.signal.throwIfAborted();
  }
}
