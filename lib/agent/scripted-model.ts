import { StepError } from '../core/errors.ts';
import type { ToolCall } from '../core/journal.ts';
import { type Clock, systemClock } from '../ports/clock.ts';
import type { ChatMessage, ModelClient, ModelRequest, ModelResponse, ModelStreamSink } from '../ports/model-client.ts';

/** What a script answers: tool calls to make, or the final text. */
export type ScriptReply =
  | { readonly toolCalls: readonly ToolCall[]; readonly text?: string }
  | { readonly final: string };

export interface ScriptedModelOptions {
  readonly id?: string;
  /** Simulated latency of one call (honours the abort signal). */
  readonly latencyMs?: number;
  /** What the latency is measured on (a ManualClock in unit tests). */
  readonly clock?: Clock | undefined;
  readonly maxDurationMs?: number;
  /**
   * Simulates a streaming provider: the reply's text reaches the step's stream sink in pieces of
   * `chunkChars`, `chunkDelayMs` apart (on `clock`), before the call resolves with the whole reply.
   */
  readonly stream?: { readonly chunkChars: number; readonly chunkDelayMs: number } | undefined;
  /** Decides the reply from the transcript alone: deterministic, so a resume sees the same answers. */
  readonly script: (transcript: readonly ChatMessage[], request: ModelRequest) => ScriptReply;
}

/** Counts of what the transcript holds, for scripts that advance by phase. */
export const transcriptStats = (messages: readonly ChatMessage[]) => {
  let toolResults = 0;
  let modelTurns = 0;
  for (const message of messages) {
    if (message.role === 'assistant') modelTurns++;
    else toolResults += message.content.filter((c) => c.type === 'toolResult').length;
  }
  return { toolResults, modelTurns };
};

/** Tool results in the transcript, by tool call id. */
export function toolResults(messages: readonly ChatMessage[]): Map<string, { ok: boolean; output: unknown }> {
  const results = new Map<string, { ok: boolean; output: unknown }>();
  for (const message of messages) {
    if (message.role !== 'user') continue;
    for (const c of message.content)
      if (c.type === 'toolResult') results.set(c.toolCallId, { ok: c.ok, output: c.output });
  }
  return results;
}

/** Hands `text` to the sink piece by piece, as a streaming provider would. */
async function streamText(
  text: string,
  stream: NonNullable<ScriptedModelOptions['stream']>,
  clock: Clock,
  signal: AbortSignal,
  sink: ModelStreamSink,
): Promise<void> {
  const size = Math.max(1, stream.chunkChars);
  for (let at = 0; at < text.length; at += size) {
    if (at > 0 && stream.chunkDelayMs > 0) await clock.sleep(stream.chunkDelayMs, signal);
    signal.throwIfAborted();
    sink.text(text.slice(at, at + size));
  }
}

/** Rough token estimate for the scripted model's usage figures (4 characters a token). */
const estimateTokens = (text: string): number => Math.ceil(text.length / 4);

/** Each message's JSON length, kept while the message lives: a leg's transcript keeps its messages between calls. */
const jsonLengths = new WeakMap<ChatMessage, number>();

/**
 * The length of `JSON.stringify(messages)`, without serializing the messages seen before: the
 * zero-latency model of a benchmark would otherwise spend time on every call that grows with the
 * transcript, and charge it to the runtime it measures.
 */
function transcriptJsonLength(messages: readonly ChatMessage[]): number {
  let length = messages.length === 0 ? 2 : messages.length + 1;
  for (const message of messages) {
    let size = jsonLengths.get(message);
    if (size === undefined) {
      size = JSON.stringify(message).length;
      jsonLengths.set(message, size);
    }
    length += size;
  }
  return length;
}

/**
 * A deterministic model for tests, examples and benchmarks: a script decides tool calls and the
 * final answer from the transcript.
 */
export function scriptedModel(options: ScriptedModelOptions): ModelClient {
  const latencyMs = options.latencyMs ?? 0;
  return {
    id: options.id ?? 'scripted',
    maxDurationMs: options.maxDurationMs ?? Math.max(1_000, latencyMs * 2),
    async converse(request, signal, sink): Promise<ModelResponse> {
      const clock = options.clock ?? systemClock;
      if (latencyMs > 0) await clock.sleep(latencyMs, signal);
      signal.throwIfAborted();
      const reply = options.script(request.messages, request);
      const text = 'final' in reply ? reply.final : reply.text;
      if (options.stream && sink && text) await streamText(text, options.stream, clock, signal, sink);
      const usage = {
        inputTokens: Math.ceil(transcriptJsonLength(request.messages) / 4),
        outputTokens: estimateTokens(JSON.stringify(reply)),
      };
      if ('final' in reply) return { text: reply.final, toolCalls: [], stopReason: 'end_turn', usage };
      if (reply.toolCalls.length === 0)
        throw new StepError('scripted model replied with neither tool calls nor a final answer');
      return { text: reply.text, toolCalls: reply.toolCalls, stopReason: 'tool_use', usage };
    },
  };
}
