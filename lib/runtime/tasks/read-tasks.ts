import type { SessionKey } from '../../core/ids.ts';
import { childKey, type LedgerTask, reportTask, type TaskLine } from '../../core/tasks.ts';
import { childContext } from '../../core/trace-context.ts';
import type { Clock } from '../../ports/clock.ts';
import type { WorkQueue } from '../../ports/queues.ts';
import type { SessionStore } from '../../ports/session-store.ts';

/**
 * Reads what the store holds about each task (its child's record and current turn) and reports
 * it: the same answer on every worker, whoever runs the child. A store error is thrown, never
 * turned into a status.
 */
export async function readTaskLines(
  store: Pick<SessionStore, 'getSession' | 'getTurn'>,
  parent: SessionKey,
  tasks: readonly LedgerTask[],
): Promise<TaskLine[]> {
  return Promise.all(
    tasks.map(async (task) => {
      const key = childKey(parent, task);
      const [record, turn] = await Promise.all([store.getSession(key), store.getTurn(key, task.turnId)]);
      const report = reportTask(task, {
        state: record?.state,
        turnExists: turn !== undefined,
        outcome: turn?.outcome,
      });
      return { ...task, ...report };
    }),
  );
}

/** What cancelling a child needs: the store, the work queue, a clock. */
export interface CancelDeps {
  readonly store: Pick<SessionStore, 'bump'>;
  readonly workQueue: WorkQueue;
  readonly clock: Clock;
}

/**
 * Asks a child to cancel: the flag on its record (seen by its holder at the next renewal, or by
 * the next leg) and a kick. A child already finished, or never created, is left as it is.
 */
export async function cancelChild(deps: CancelDeps, key: SessionKey, traceId: string): Promise<boolean> {
  const now = deps.clock.now();
  const bumped = await deps.store.bump(key, { now, cancel: true, sweepAt: now + 1_000 });
  if (!bumped.ok) return false;
  await deps.workQueue.sendKick({ v: 1, session: key, reason: 'cancel' }, { trace: childContext(traceId) });
  return true;
}
