import type { CancelTimer, Clock } from '../../ports/clock.ts';

interface Sleeper {
  readonly at: number;
  readonly resolve: () => void;
}

/** A fixed, recognisable start time (2023-11-14T22:13:20Z), so logs of a test read clearly. */
export const MANUAL_CLOCK_START_MS = 1_700_000_000_000;

/**
 * A clock that moves only when the test says so. `sleep` resolves, and a timer fires, when
 * `advance` passes its deadline (a sleep rejects when its signal aborts first).
 * @example const clock = new ManualClock(); const slept = clock.sleep(1_000); clock.advance(1_000); await slept;
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(startMs = MANUAL_CLOCK_START_MS) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((sleeper) => sleeper !== entry);
        reject(signal?.reason);
      };
      const entry: Sleeper = {
        at: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.#sleepers.push(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(ms: number, fn: () => void): CancelTimer {
    const entry: Sleeper = { at: this.#now + Math.max(0, ms), resolve: fn };
    this.#sleepers.push(entry);
    return () => {
      this.#sleepers = this.#sleepers.filter((sleeper) => sleeper !== entry);
    };
  }

  /** Moves time forward by `ms` and wakes every sleeper whose deadline has come, earliest first. */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /**
   * Moves time to `timeMs` (never backwards), waking the sleepers and firing the timers that fall
   * due on the way, earliest first, each at its own time (a timer set by one that fires may fall due too).
   */
  set(timeMs: number): void {
    if (timeMs < this.#now) throw new RangeError(`ManualClock cannot go back from ${this.#now} to ${timeMs}`);
    for (;;) {
      const next = this.#sleepers.filter((sleeper) => sleeper.at <= timeMs).sort((a, b) => a.at - b.at)[0];
      if (next === undefined) break;
      this.#sleepers = this.#sleepers.filter((sleeper) => sleeper !== next);
      this.#now = Math.max(this.#now, next.at);
      next.resolve();
    }
    this.#now = timeMs;
  }

  /** Jumps to the earliest pending sleeper's deadline and wakes it; false when nobody sleeps. */
  advanceToNextSleep(): boolean {
    const next = Math.min(...this.#sleepers.map((sleeper) => sleeper.at));
    if (!Number.isFinite(next)) return false;
    this.set(next);
    return true;
  }

  /** How many sleeps and timers are waiting for time to move. */
  get pendingSleeps(): number {
    return this.#sleepers.length;
  }

  /** Lets promise continuations woken by `advance` run (one macrotask turn). */
  async flush(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
