import type { PendingCall } from '../../core/fold.ts';
import type { KickReason } from '../../core/vocabulary.ts';
import { releaseToWait } from './fenced-release.ts';
import type { KickOutcome, LegContext } from './leg-context.ts';

/**
 * Durable timers. `waitUntil` is the one way a leg waits for a time (a timer, an approval
 * timeout, a retry backoff): it sends a kick due then (the work queue chains it past SQS's
 * 15-minute cap), and releases the lease into `waiting` with `sweepAt` = the time, so the sweeper
 * wakes the session too should the kick be lost. No lease and no compute are held meanwhile; an
 * event (a cancel, a message, a decision) wakes the session earlier, and the leg that handles it
 * decides again from the journal, so the timer itself must be journaled before the wait.
 */
export async function waitUntil(
  leg: LegContext,
  wakeAt: number,
  reason: Extract<KickReason, 'wake' | 'retry'> = 'wake',
): Promise<KickOutcome | undefined> {
  await leg.deps.workQueue.sendKick({ v: 1, session: leg.key, reason }, { trace: leg.trace, notBefore: wakeAt });
  // Due at wakeAt: the delayed kick (rounded up to whole seconds) finds it due, and the sweeper
  // wakes it at the same time should that kick be lost.
  if (!(await releaseToWait(leg, wakeAt))) return undefined;
  leg.log.info('waiting for a time', { wakeAt, reason });
  return 'waiting';
}

/** A durable timer is due: its call's result is what the tool asked for, or when it woke. */
export async function wakeTimer(leg: LegContext, pending: PendingCall): Promise<void> {
  const now = leg.deps.clock.now();
  await leg.journal.append('tool', {
    callId: pending.call.id,
    tool: pending.call.name,
    ok: true,
    output: pending.timer?.output ?? { wokeAt: new Date(now).toISOString() },
  });
  leg.deps.telemetry.metrics.count('TimersWoken');
}
