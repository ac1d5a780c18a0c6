import { deriveChildSessionId } from '../../core/ids.ts';
import { childKey, isTaskFinished, type TaskLine, TaskStatus, TaskTool, taskLedger } from '../../core/tasks.ts';
import { postDepsOf } from '../protocol/post.ts';
import { cancelChild, readTaskLines, tasksWithEndedTurns } from '../tasks/read-tasks.ts';
import type { LegContext } from './leg-context.ts';
import { type LegExit, yieldLeg } from './leg-exit.ts';

/** How often the release looks again at its own record for a child's outcome. */
const RELEASE_POLL_MS = 100;
/**
 * How often it reads every task it waits for in full (record and turn) even without a bump: a
 * child's outcome bumps this session (notifyParent), but a child that died between its outcome
 * and that bump does not, and a bump's look reads only the turns.
 */
const RELEASE_FULL_LOOK_MS = 1_000;
/** What a leg keeps of its budget beyond the reserve before it hands the release to a continuation. */
const RELEASE_BUDGET_MARGIN_MS = 1_000;

/** Does the session's record ask for a release its journal has not carried out yet? */
export function releasePending(leg: LegContext): boolean {
  return leg.signals.record.releaseRequested !== undefined && !taskLedger(leg.journal.entries).released;
}

/**
 * Carries out a release as the session's lease holder (the one writer): cancels every running
 * task wherever it runs, waits for them up to the release's bound, and journals which were
 * cancelled and which were still running (stragglers, reported failed from then on). Finished
 * tasks keep their results. A leg short of budget hands the rest to a continuation.
 *
 * Its requests are what bound it under load (docs/PERFORMANCE.md, fan-out): the wait reads this
 * session's record — which every child's outcome bumps — rather than every task, and reads the
 * tasks only when it moved (and each RELEASE_FULL_LOOK_MS regardless). On a bump it reads the
 * waiting tasks' turns (one batch request), and in full only the tasks whose turn ended: while
 * 100 children finish, their bumps come every poll.
 */
export async function releaseStep(leg: LegContext): Promise<LegExit | undefined> {
  const { deps } = leg;
  const mark = leg.signals.record.releaseRequested!;
  const ledger = taskLedger(leg.journal.entries);
  // Cancels first, after one batch read of the tasks' turns (a finished task keeps its result):
  // every request before a child's cancel is posted delays the release by its renewal.
  const ended = new Set((await tasksWithEndedTurns(deps.store, leg.key, ledger.tasks)).map((t) => t.taskId));
  await Promise.all([
    ...ledger.tasks.filter((t) => !ended.has(t.taskId)).map((t) => cancelChild(postDepsOf(deps), childKey(leg.key, t))),
    cancelUnjournaledStarts(leg),
  ]);
  let lines = await readTaskLines(deps.store, leg.key, ledger.tasks);
  let left = lines.filter((t) => !isTaskFinished(t.status));
  const deadline = mark.at + mark.timeoutMs;
  const byRelease = (t: TaskLine) => releaseCancelled(t, mark.at);
  let seenVersion = leg.signals.record.pendingVersion;
  let lookedAt = deps.clock.now();
  /** Whether `left` is as of a full read (not only the turns a bump's look read). */
  let fullyRead = true;
  const look = async (full: boolean) => {
    // Only tasks a full read reports finished leave the wait: their lines are as before.
    const ended = full ? left : await tasksWithEndedTurns(deps.store, leg.key, left);
    const fresh = ended.length === 0 ? [] : await readTaskLines(deps.store, leg.key, ended);
    lines = lines.map((t) => fresh.find((f) => f.taskId === t.taskId) ?? t);
    const finished = new Set(fresh.filter((t) => isTaskFinished(t.status)).map((t) => t.taskId));
    left = left.filter((t) => !finished.has(t.taskId));
    fullyRead = full;
  };
  while (left.length > 0 && deps.clock.now() < deadline) {
    if (leg.invocation.remainingMs() < deps.config.reserveMs + RELEASE_BUDGET_MARGIN_MS)
      return yieldLeg('a release waiting for its tasks');
    // A cancel arriving now changes nothing here (every task is being cancelled already): the
    // release goes on, and the cancel is carried out after it.
    await deps.clock.sleep(Math.min(RELEASE_POLL_MS, deadline - deps.clock.now()), leg.signals.uncancellableSignal);
    const version = (await deps.store.getSession(leg.key))?.pendingVersion ?? seenVersion;
    const full = deps.clock.now() - lookedAt >= RELEASE_FULL_LOOK_MS;
    if (version === seenVersion && !full) continue;
    seenVersion = version;
    if (full) lookedAt = deps.clock.now();
    await look(full);
  }
  // No task is counted a straggler on a look that read only turns.
  if (left.length > 0 && !fullyRead) await look(true);
  const stragglers = left.map((t) => t.taskId);
  // Cancelled by this release: still running, or ended cancelled since it was asked for — also
  // under an earlier leg of it, which a continuation cannot tell from the running tasks it finds.
  const cancelled = lines.filter((t) => !isTaskFinished(t.status) || byRelease(t)).map((t) => t.taskId);
  await leg.journal.append('released', { cancelled, stragglers });
  leg.log.info('session released', { cancelled: cancelled.length, stragglers: stragglers.length });
  return undefined;
}

/** Did the task end cancelled at or after the release was asked for (or with no outcome on its turn)? */
const releaseCancelled = (task: TaskLine & { readonly endedAt?: number | undefined }, askedAt: number): boolean =>
  task.status === TaskStatus.cancelled && (task.endedAt === undefined || task.endedAt >= askedAt);

/** Cancels the running tasks of a session whose turn is being cancelled: the cancel cascades. */
export async function cancelTasks(leg: LegContext): Promise<void> {
  const ledger = taskLedger(leg.journal.entries);
  if (ledger.tasks.length === 0 && !leg.journal.view.pendingCalls.some((p) => p.call.name === TaskTool.start)) return;
  const running = (await readTaskLines(leg.deps.store, leg.key, ledger.tasks)).filter((t) => !isTaskFinished(t.status));
  await Promise.all(running.map((t) => cancelChild(postDepsOf(leg.deps), childKey(leg.key, t))));
  await cancelUnjournaledStarts(leg);
}

/**
 * A start_task whose result is not journaled may have created its child before the leg died.
 * Its id is derived from the call, so it can be cancelled without being known.
 */
async function cancelUnjournaledStarts(leg: LegContext): Promise<void> {
  const starts = leg.journal.view.pendingCalls.filter((p) => p.call.name === TaskTool.start);
  await Promise.all(
    starts.map((p) => {
      const agent = (p.call.input as { agent?: unknown } | null)?.agent;
      if (typeof agent !== 'string' || !leg.deps.agents.has(agent)) return undefined;
      const id = deriveChildSessionId(leg.key, p.modelSeq, p.call.id);
      return cancelChild(postDepsOf(leg.deps), { tenant: leg.key.tenant, agent, id });
    }),
  );
}
