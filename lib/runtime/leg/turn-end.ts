import { LeaseLostError } from '../../core/errors.ts';
import type { SessionRecord } from '../../ports/session-store.ts';
import { ttlSeconds } from '../deps.ts';
import type { LegContext } from './leg-context.ts';

/** How many times the owner tries its endTurn again when a turn arrived under it. */
const END_TURN_ATTEMPTS = 5;

/**
 * Ends a conversation turn: the next queued turn becomes active and gets a kick, or the session
 * goes idle holding no lease and no sweep — in the one write that releases the lease. The store
 * refuses the write when a turn arrived since the queue was read, so a turn sent at this moment
 * is never left behind an idle session. The same write records the turn whose result was just
 * published (`publishedTurnId`), so a later leg does not send it again. The first guess at the queue is the record the leg read
 * at its last step boundary; a refusal answers with the record as it is, the next guess.
 */
export async function endConversationTurn(leg: LegContext, publishedTurnId: string): Promise<void> {
  const { deps, key } = leg;
  await leg.resources.closeAll();
  await leg.signals.stopHeartbeat();
  let record: SessionRecord | undefined = leg.signals.record;
  for (let attempt = 1; ; attempt++) {
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
      publishedTurnId,
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
    record = result.current;
  }
}
