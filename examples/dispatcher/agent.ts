import {
  type ChatMessage,
  defineAgent,
  type ScriptReply,
  scriptedModel,
  TaskTool,
  type ToolCall,
  toolResults,
} from '@baton-run/baton';
import * as z from 'zod';

/** One piece of work to hand to another agent. */
export const DispatchTask = z.object({
  agent: z.string().min(1),
  input: z.unknown(),
  description: z.string().min(1).max(500),
});

/**
 * A dispatcher turn: start every task and wait for all of them, or continue one finished task
 * (by the id an earlier turn's answer named) and wait for it.
 */
export const DispatchInput = z.union([
  z.object({ tasks: z.array(DispatchTask).min(1).max(100) }).strict(),
  z.object({ continue: z.object({ taskId: z.string().min(1), input: z.unknown() }).strict() }).strict(),
]);
export type DispatchInput = z.infer<typeof DispatchInput>;

/** What a task ended as, in the dispatcher's answer. */
export const DispatchResult = z.object({
  taskId: z.string(),
  status: z.string(),
  output: z.unknown().optional(),
  error: z.string().optional(),
});

/** The answer: each description mapped to its task's status and output. */
export const DispatchAnswer = z.record(z.string(), DispatchResult);

export const DISPATCHER_DELEGATES = ['long-haul', 'order-investigator', 'support-desk'] as const;

/** The current turn: its number and its input (turn inputs are journaled as their JSON). */
function currentTurn(messages: readonly ChatMessage[]): { n: number; input: DispatchInput | undefined } {
  let n = 0;
  let input: DispatchInput | undefined;
  for (const message of messages) {
    if (message.role !== 'user') continue;
    for (const content of message.content) {
      if (content.type !== 'text') continue;
      const parsed = parseInput(content.text);
      if (parsed !== undefined) {
        n++;
        input = parsed;
      }
    }
  }
  return { n, input };
}

function parseInput(text: string): DispatchInput | undefined {
  try {
    const parsed = DispatchInput.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

interface Finished {
  readonly taskId: string;
  readonly status: string;
  readonly output?: unknown;
  readonly error?: string | undefined;
}

/**
 * The dispatcher's script, deterministic from the transcript: start every task in one response,
 * then wait_tasks on the ones still running until none is, then answer.
 */
export function dispatchScript(messages: readonly ChatMessage[]): ScriptReply {
  const { n, input } = currentTurn(messages);
  if (!input) return { final: '{}' };
  const results = toolResults(messages);
  const id = (name: string) => `t${n}-${name}`;
  // Which task each description went to, and how each start or continue went.
  const started: { description: string; taskId?: string | undefined; error?: string | undefined }[] = [];
  const calls: ToolCall[] = [];
  if ('tasks' in input) {
    input.tasks.forEach((task, i) => {
      const result = results.get(id(`start-${i}`));
      if (!result) {
        calls.push({ id: id(`start-${i}`), name: TaskTool.start, input: task });
        return;
      }
      const output = result.output as { taskId?: string; error?: string };
      started.push({
        description: task.description,
        taskId: output.taskId,
        error: result.ok ? undefined : output.error,
      });
    });
  } else {
    const result = results.get(id('continue'));
    if (!result)
      calls.push({
        id: id('continue'),
        name: TaskTool.continue,
        input: { taskId: input.continue.taskId, input: input.continue.input },
      });
    else
      started.push({
        description: input.continue.taskId,
        taskId: input.continue.taskId,
        error: result.ok ? undefined : (result.output as { error?: string }).error,
      });
  }
  if (calls.length > 0) return { toolCalls: calls };

  // Every wait of this turn so far: what has finished.
  const finished = new Map<string, Finished>();
  for (let w = 1; ; w++) {
    const wait = results.get(id(`wait-${w}`));
    if (!wait) {
      const running = started.flatMap((s) => (s.taskId && !finished.has(s.taskId) ? [s.taskId] : []));
      if (running.length > 0)
        return { toolCalls: [{ id: id(`wait-${w}`), name: TaskTool.wait, input: { taskIds: running } }] };
      break;
    }
    for (const f of (wait.output as { finished?: Finished[] }).finished ?? []) finished.set(f.taskId, f);
  }
  const answer: Record<string, z.infer<typeof DispatchResult>> = {};
  for (const s of started) {
    const f = s.taskId ? finished.get(s.taskId) : undefined;
    answer[s.description] = {
      taskId: s.taskId ?? '',
      status: f?.status ?? 'failed',
      ...(f?.output !== undefined ? { output: f.output } : {}),
      ...(f?.error !== undefined ? { error: f.error } : s.error ? { error: s.error } : {}),
    };
  }
  return { final: JSON.stringify(answer) };
}

/** The dispatcher: hands tasks to other agents in the background and reports on all of them. */
export function dispatcher(options: { delegates?: readonly string[]; taskWaitTimeoutMs?: number; name?: string } = {}) {
  return defineAgent({
    name: options.name ?? 'dispatcher',
    instructions:
      'You dispatch work: start a background task for every piece of work you are given, wait for all of them, and report each one’s status and output.',
    conversation: true,
    input: DispatchInput,
    output: DispatchAnswer,
    delegates: options.delegates ?? DISPATCHER_DELEGATES,
    taskWaitTimeoutMs: options.taskWaitTimeoutMs ?? 120_000,
    model: scriptedModel({ id: 'scripted-dispatcher', maxDurationMs: 2_000, script: dispatchScript }),
  });
}
