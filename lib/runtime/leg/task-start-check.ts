import { RELEASED_STRAGGLER_ERROR } from '../../core/tasks.ts';
import type { LegContext } from './leg-context.ts';
import type { LegExit } from './leg-exit.ts';
import { startTurn } from './turn-step.ts';

/**
 * A task's first leg looks at its parent before the task's first turn starts: a parent that was
 * released, cancelled or is gone wants no new work, so the task ends cancelled without a step.
 * This closes the race of a release with a start: whichever lands first, no child runs on.
 */
export async function refuseOrphanTask(leg: LegContext): Promise<LegExit | undefined> {
  const record = leg.signals.record;
  if (record.parent === undefined || leg.journal.view.turnId !== undefined) return undefined;
  const parent = await leg.deps.store.getSession(record.parent);
  const why =
    parent === undefined
      ? 'cancelled because its parent session no longer exists'
      : parent.releaseRequested !== undefined
        ? RELEASED_STRAGGLER_ERROR
        : parent.cancelRequested
          ? 'cancelled because its parent session was cancelled'
          : undefined;
  if (why === undefined) return undefined;
  leg.log.info('task refused before its first step', { parent: parent?.key.id, why });
  const left = await startTurn(leg);
  if (left) return left;
  return { kind: 'finish', status: 'cancelled', error: why };
}
