import type { NewerJournalFormatError } from '../../core/errors.ts';
import { ttlSeconds } from '../deps.ts';
import type { KickOutcome, LegContext } from '../leg/leg-context.ts';

/**
 * How long a session whose journal is newer than this build waits before it is kicked again: one
 * lease TTL (30 s by default), the runtime's measure of "another worker should have it by now".
 * During a rolling deploy the newer workers take over within about this long; an older worker
 * that takes the kick again leaves it again, so the wait repeats until a newer one answers.
 * Tied to the TTL rather than fixed so a stack with short leases (the local stack's tests) does
 * not wait 30 s per unlucky hop.
 */
export const newerFormatDelayMs = (config: { readonly leaseTtlMs: number }) => config.leaseTtlMs;

/**
 * Leaves a session whose journal holds an entry newer than this build reads: nothing is
 * journaled (not even the leg marker), the lease is released with the session queued, and a
 * delayed kick (the sweeper as backstop) brings it to a newer worker. Never a failed turn: the
 * state is not corrupt, only newer than this code.
 */
export async function leaveForNewerWorker(leg: LegContext, error: NewerJournalFormatError): Promise<KickOutcome> {
  leg.deps.telemetry.metrics.count('NewerJournalFormat');
  leg.log.warn('journal written by a newer build: left to a newer worker', {
    seq: error.seq,
    format: error.format,
    understood: error.understood,
  });
  await leg.signals.stopHeartbeat();
  const now = leg.deps.clock.now();
  const retryAt = now + newerFormatDelayMs(leg.deps.config);
  await leg.deps.workQueue.sendKick(
    { v: 1, session: leg.key, reason: 'retry' },
    { trace: leg.trace, notBefore: retryAt },
  );
  const record = leg.signals.record;
  const released = await leg.deps.store.release(leg.key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    state: 'queued',
    // Nothing was handled: what the last owner had seen stays the mark.
    seenVersion: record.seenVersion,
    sweepAt: retryAt,
    progressed: false,
    ttlSeconds: ttlSeconds(leg.deps.config, now),
  });
  if (!released.ok) leg.log.warn('release after a newer journal format refused: the lease moved on');
  return 'delayed';
}
