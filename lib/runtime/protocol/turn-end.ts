import { ttlSeconds } from '../deps.ts';
import type { LegContext } from '../leg/leg-context.ts';
import { leaveUnlessEvent } from './release.ts';

/**
 * Ends a conversation turn: the next queued turn becomes active and gets a kick, or the session
 * goes idle holding no lease and no sweep — in the one write that releases the lease, which also
 * records the turn whose result was just published (`publishedTurnId`), so a later leg does not
 * send it again. The write is fenced on pendingVersion: a turn, a cancel or a release that
 * arrived since the leg last looked refuses it (false), and the leg handles that first — a turn
 * sent at this moment is never left behind an idle session, a cancel never absorbed by it.
 */
export async function endConversationTurn(leg: LegContext, publishedTurnId: string): Promise<boolean> {
  const { deps, key } = leg;
  const next = leg.signals.record.turnQueue[0];
  const ended = await leaveUnlessEvent(leg, (seen) => {
    const now = deps.clock.now();
    return deps.store.endTurn(key, {
      owner: leg.owner,
      epoch: leg.signals.epoch,
      next,
      expectPendingVersion: seen,
      now,
      sweepAt: now + deps.config.sweepGraceMs,
      progressed: leg.journal.progressed,
      ttlSeconds: ttlSeconds(deps.config, now),
      publishedTurnId,
    });
  });
  if (!ended) return false;
  if (next !== undefined) {
    await deps.workQueue.sendKick({ v: 1, session: key, reason: 'first', turnId: next }, { trace: leg.trace });
  }
  leg.log.info(next === undefined ? 'conversation idle' : 'next turn queued', { nextTurnId: next });
  return true;
}
