import type { Clock } from '../../ports/clock.ts';

/**
 * How long a call whose signal aborted may take to settle before the leg stops waiting for it.
 * A tool that ignores its signal must not hold the leg (and, through the heartbeat, the lease)
 * past its handler: nothing a leg started outlives it.
 */
export const ABANDON_GRACE_MS = 1_000;

/**
 * Waits for `work`, unless `signal` aborts and `work` has not settled `ABANDON_GRACE_MS` later:
 * then rejects with the signal's reason (the leg's LegAborted) and leaves `work` behind.
 */
export function untilAbandoned<T>(work: Promise<T>, signal: AbortSignal, clock: Clock): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let cancelGrace: (() => void) | undefined;
    const onAbort = () => {
      cancelGrace = clock.setTimer(ABANDON_GRACE_MS, () => reject(signal.reason));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const settle = () => {
      cancelGrace?.();
      signal.removeEventListener('abort', onAbort);
    };
    work.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}
