import { LeaseLostError } from '../../core/errors.ts';
import { ttlSeconds } from '../deps.ts';
import type { LegContext } from './leg-context.ts';

/** How many times the owner reads the queue again when a turn arrived under its endTurn. */
const END_TURN_ATTEMPTS = 5;

/**
 * Ends a conversation turn: the next queued turn becomes active and gets a kick, or the session
 * goes idle holding no lease and no sweep. The store refuses the write when a turn arrived since
 * the queue was read, so a turn sent at this moment is never left behind an idle session.
 */
export async function endConversationTurn(leg: LegContext): Promise<void> {
  const { deps, key } = leg;
  await leg.resources.closeAll();
  await leg.signals.stopHeartbeat();
  for (let attempt = 1; ; attempt++) {
    const record = await deps.store.getSession(key);
    const next = record?.turnQueue[0];
    const now = deps.clock.now();
    const result = await deps.store.endTurn(key, {
      owner: leg.owner,
      epoch: leg.signals.epoch,
      next,
      now,
      sweepAt: now + deps.config.sweepGraceMs,
      progressed: leg.journal.progressed,
      ttlSeconds: ttlSeconds(deps.config, now),
    });
    if (result.ok) {
      if (next !== undefined) {
        await deps.workQueue.sendKick({ v: 1, session: key, reason: 'first', turnId: next }, { trace: leg.trace });
      }
      leg.log.info(next === undefined ? 'conversation idle' : 'next turn queued', { nextTurnId: next });
      return;
    }
    const stillOurs = result.current?.owner === leg.owner && result.current.epoch === leg.signals.epoch;
    if (!stillOurs || attempt >= END_TURN_ATTEMPTS) {
      throw new LeaseLostError(`end of turn by epoch ${leg.signals.epoch} refused`, result.current);
    }
  }
}
