import { transcriptStats } from '../agent/scripted-model.ts';
import { StepError } from '../core/errors.ts';
import type { ToolCall } from '../core/journal.ts';
import type { ChatMessage, ModelClient, ModelRequest, ModelResponse } from '../ports/model-client.ts';

/** A tool call a mocked model makes; without `id`, one is made up from the model call's number. */
export interface MockToolCall {
  readonly id?: string | undefined;
  readonly name: string;
  readonly input?: unknown;
}

/** What a mocked model answers: the final text (a string is one), or tool calls to make. */
export type MockReply =
  | string
  | { readonly final: string }
  | { readonly toolCalls: readonly MockToolCall[]; readonly text?: string | undefined };

/**
 * A mocked model's answers: a list (the nth model call of a session gets the nth reply) or a
 * function of the transcript. Both see only the transcript, never how many times they were
 * called, so a leg that recovers after a crash gets the answer the crashed leg got.
 */
export type ModelScript =
  | readonly MockReply[]
  | ((transcript: readonly ChatMessage[], request: ModelRequest) => MockReply);

/** A model replaced for one agent: what it was asked, in order. */
export interface ModelMock {
  /** Every request the mock answered (a call made again after a crash appears twice). */
  readonly calls: readonly ModelRequest[];
  /** Puts the agent's own model back. */
  restore(): void;
}

/** A rough token count for the usage figures (4 characters a token), as the scripted model counts. */
const tokens = (value: unknown): number => Math.ceil(JSON.stringify(value).length / 4);

/** A model that answers from `script`, for `agent` (named in its errors); `calls` receives each request. */
export function modelFromScript(
  agent: string,
  script: ModelScript,
  maxDurationMs: number,
  calls: ModelRequest[],
): ModelClient {
  return {
    id: `mock-${agent}`,
    maxDurationMs,
    async converse(request, signal): Promise<ModelResponse> {
      signal.throwIfAborted();
      calls.push(request);
      // The nth model call of the session is the one that sees n − 1 answers in the transcript.
      const modelCall = transcriptStats(request.messages).modelTurns;
      let reply: MockReply | undefined;
      if (typeof script === 'function') reply = script(request.messages, request);
      else {
        reply = script[modelCall];
        if (reply === undefined)
          throw new StepError(
            `the mocked model of agent ${agent} has no reply for model call ${modelCall + 1}: it was given ${script.length}`,
            { retryable: false },
          );
      }
      const usage = { inputTokens: tokens(request.messages), outputTokens: tokens(reply) };
      if (typeof reply === 'string') return { text: reply, toolCalls: [], stopReason: 'end_turn', usage };
      if ('final' in reply) return { text: reply.final, toolCalls: [], stopReason: 'end_turn', usage };
      if (reply.toolCalls.length === 0)
        throw new StepError(`the mocked model of agent ${agent} replied with neither tool calls nor a final answer`, {
          retryable: false,
        });
      const toolCalls: ToolCall[] = reply.toolCalls.map((call, i) => ({
        id: call.id ?? `call-${modelCall + 1}-${i + 1}`,
        name: call.name,
        input: call.input ?? {},
      }));
      return { text: reply.text, toolCalls, stopReason: 'tool_use', usage };
    },
  };
}
