import { LeaseLostError } from '../../core/errors.ts';
import type { SessionState } from '../../core/vocabulary.ts';
import type { ReleaseResult, SessionRecord } from '../../ports/session-store.ts';
import { ttlSeconds } from '../deps.ts';
import type { LegContext } from '../leg/leg-context.ts';

/**
 * The releases of a leg's lease. Every release that leaves the session not queued (waiting, idle
 * between turns, ended) is fenced on pendingVersion: an event that arrived since the leg last
 * looked refuses it, so a cancel, a release request or a message is never absorbed.
 */

/**
 * Gives the lease back in a state, recording `publishedTurnId` when it follows that turn's
 * published result; a refused release means another owner holds it.
 */
export async function release(
  leg: LegContext,
  state: SessionState,
  sweepAt: number | undefined,
  publishedTurnId?: string,
): Promise<void> {
  await leg.resources.closeAll();
  await leg.signals.stopHeartbeat();
  const result = await leg.deps.store.release(leg.key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    state,
    seenVersion: leg.signals.record.pendingVersion,
    sweepAt,
    progressed: leg.journal.progressed,
    ttlSeconds: ttlSeconds(leg.deps.config, leg.deps.clock.now()),
    tokens: leg.journal.tokensThisLeg,
    ...(publishedTurnId === undefined ? {} : { publishedTurnId }),
  });
  if (!result.ok) throw new LeaseLostError(`release of epoch ${leg.signals.epoch} refused`, result.current);
}

/**
 * Releases into `waiting` only if no event (a cancel, a new input) arrived since the leg last
 * looked: otherwise nothing would wake the session for it. Returns false when one did; the leg
 * then holds its lease still, renews again and goes on to handle the event.
 */
export function releaseToWait(leg: LegContext, sweepAt: number | undefined): Promise<boolean> {
  return releaseUnlessEvent(leg, 'waiting', sweepAt);
}

/**
 * Every release that leaves the session not queued (waiting, idle between turns, ended) is fenced
 * on pendingVersion: it lands only if no event arrived since the leg last looked, and records
 * that version as seen, so a cancel, a release or a message is never absorbed. Refused by an
 * event, it returns false with the lease still held: the leg renews again and handles it.
 */
export async function releaseUnlessEvent(
  leg: LegContext,
  state: SessionState,
  sweepAt: number | undefined,
  publishedTurnId?: string,
): Promise<boolean> {
  return leaveUnlessEvent(leg, (seen) =>
    leg.deps.store.release(leg.key, {
      owner: leg.owner,
      epoch: leg.signals.epoch,
      state,
      expectPendingVersion: seen,
      seenVersion: seen,
      sweepAt,
      progressed: leg.journal.progressed,
      ttlSeconds: ttlSeconds(leg.deps.config, leg.deps.clock.now()),
      tokens: leg.journal.tokensThisLeg,
      ...(publishedTurnId === undefined ? {} : { publishedTurnId }),
    }),
  );
}

/**
 * Runs a releasing write fenced on the pendingVersion the leg last saw (see releaseUnlessEvent):
 * true when it landed; false when an event refused it and the lease is still this leg's, which
 * then goes on with the record the refusal returned and its heartbeat running again.
 */
export async function leaveUnlessEvent(
  leg: LegContext,
  write: (seenVersion: number) => Promise<ReleaseResult>,
): Promise<boolean> {
  await leg.resources.closeAll();
  await leg.signals.stopHeartbeat();
  const seen = leg.signals.record.pendingVersion;
  const result = await write(seen);
  if (result.ok) return true;
  return goOnAfterRefusal(leg, result.current, seen);
}

/**
 * After a fenced write that would have moved the session was refused: a lease that moved stops
 * the leg (LeaseLostError); an event that arrived since `seen` is handled first — the leg goes on
 * with the record the refusal returned and its heartbeat running again (false).
 */
export function goOnAfterRefusal(leg: LegContext, current: SessionRecord | undefined, seen: number): false {
  if (current?.owner !== leg.owner || current.epoch !== leg.signals.epoch)
    throw new LeaseLostError(`release of epoch ${leg.signals.epoch} refused`, current);
  leg.log.info('an event arrived before the release; handling it first', {
    seen,
    pendingVersion: current.pendingVersion,
  });
  leg.signals.resume(current);
  return false;
}
