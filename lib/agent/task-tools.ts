import * as z from 'zod';
import { TaskTool } from '../core/tasks.ts';
import type { ToolSpec } from '../ports/model-client.ts';

/** The inputs of the built-in task tools, as the model must send them. */
export const TaskToolInput = {
  [TaskTool.start]: z
    .object({
      agent: z.string().min(1),
      input: z.unknown(),
      description: z.string().min(1).max(500),
    })
    .strict(),
  [TaskTool.wait]: z.object({ taskIds: z.array(z.string().min(1)).max(500).optional() }).strict(),
  [TaskTool.get]: z.object({ taskId: z.string().min(1) }).strict(),
  [TaskTool.list]: z.object({}).strict(),
  [TaskTool.continue]: z.object({ taskId: z.string().min(1), input: z.unknown() }).strict(),
  [TaskTool.clear]: z.object({ taskId: z.string().min(1) }).strict(),
  [TaskTool.cancel]: z.object({ taskId: z.string().min(1) }).strict(),
} satisfies Record<TaskTool, z.ZodType>;

const DESCRIPTIONS: Record<TaskTool, string> = {
  [TaskTool.start]:
    'Starts a background task: another agent works on `input` while you go on. Returns the task id. `description` is how the task is listed.',
  [TaskTool.wait]:
    'Waits until the first of the given tasks has finished (with no ids: until every task has), or until the host’s time limit; returns the finished tasks with their results and the ids still running.',
  [TaskTool.get]: 'The status of a task and, once finished, its output or error.',
  [TaskTool.list]: 'Lists the tasks of this session, one line each: id, status, agent, description.',
  [TaskTool.continue]: 'Sends a follow-up input to a finished task; it runs again and is running until it finishes.',
  [TaskTool.clear]: 'Removes a finished task from the list.',
  [TaskTool.cancel]: 'Cancels a running task.',
};

/** The task tools as the model sees them, with the agents this one may start named in start_task's description. */
export function taskToolSpecs(delegates: readonly string[]): ToolSpec[] {
  return (Object.keys(TaskToolInput) as TaskTool[]).map((name) => {
    const { $schema: _ignored, ...inputSchema } = z.toJSONSchema(TaskToolInput[name], {
      unrepresentable: 'any',
    }) as Record<string, unknown>;
    const description =
      name === TaskTool.start ? `${DESCRIPTIONS[name]} Agents: ${delegates.join(', ')}.` : DESCRIPTIONS[name];
    return { name, description, inputSchema };
  });
}
