import * as z from 'zod';
import type { SessionKey } from './ids.ts';
import type { JournalEntry } from './journal.ts';
import type { OutcomeStatus, SessionState } from './vocabulary.ts';
import { TERMINAL_SESSION_STATES } from './vocabulary.ts';

/**
 * Background tasks: child sessions a parent starts through built-in tools. The parent's journal
 * is the ledger (which tasks exist, on which child turn); the child's record and turn outcome in
 * the store are the truth about each one, read by whichever worker asks.
 */

/** The built-in tools of an agent that declares `delegates`. */
export const TaskTool = {
  start: 'start_task',
  wait: 'wait_tasks',
  get: 'get_task',
  list: 'list_tasks',
  continue: 'continue_task',
  clear: 'clear_task',
  cancel: 'cancel_task',
} as const;
export type TaskTool = (typeof TaskTool)[keyof typeof TaskTool];

export const TASK_TOOL_NAMES: ReadonlySet<string> = new Set(Object.values(TaskTool));

/** What a task is, as any worker reports it. `lost` only when it can no longer be recovered. */
export const TaskStatus = {
  running: 'running',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  lost: 'lost',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

/** The error a task left running at the end of a release is recorded with. */
export const RELEASED_STRAGGLER_ERROR = 'cancelled because the session was released';

/** start_task's result, journaled as the tool's output: the ledger reads it back. */
export const StartedTask = z.object({
  taskId: z.string().min(1),
  agent: z.string().min(1),
  description: z.string(),
  turnId: z.string().min(1),
  status: z.string(),
});

/** continue_task's result: the task's new current turn. */
export const ContinuedTask = z.object({ taskId: z.string().min(1), turnId: z.string().min(1), status: z.string() });

/** One task as the parent's journal records it. */
export interface LedgerTask {
  /** The task id, which is the child session's id. */
  readonly taskId: string;
  readonly agent: string;
  readonly description: string;
  /** The child turn the task is on now: outcomes are read for this turn only. */
  readonly turnId: string;
  /** Left running at the end of a release: reported failed, whatever the child writes later. */
  readonly releasedAsStraggler: boolean;
}

/** The parent's tasks, from its journal: started, continued, cleared, and what a release recorded. */
export interface TaskLedger {
  readonly tasks: readonly LedgerTask[];
  /** The session's release was carried out (journaled); new tasks and continues are refused. */
  readonly released: boolean;
}

/** No task started, no release: the ledger before the first entry. */
export const EMPTY_LEDGER: TaskLedger = { tasks: [], released: false };

/**
 * Folds the tool results of the task tools (and release entries) into the ledger, from `from`
 * (the ledger of the entries before these, as a snapshot keeps it) or from the start.
 */
export function taskLedger(entries: readonly JournalEntry[], from: TaskLedger = EMPTY_LEDGER): TaskLedger {
  const tasks = new Map<string, LedgerTask>(from.tasks.map((task) => [task.taskId, task]));
  let released = from.released;
  for (const entry of entries) {
    if (entry.kind === 'released') {
      released = true;
      for (const taskId of entry.data.stragglers) {
        const task = tasks.get(taskId);
        if (task) tasks.set(taskId, { ...task, releasedAsStraggler: true });
      }
      continue;
    }
    if (entry.kind !== 'tool' || !entry.data.ok) continue;
    if (entry.data.tool === TaskTool.start) {
      const started = StartedTask.safeParse(entry.data.output);
      if (started.success) {
        const { taskId, agent, description, turnId } = started.data;
        tasks.set(taskId, { taskId, agent, description, turnId, releasedAsStraggler: false });
      }
    } else if (entry.data.tool === TaskTool.continue) {
      const continued = ContinuedTask.safeParse(entry.data.output);
      const task = continued.success ? tasks.get(continued.data.taskId) : undefined;
      if (task && continued.success) tasks.set(task.taskId, { ...task, turnId: continued.data.turnId });
    } else if (entry.data.tool === TaskTool.clear) {
      const taskId = (entry.data.output as { taskId?: unknown } | undefined)?.taskId;
      if (typeof taskId === 'string') tasks.delete(taskId);
    }
  }
  return { tasks: [...tasks.values()], released };
}

/** The child session's key: same tenant as the parent, the child's agent, the task id. */
export const childKey = (parent: SessionKey, task: Pick<LedgerTask, 'agent' | 'taskId'>): SessionKey => ({
  tenant: parent.tenant,
  agent: task.agent,
  id: task.taskId,
});

/** What the store holds about one task's child: its record's state and its current turn's outcome. */
export interface ChildFacts {
  /** Undefined when the child's record is gone: nothing can recover it. */
  readonly state: SessionState | undefined;
  /** False when the record exists but the task's turn does not. */
  readonly turnExists: boolean;
  readonly outcome?:
    | { readonly status: OutcomeStatus; readonly output?: unknown; readonly error?: string | undefined }
    | undefined;
}

/** A task's status, output and error as reported to the model, the CLI and status. */
export interface TaskReport {
  readonly status: TaskStatus;
  readonly output?: unknown;
  readonly error?: string | undefined;
}

/**
 * The status of a task from the store's facts. A child that is queued, running, waiting, or whose
 * owner died (a lease the next kick recovers) is running: who runs it, or whether anyone does this
 * instant, is not the reader's business. `lost` only when the child's record or turn is gone.
 */
export function reportTask(task: LedgerTask, facts: ChildFacts): TaskReport {
  if (task.releasedAsStraggler) return { status: TaskStatus.failed, error: RELEASED_STRAGGLER_ERROR };
  if (facts.state === undefined || !facts.turnExists)
    return { status: TaskStatus.lost, error: 'the child session no longer exists' };
  const outcome = facts.outcome;
  if (outcome) {
    const status: TaskStatus =
      outcome.status === 'superseded' || outcome.status === 'completed'
        ? TaskStatus.completed
        : outcome.status === 'cancelled'
          ? TaskStatus.cancelled
          : TaskStatus.failed;
    return {
      status,
      ...(outcome.output !== undefined ? { output: outcome.output } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    };
  }
  // A terminal record without this turn's outcome: the session ended before the turn could.
  if (TERMINAL_SESSION_STATES.includes(facts.state))
    return facts.state === 'cancelled'
      ? { status: TaskStatus.cancelled, error: 'cancelled before it finished' }
      : { status: TaskStatus.failed, error: `the child session ended ${facts.state} without an outcome` };
  return { status: TaskStatus.running };
}

export const isTaskFinished = (status: TaskStatus): boolean => status !== TaskStatus.running;

/** A task with its report, one line of the status block or `baton tasks`. */
export interface TaskLine extends LedgerTask, TaskReport {}

/** The block placed before each model call: one line per task (id, status, agent, description). */
export function formatTaskBlock(lines: readonly TaskLine[]): string {
  const rows = lines.map((t) => `- ${t.taskId} [${t.status}] ${t.agent}: ${t.description}`);
  return `Background tasks of this session (read just now):\n${rows.join('\n')}`;
}

/** Counts of tasks by status, for `baton status` of a parent. */
export function countByStatus(lines: readonly Pick<TaskLine, 'status'>[]): Partial<Record<TaskStatus, number>> {
  const counts: Partial<Record<TaskStatus, number>> = {};
  for (const line of lines) counts[line.status] = (counts[line.status] ?? 0) + 1;
  return counts;
}

/**
 * The id of a task's first turn. It doubles as the result message's ticket id, so it names the
 * child session to be unique on the results queue.
 */
export const firstTaskTurnId = (taskId: string): string => `task-${taskId}`;

/** The id of a continued task's turn: derived from the call that continued it, so a re-run converges. */
export const continueTurnId = (taskId: string, modelSeq: number, callId: string): string =>
  `task-${taskId}-c${modelSeq}-${callId.slice(0, 64)}`;
