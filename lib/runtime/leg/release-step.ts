import { deriveChildSessionId } from '../../core/ids.ts';
import { childKey, isTaskFinished, TaskTool, taskLedger } from '../../core/tasks.ts';
import { postDepsOf } from '../protocol/post.ts';
import { cancelChild, readTaskLines } from '../tasks/read-tasks.ts';
import type { LegContext } from './leg-context.ts';
import { type LegExit, yieldLeg } from './leg-exit.ts';

/** How often the release looks again at the tasks it cancelled. */
const RELEASE_POLL_MS = 200;
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
 */
export async function releaseStep(leg: LegContext): Promise<LegExit | undefined> {
  const { deps } = leg;
  const mark = leg.signals.record.releaseRequested!;
  const ledger = taskLedger(leg.journal.entries);
  const running = (await readTaskLines(deps.store, leg.key, ledger.tasks)).filter((t) => !isTaskFinished(t.status));
  const cancelled = running.map((t) => t.taskId);
  await Promise.all(running.map((t) => cancelChild(postDepsOf(deps), childKey(leg.key, t))));
  await cancelUnjournaledStarts(leg);
  const deadline = mark.at + mark.timeoutMs;
  let left = running;
  while (left.length > 0 && deps.clock.now() < deadline) {
    if (leg.invocation.remainingMs() < deps.config.reserveMs + RELEASE_BUDGET_MARGIN_MS)
      return yieldLeg('a release waiting for its tasks');
    // A cancel arriving now changes nothing here (every task is being cancelled already): the
    // release goes on, and the cancel is carried out after it.
    await deps.clock.sleep(Math.min(RELEASE_POLL_MS, deadline - deps.clock.now()), leg.signals.uncancellableSignal);
    left = (await readTaskLines(deps.store, leg.key, left)).filter((t) => !isTaskFinished(t.status));
  }
  const stragglers = left.map((t) => t.taskId);
  await leg.journal.append('released', { cancelled, stragglers });
  leg.log.info('session released', { cancelled: cancelled.length, stragglers: stragglers.length });
  return undefined;
}

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
