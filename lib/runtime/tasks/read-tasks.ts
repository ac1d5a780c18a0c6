import type { SessionKey } from '../../core/ids.ts';
import { childKey, type LedgerTask, reportTask, type TaskLine } from '../../core/tasks.ts';
import type { SessionStore } from '../../ports/session-store.ts';
import { type PostDeps, post } from '../protocol/post.ts';

/**
 * Reads what the store holds about each task (its child's record and current turn) and reports
 * it: the same answer on every worker, whoever runs the child. Two batch reads, whatever the
 * number of tasks (up to 100 each per request). A store error is thrown, never turned into a status.
 */
export async function readTaskLines(
  store: Pick<SessionStore, 'getSessions' | 'getTurns'>,
  parent: SessionKey,
  tasks: readonly LedgerTask[],
): Promise<(TaskLine & { readonly endedAt?: number | undefined })[]> {
  if (tasks.length === 0) return [];
  const keys = tasks.map((task) => childKey(parent, task));
  const [records, turns] = await Promise.all([
    store.getSessions(keys),
    store.getTurns(tasks.map((task, i) => ({ key: keys[i]!, turnId: task.turnId }))),
  ]);
  return tasks.map((task, i) => {
    const [record, turn] = [records[i], turns[i]];
    const report = reportTask(task, { state: record?.state, turnExists: turn !== undefined, outcome: turn?.outcome });
    // When the task's turn got its outcome: a release tells the tasks it cancelled by it.
    return { ...task, ...report, ...(turn?.outcome ? { endedAt: turn.outcome.at } : {}) };
  });
}

/**
 * The tasks whose turn item shows an end (an outcome, or no turn at all), in one batch read of
 * their turns where `readTaskLines` reads records too: a cheap look for a wait that many bumps wake. A task whose
 * record ended without its turn's outcome, or vanished, still looks open here; a full read tells.
 */
export async function tasksWithEndedTurns<T extends LedgerTask>(
  store: Pick<SessionStore, 'getTurns'>,
  parent: SessionKey,
  tasks: readonly T[],
): Promise<T[]> {
  if (tasks.length === 0) return [];
  const turns = await store.getTurns(tasks.map((task) => ({ key: childKey(parent, task), turnId: task.turnId })));
  return tasks.filter((_, i) => turns[i] === undefined || turns[i]?.outcome !== undefined);
}

/**
 * Asks a child to cancel: the protocol's `post(cancel)` (its holder sees it at the next renewal,
 * or the next leg does). A child already finished, or never created, is left as it is.
 */
export async function cancelChild(deps: PostDeps, key: SessionKey): Promise<boolean> {
  return (await post(deps, key, { kind: 'cancel' })).ok;
}
