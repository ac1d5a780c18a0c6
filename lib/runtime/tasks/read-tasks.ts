import type { SessionKey } from '../../core/ids.ts';
import { childKey, type LedgerTask, reportTask, type TaskLine } from '../../core/tasks.ts';
import type { SessionStore } from '../../ports/session-store.ts';
import { type PostDeps, post } from '../protocol/post.ts';

/**
 * Reads what the store holds about each task (its child's record and current turn) and reports
 * it: the same answer on every worker, whoever runs the child. A store error is thrown, never
 * turned into a status.
 */
export async function readTaskLines(
  store: Pick<SessionStore, 'getSession' | 'getTurn'>,
  parent: SessionKey,
  tasks: readonly LedgerTask[],
): Promise<(TaskLine & { readonly endedAt?: number | undefined })[]> {
  return Promise.all(
    tasks.map(async (task) => {
      const key = childKey(parent, task);
      const [record, turn] = await Promise.all([store.getSession(key), store.getTurn(key, task.turnId)]);
      const report = reportTask(task, {
        state: record?.state,
        turnExists: turn !== undefined,
        outcome: turn?.outcome,
      });
      // When the task's turn got its outcome: a release tells the tasks it cancelled by it.
      return { ...task, ...report, ...(turn?.outcome ? { endedAt: turn.outcome.at } : {}) };
    }),
  );
}

/**
 * The tasks whose turn item shows an end (an outcome, or no turn at all), read one request each
 * where `readTaskLines` sends two: a cheap look for a wait that many bumps wake. A task whose
 * record ended without its turn's outcome, or vanished, still looks open here; a full read tells.
 */
export async function tasksWithEndedTurns<T extends LedgerTask>(
  store: Pick<SessionStore, 'getTurn'>,
  parent: SessionKey,
  tasks: readonly T[],
): Promise<T[]> {
  const turns = await Promise.all(tasks.map((task) => store.getTurn(childKey(parent, task), task.turnId)));
  return tasks.filter((_, i) => turns[i] === undefined || turns[i]?.outcome !== undefined);
}

/**
 * Asks a child to cancel: the protocol's `post(cancel)` (its holder sees it at the next renewal,
 * or the next leg does). A child already finished, or never created, is left as it is.
 */
export async function cancelChild(deps: PostDeps, key: SessionKey): Promise<boolean> {
  return (await post(deps, key, { kind: 'cancel' })).ok;
}
