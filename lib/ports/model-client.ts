import type { ToolCall } from '../core/journal.ts';
import type { Usage } from '../core/messages.ts';

/** A transcript message. Roles come from journal entry kinds, never from stored text. */
export type ChatMessage =
  | { readonly role: 'user'; readonly content: readonly UserContent[] }
  | { readonly role: 'assistant'; readonly content: readonly AssistantContent[] };

export type UserContent =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'toolResult'; readonly toolCallId: string; readonly ok: boolean; readonly output: unknown };

export type AssistantContent =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'toolUse'; readonly toolCallId: string; readonly name: string; readonly input: unknown };

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the tool's input. */
  readonly inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  /** Always from code (the agent definition), never from stored state. */
  readonly system: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSpec[];
}

export interface ModelResponse {
  readonly text?: string | undefined;
  readonly toolCalls: readonly ToolCall[];
  /** end_turn · tool_use · max_tokens · stop_sequence · guardrail_intervened · content_filtered … */
  readonly stopReason: string;
  readonly usage: Usage;
}

/** Where a streaming model reports partial output as it arrives. Nothing sent here is journaled. */
export interface ModelStreamSink {
  text(delta: string): void;
}

/** A model. Errors it throws are StepErrors whose `retryable` the retry policy honours. */
export interface ModelClient {
  readonly id: string;
  /** Upper bound of one call, used by the budget check before the call starts. */
  readonly maxDurationMs: number;
  /** The model's context window in tokens, when the adapter knows it: an agent's default window. */
  readonly contextWindowTokens?: number | undefined;
  /**
   * The provider's token count of a request's input, when the adapter can ask for one; without it
   * the runtime uses a conservative estimate (lib/agent/compaction.ts).
   */
  readonly countTokens?: ((request: ModelRequest, signal: AbortSignal) => Promise<number>) | undefined;
  /** One call; a model that streams reports partial text to `stream`, then resolves with the whole response. */
  converse(request: ModelRequest, signal: AbortSignal, stream?: ModelStreamSink): Promise<ModelResponse>;
}
