import { alignSweepAt } from '../../core/lease.ts';
import { ttlSeconds } from '../deps.ts';
import type { LegContext } from '../leg/leg-context.ts';
import { fitsInBudget } from '../leg/leg-exit.ts';
import { goOnAfterRefusal, leaveUnlessEvent } from './release.ts';

/** How a conversation turn ended: the leg left the session, or went on to the next turn itself. */
export type TurnEnd = 'left' | 'advanced';

/**
 * Ends a conversation turn. With a turn queued behind it and the budget for that turn's first
 * step, the leg goes straight on to it under the lease it holds (`advanceTurn`): one leg per turn,
 * no kick, no second acquire — the common case of a chat client that sends its next message on
 * the result. Otherwise the next queued turn becomes active and gets a kick, or the session goes
 * idle holding no lease and no sweep — in the one write that releases the lease (`endTurn`).
 * Either write records the turn whose result was just published (`publishedTurnId`), so a later
 * leg does not send it again, and is fenced on pendingVersion: a turn, a cancel or a release that
 * arrived since the leg last looked refuses it (false), and the leg handles that first — a turn
 * sent at this moment is never left behind an idle session, a cancel never absorbed by it.
 */
export async function endConversationTurn(leg: LegContext, publishedTurnId: string): Promise<TurnEnd | false> {
  const next = leg.signals.record.turnQueue[0];
  const model = leg.agent?.model;
  if (next !== undefined && model !== undefined && fitsInBudget(leg, model.maxDurationMs)) {
    return (await advanceTurn(leg, next, publishedTurnId)) && 'advanced';
  }
  return (await endTurn(leg, next, publishedTurnId)) && 'left';
}

/** Releases the lease at the end of a turn: the next turn queued with a kick, or the session idle. */
async function endTurn(leg: LegContext, next: string | undefined, publishedTurnId: string): Promise<boolean> {
  const { deps, key } = leg;
  const ended = await leaveUnlessEvent(leg, (seen) => {
    const now = deps.clock.now();
    return deps.store.endTurn(key, {
      owner: leg.owner,
      epoch: leg.signals.epoch,
      next,
      expectPendingVersion: seen,
      now,
      // The lease's expiry when it is about a grace ahead: the next turn's backstop without moving the sweep index.
      sweepAt: alignSweepAt(leg.signals.leaseUntil, now + deps.config.sweepGraceMs, deps.config.leaseTtlMs),
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

/**
 * Makes the next queued turn active under this leg's lease, extended by a TTL. The heartbeat is
 * stopped around the write, as for a release, so no renewal's older record replaces the one the
 * write returns; refused by an event, the leg goes on with the refusal's record (false), exactly
 * as after a refused endTurn. The leg's connections stay open: the next turn is the same leg's.
 */
async function advanceTurn(leg: LegContext, next: string, publishedTurnId: string): Promise<boolean> {
  const { deps, key } = leg;
  await leg.signals.stopHeartbeat();
  const seen = leg.signals.record.pendingVersion;
  const now = deps.clock.now();
  const result = await deps.store.advanceTurn(key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    next,
    expectPendingVersion: seen,
    now,
    until: now + deps.config.leaseTtlMs,
    progressed: leg.journal.progressed,
    ttlSeconds: ttlSeconds(deps.config, now),
    publishedTurnId,
  });
  if (!result.ok) return goOnAfterRefusal(leg, result.current, seen);
  leg.signals.resume(result.record);
  leg.log.info('went on to the next queued turn', { nextTurnId: next });
  return true;
}
