import type { SessionKey } from '../core/ids.ts';
import type { CancelTimer, Clock } from '../ports/clock.ts';
import type { LiveTextStore } from '../ports/live-text.ts';
import type { ModelStreamSink } from '../ports/model-client.ts';

/** How partial text is coalesced into writes. Every figure bounds cost, whatever the response's length. */
export interface LiveTextPolicy {
  /** Least gap between two writes at the start of a response. */
  readonly minIntervalMs: number;
  /** The gap doubles after every this many writes, so a long response keeps showing progress within the cap. */
  readonly writesPerDoubling: number;
  /** Writes per response at most (failed ones count). Past it the follower sees the rest with the model entry. */
  readonly maxWrites: number;
  /** A chunk may hold this many characters at most (a DynamoDB item is 400 KB); past it live text stops for the response. */
  readonly maxChunkChars: number;
  /** How long a chunk stays readable; then the table's TTL removes it. */
  readonly ttlMs: number;
}

/**
 * 200 ms gaps for the first 10 writes, then 400 ms, 800 ms … : 60 writes cover about two minutes
 * of streaming, and no response ever costs more than 60 writes.
 */
export const DEFAULT_LIVE_TEXT_POLICY: LiveTextPolicy = {
  minIntervalMs: 200,
  writesPerDoubling: 10,
  maxWrites: 60,
  maxChunkChars: 100_000,
  ttlMs: 15 * 60_000,
};

/** A stream sink that must be closed when the model call ends (whatever the outcome). */
export interface LiveTextWriter extends ModelStreamSink {
  /** Stops writing (pending text is dropped: the journaled entry will carry it) and waits for a write in flight. */
  close(): Promise<void>;
  /** Writes attempted so far. */
  readonly writes: number;
}

export interface LiveTextWriterOptions {
  readonly store: LiveTextStore;
  readonly clock: Clock;
  readonly session: SessionKey;
  /** The seq the model entry will take. */
  readonly seq: number;
  readonly turnId: string;
  readonly policy?: LiveTextPolicy | undefined;
  /** Told after each write (for metrics); a failed write is never the step's failure. */
  readonly onWrite?: ((result: { ok: boolean; chars: number; error?: unknown }) => void) | undefined;
}

/**
 * Coalesces a streaming model's deltas into few chunk writes: the first delta is written at
 * once, later ones at most every gap (growing, see LiveTextPolicy), one write in flight at a
 * time. A failed write keeps its text for the next, under the same index, so a follower reading
 * chunks in order never meets a hole. Nothing here can fail the step.
 */
export function liveTextWriter(options: LiveTextWriterOptions): LiveTextWriter {
  const { store, clock, session, seq, turnId } = options;
  const policy = options.policy ?? DEFAULT_LIVE_TEXT_POLICY;
  let pending = '';
  let index = 0;
  let writes = 0;
  let lastWriteAt = Number.NEGATIVE_INFINITY;
  let inFlight: Promise<void> | undefined;
  let timer: CancelTimer | undefined;
  let stopped = false;

  const report = (result: { ok: boolean; chars: number; error?: unknown }) => {
    try {
      options.onWrite?.(result);
    } catch {
      // A metrics hook's failure is not the step's either.
    }
  };

  const gap = () => policy.minIntervalMs * 2 ** Math.floor(writes / policy.writesPerDoubling);

  const stop = () => {
    stopped = true;
    pending = '';
    timer?.();
    timer = undefined;
  };

  const schedule = () => {
    if (stopped || inFlight || timer || pending === '') return;
    if (writes >= policy.maxWrites) return stop();
    const wait = lastWriteAt + gap() - clock.now();
    if (wait <= 0) write();
    else
      timer = clock.setTimer(wait, () => {
        timer = undefined;
        schedule();
      });
  };

  const write = () => {
    const text = pending;
    pending = '';
    writes++;
    const now = clock.now();
    lastWriteAt = now;
    let put: Promise<void>;
    try {
      put = store.put(session, { seq, turnId, index, text }, now + policy.ttlMs);
    } catch (error) {
      // A store that throws instead of rejecting must not throw into the model's stream either.
      put = Promise.reject(error);
    }
    inFlight = put.then(
      () => {
        index++;
        report({ ok: true, chars: text.length });
      },
      (error: unknown) => {
        if (!stopped) pending = text + pending;
        report({ ok: false, chars: text.length, error });
      },
    );
    void inFlight.finally(() => {
      inFlight = undefined;
      schedule();
    });
  };

  return {
    text(delta) {
      if (stopped || delta === '') return;
      pending += delta;
      if (pending.length > policy.maxChunkChars) return stop();
      schedule();
    },
    async close() {
      stop();
      await inFlight;
    },
    get writes() {
      return writes;
    },
  };
}
