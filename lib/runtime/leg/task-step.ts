import type { AgentDefinition } from '../../agent/define-agent.ts';
import { DEFAULT_TASK_WAIT_TIMEOUT_MS } from '../../agent/define-agent.ts';
import { TaskToolInput } from '../../agent/task-tools.ts';
import { BatonError, errorMessage, isInfrastructureError, StepError } from '../../core/errors.ts';
import type { PendingCall } from '../../core/fold.ts';
import { deriveChildSessionId, hashJson, type SessionKey } from '../../core/ids.ts';
import { describeIssues } from '../../core/messages.ts';
import {
  childKey,
  continueTurnId,
  firstTaskTurnId,
  isTaskFinished,
  type LedgerTask,
  type TaskLine,
  TaskStatus,
  TaskTool,
  taskLedger,
} from '../../core/tasks.ts';
import { childContext } from '../../core/trace-context.ts';
import { itemTtlSeconds, newSessionExpiry, newSessionVersions } from '../deps.ts';
import { postDepsOf } from '../protocol/post.ts';
import { cancelChild, readTaskLines } from '../tasks/read-tasks.ts';
import { acceptTurn } from '../turn-intake.ts';
import type { LegContext } from './leg-context.ts';
import { type LegExit, WAIT_RETRY } from './leg-exit.ts';
import { isInterruption } from './leg-signals.ts';
import { runStep } from './retry.ts';

/**
 * The task tools' step: the built-in calls of a delegating agent, run by the runtime itself on
 * the store (a child session per task). wait_tasks goes last: when nothing it waits for has
 * finished, the session waits holding no lease until a child's outcome or the timeout wakes it.
 */
export async function taskStep(
  leg: LegContext,
  agent: AgentDefinition,
  calls: readonly PendingCall[],
): Promise<LegExit | undefined> {
  const waits = calls.filter((p) => p.call.name === TaskTool.wait);
  const others = calls.filter((p) => p.call.name !== TaskTool.wait);
  if (others.length > 0) {
    const outcome = await runStep(leg, 'tools', agent, () => runTaskCalls(leg, agent, others));
    return outcome === 'waiting' ? WAIT_RETRY : undefined;
  }
  let waitUntil: number | undefined;
  const outcome = await runStep(leg, 'tools', agent, async () => {
    for (const pending of waits) {
      const due = await waitCall(leg, agent, pending);
      if (due !== undefined) waitUntil = Math.min(waitUntil ?? due, due);
    }
  });
  if (outcome === 'waiting') return WAIT_RETRY;
  if (waitUntil === undefined || leg.journal.view.outcome) return undefined;
  return { kind: 'wait-tasks', until: waitUntil };
}

/** True when the pending call is one of the built-in task tools of this agent. */
export const isTaskCall = (agent: AgentDefinition, pending: PendingCall): boolean =>
  agent.delegates !== undefined && (Object.values(TaskTool) as string[]).includes(pending.call.name);

/** Runs the non-waiting task calls one after another and journals each result in call order. */
async function runTaskCalls(leg: LegContext, agent: AgentDefinition, calls: readonly PendingCall[]): Promise<void> {
  for (const pending of calls) {
    const base = { callId: pending.call.id, tool: pending.call.name };
    let result: { ok: true; output: unknown } | { ok: false; error: string };
    try {
      result = { ok: true, output: await runTaskCall(leg, agent, pending) };
    } catch (error) {
      // A refusal the model can act on is the call's result; a store error retries the step.
      if (!(error instanceof TaskRefusal)) throw storeError(pending.call.name, error);
      result = { ok: false, error: error.message };
    }
    await leg.journal.append('tool', { ...base, ...result });
  }
}

/** The model asked for something that cannot be done; it reads why as the call's result. */
class TaskRefusal extends Error {}

/**
 * Anything but a refusal is the store's or the queue's trouble, never a status: a throttle, a 5xx
 * or a lost connection goes up as it is (the leg stops, no retry budget spent), anything else is
 * retried under the retry policy.
 */
function storeError(tool: string, error: unknown): Error {
  if (isInterruption(error) || isInfrastructureError(error)) return error;
  if (error instanceof BatonError && !error.retryable && !(error instanceof StepError)) return error;
  return new StepError(`${tool}: ${errorMessage(error)}`, { retryable: true, cause: error });
}

function parseInput<T extends TaskTool>(name: T, input: unknown) {
  const parsed = TaskToolInput[name].safeParse(input);
  if (!parsed.success) throw new TaskRefusal(`invalid input for ${name}: ${describeIssues(parsed.error)}`);
  return parsed.data as ReturnType<(typeof TaskToolInput)[T]['parse']>;
}

async function runTaskCall(leg: LegContext, agent: AgentDefinition, pending: PendingCall): Promise<unknown> {
  const ledger = taskLedger(leg.journal.entries);
  const name = pending.call.name as TaskTool;
  switch (name) {
    case TaskTool.start:
      return startTask(leg, agent, pending, ledger.released);
    case TaskTool.get: {
      const { taskId } = parseInput(name, pending.call.input);
      const [line] = await readTaskLines(leg.deps.store, leg.key, [findTask(ledger.tasks, taskId)]);
      return describe(line!);
    }
    case TaskTool.list: {
      parseInput(name, pending.call.input);
      const lines = await readTaskLines(leg.deps.store, leg.key, ledger.tasks);
      return lines.length === 0
        ? 'no tasks'
        : lines.map((t) => `${t.taskId} [${t.status}] ${t.agent}: ${t.description}`).join('\n');
    }
    case TaskTool.continue:
      return continueTask(leg, pending, ledger.tasks, ledger.released);
    case TaskTool.clear: {
      const { taskId } = parseInput(name, pending.call.input);
      const [line] = await readTaskLines(leg.deps.store, leg.key, [findTask(ledger.tasks, taskId)]);
      if (!isTaskFinished(line!.status))
        throw new TaskRefusal(`task ${taskId} is still running: cancel it or wait for it first`);
      return { taskId, cleared: true };
    }
    case TaskTool.cancel: {
      const { taskId } = parseInput(name, pending.call.input);
      const task = findTask(ledger.tasks, taskId);
      const [line] = await readTaskLines(leg.deps.store, leg.key, [task]);
      if (isTaskFinished(line!.status)) return { taskId, status: line!.status };
      await cancelChild(postDepsOf(leg.deps), childKey(leg.key, task));
      return { taskId, status: 'cancelling' };
    }
    case TaskTool.wait:
      throw new TaskRefusal(`${name} is handled by the wait step`);
  }
}

function findTask(tasks: readonly LedgerTask[], taskId: string): LedgerTask {
  const task = tasks.find((t) => t.taskId === taskId);
  if (!task)
    throw new TaskRefusal(
      `no task ${taskId} in this session${tasks.length ? ` (tasks: ${tasks.map((t) => t.taskId).join(', ')})` : ''}`,
    );
  return task;
}

const describe = (line: TaskLine) => ({
  taskId: line.taskId,
  status: line.status,
  agent: line.agent,
  description: line.description,
  ...(line.output !== undefined ? { output: line.output } : {}),
  ...(line.error !== undefined ? { error: line.error } : {}),
});

/**
 * Starts a child session for the task, its id derived from (parent, model entry, call id): a
 * re-run of this call (a recovery, a retry) finds the same child and starts nothing new.
 * Refused after a release, and then the derived child is cancelled should an earlier run of this
 * very call have created it before the release was asked for.
 */
async function startTask(
  leg: LegContext,
  agent: AgentDefinition,
  pending: PendingCall,
  released: boolean,
): Promise<unknown> {
  const { deps } = leg;
  const input = parseInput(TaskTool.start, pending.call.input);
  const delegates = agent.delegates ?? [];
  if (!delegates.includes(input.agent))
    throw new TaskRefusal(`unknown agent "${input.agent}": this agent may start ${delegates.join(', ') || 'none'}`);
  const child = deps.agents.get(input.agent);
  if (!child) throw new TaskRefusal(`agent "${input.agent}" is not deployed here`);
  if (child.input) {
    const parsed = child.input.safeParse(input.input);
    if (!parsed.success)
      throw new TaskRefusal(`input does not match agent ${child.name}: ${describeIssues(parsed.error)}`);
  }
  const taskId = deriveChildSessionId(leg.key, pending.modelSeq, pending.call.id);
  const key: SessionKey = { tenant: leg.key.tenant, agent: input.agent, id: taskId };
  const parent = await deps.store.getSession(leg.key);
  if (released || parent?.releaseRequested) {
    await cancelChild(postDepsOf(deps), key);
    throw new TaskRefusal(`session ${leg.key.id} was released: it starts no new tasks`);
  }
  const now = deps.clock.now();
  const turnId = firstTaskTurnId(taskId);
  await deps.store.putTurn(
    key,
    { turnId, ticketId: turnId, input: input.input, inputHash: hashJson(input.input), createdAt: now },
    itemTtlSeconds(deps.config, now),
  );
  const created = await deps.store.createSession({
    key,
    ticketId: turnId,
    activeTurnId: turnId,
    traceId: leg.signals.record.traceId,
    now,
    sweepAt: now + deps.config.sweepGraceMs,
    ...newSessionExpiry(deps.config, now),
    ...newSessionVersions(deps.config, child),
    conversation: true,
    parent: leg.key,
  });
  // Kick even when the child existed: the first run's kick may be what was lost. A holder drops it.
  await deps.workQueue.sendKick(
    { v: 1, session: key, reason: 'first', turnId },
    { trace: childContext(created.record.traceId) },
  );
  leg.log.info('task started', { taskId, agent: input.agent, created: created.created });
  return { taskId, agent: input.agent, description: input.description, turnId, status: TaskStatus.running };
}

/** A follow-up turn on a finished task's child, from whichever worker runs the parent. */
async function continueTask(
  leg: LegContext,
  pending: PendingCall,
  tasks: readonly LedgerTask[],
  released: boolean,
): Promise<unknown> {
  const { deps } = leg;
  const input = parseInput(TaskTool.continue, pending.call.input);
  const task = findTask(tasks, input.taskId);
  const parent = await deps.store.getSession(leg.key);
  if (released || parent?.releaseRequested)
    throw new TaskRefusal(`session ${leg.key.id} was released: it continues no tasks`);
  const turnId = continueTurnId(task.taskId, pending.modelSeq, pending.call.id);
  const [line] = await readTaskLines(deps.store, leg.key, [task]);
  // A re-run of this call finds the task on the turn it queued: converge on it.
  const rerun = (await deps.store.getTurn(childKey(leg.key, task), turnId)) !== undefined;
  if (!rerun) {
    if (line!.status === TaskStatus.running) throw new TaskRefusal(`task ${task.taskId} is still running`);
    if (line!.status !== TaskStatus.completed && line!.status !== TaskStatus.failed)
      throw new TaskRefusal(`task ${task.taskId} is ${line!.status}: it cannot be continued`);
  }
  try {
    await acceptTurn(
      {
        key: childKey(leg.key, task),
        turnId,
        ticketId: turnId,
        input: input.input,
        sweepGraceMs: deps.config.sweepGraceMs,
      },
      deps,
    );
  } catch (error) {
    if (error instanceof BatonError && !error.retryable) throw new TaskRefusal(errorMessage(error));
    throw error;
  }
  return { taskId: task.taskId, turnId, status: TaskStatus.running };
}

/**
 * One wait_tasks call: journals its result when a task it waits for has finished or the time is
 * up, or returns when the session should wake to look again. The time limit runs from the model
 * entry that asked, so every leg (and every worker) computes the same deadline.
 */
async function waitCall(leg: LegContext, agent: AgentDefinition, pending: PendingCall): Promise<number | undefined> {
  const base = { callId: pending.call.id, tool: pending.call.name };
  const ledger = taskLedger(leg.journal.entries);
  let ids: string[];
  try {
    const input = parseInput(TaskTool.wait, pending.call.input);
    ids = input.taskIds ?? [];
    for (const id of ids) findTask(ledger.tasks, id);
  } catch (error) {
    if (!(error instanceof TaskRefusal)) throw error;
    await leg.journal.append('tool', { ...base, ok: false, error: error.message });
    return undefined;
  }
  const waited = ids.length > 0 ? ledger.tasks.filter((t) => ids.includes(t.taskId)) : ledger.tasks;
  let lines: TaskLine[];
  try {
    lines = await readTaskLines(leg.deps.store, leg.key, waited);
  } catch (error) {
    throw storeError(TaskTool.wait, error);
  }
  const finished = lines.filter((l) => isTaskFinished(l.status));
  const running = lines.filter((l) => !isTaskFinished(l.status));
  // Named tasks: the first of them to finish. None named: every task of the session.
  const done = ids.length > 0 ? finished.length > 0 : running.length === 0;
  const asked = leg.journal.entries.find((e) => e.seq === pending.modelSeq)?.at ?? leg.deps.clock.now();
  const deadline = asked + (agent.taskWaitTimeoutMs ?? DEFAULT_TASK_WAIT_TIMEOUT_MS);
  const timedOut = leg.deps.clock.now() >= deadline;
  if (done || running.length === 0 || timedOut) {
    await leg.journal.append('tool', {
      ...base,
      ok: true,
      output: { finished: finished.map(describe), running: running.map((l) => l.taskId), timedOut },
    });
    return undefined;
  }
  return deadline;
}
