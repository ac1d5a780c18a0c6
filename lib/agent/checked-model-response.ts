import { StepError } from '../core/errors.ts';
import { EntryData } from '../core/journal.ts';
import { describeIssues } from '../core/messages.ts';
import type { ModelResponse } from '../ports/model-client.ts';

/** What a model may leave out or null: its text, and a tool call's arguments (the tool's schema then judges them). */
function withDefaults(response: unknown): unknown {
  if (response === null || typeof response !== 'object') return response;
  const { text, toolCalls, ...rest } = response as Record<string, unknown>;
  return {
    ...rest,
    ...(text === null || text === undefined ? {} : { text }),
    toolCalls: Array.isArray(toolCalls)
      ? toolCalls.map((call: unknown) =>
          call !== null && typeof call === 'object' && (call as { input?: unknown }).input === undefined
            ? { ...call, input: null }
            : call,
        )
      : toolCalls,
  };
}

/**
 * A model's response, checked before it is journaled: a model client is the agent author's code,
 * and an entry that cannot be read back would leave the session unreadable for good. A response
 * that is not a valid one fails the turn with a reason naming the model and what is wrong.
 */
export function checkedModelResponse(modelId: string, response: unknown): ModelResponse {
  const parsed = EntryData.model.safeParse(withDefaults(response));
  if (!parsed.success)
    throw new StepError(`model ${modelId} returned an invalid response: ${describeIssues(parsed.error)}`, {
      retryable: false,
    });
  return parsed.data;
}
