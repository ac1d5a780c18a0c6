import type { Kick } from '../core/messages.ts';
import type { SendOptions, WorkQueue } from '../ports/queues.ts';

export interface UnrulyOptions {
  /** Every kick is sent this many times in all (SQS is at-least-once). */
  readonly copies: number;
  /** Each copy gets a random extra delay up to this, so copies and kicks arrive out of order. */
  readonly maxExtraDelaySeconds: number;
  /** In [0, 1). */
  readonly random: () => number;
}

/**
 * A test seam: a work queue that duplicates and shuffles every kick sent through it. The runtime
 * must write the same journal through it as through a well-behaved queue (invariant 8).
 */
export function unrulyWorkQueue(inner: WorkQueue, options: UnrulyOptions): WorkQueue {
  return {
    async sendKick(kick: Kick, send?: SendOptions) {
      for (let copy = 0; copy < options.copies; copy++) {
        const extra = Math.floor(options.random() * (options.maxExtraDelaySeconds + 1));
        await inner.sendKick(kick, { ...send, delaySeconds: Math.min(900, (send?.delaySeconds ?? 0) + extra) });
      }
    },
  };
}
