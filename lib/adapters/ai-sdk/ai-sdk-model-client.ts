import {
  APICallError,
  type JSONValue,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Content,
  type LanguageModelV4FinishReason,
  type LanguageModelV4Message,
  type LanguageModelV4StreamPart,
  type LanguageModelV4ToolResultOutput,
  type LanguageModelV4Usage,
} from '@ai-sdk/provider';
import { errorMessage, StepError } from '../../core/errors.ts';
import type { ToolCall } from '../../core/journal.ts';
import type {
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelStreamSink,
  UserContent,
} from '../../ports/model-client.ts';
import { knownContextWindow } from '../context-windows.ts';

export interface AiSdkModelClientOptions {
  /** Any AI SDK language model: `openai('gpt-5')`, `anthropic('claude-sonnet-4-5')`, `bedrock(…)`, a mock. */
  readonly model: LanguageModelV4;
  /** Upper bound of one call: the budget check uses it, and the call is aborted past it. */
  readonly maxDurationMs: number;
  /** Stream the response (partial text goes to the step's stream sink); the journal keeps the whole one. */
  readonly stream?: boolean | undefined;
  readonly maxOutputTokens?: number | undefined;
  readonly temperature?: number | undefined;
  /** Passed through to the provider untouched. */
  readonly providerOptions?: LanguageModelV4CallOptions['providerOptions'];
  /** The model's context window; defaults to the published window of its family (lib/adapters/context-windows.ts). */
  readonly contextWindowTokens?: number | undefined;
}

/** HTTP statuses that the same request will meet again: auth, bad request, not found, too large. */
const TERMINAL_STATUSES: ReadonlySet<number> = new Set([400, 401, 402, 403, 404, 405, 413, 415, 422]);
/** AI SDK errors raised before or without a provider answer that no retry can cure. */
const TERMINAL_ERRORS: ReadonlySet<string> = new Set([
  'AI_LoadAPIKeyError',
  'AI_LoadSettingError',
  'AI_InvalidPromptError',
  'AI_InvalidArgumentError',
  'AI_UnsupportedFunctionalityError',
  'AI_NoSuchModelError',
]);

/**
 * An AI SDK language model as a Baton ModelClient: one `doGenerate` (or `doStream`) per step,
 * with Baton's tools offered as function tools that the SDK never executes — Baton runs them and
 * journals each result. Errors come back as StepErrors that say whether another attempt can help,
 * carrying the provider's retry-after for the durable retry.
 * @example new AiSdkModelClient({ model: anthropic('claude-sonnet-4-5'), maxDurationMs: 120_000 })
 */
export class AiSdkModelClient implements ModelClient {
  readonly id: string;
  readonly maxDurationMs: number;
  readonly contextWindowTokens: number | undefined;
  readonly #options: AiSdkModelClientOptions;

  constructor(options: AiSdkModelClientOptions) {
    this.id = `${options.model.provider}:${options.model.modelId}`;
    if (!(options.maxDurationMs > 0)) throw new RangeError(`model ${this.id}: maxDurationMs must be positive`);
    this.maxDurationMs = options.maxDurationMs;
    this.contextWindowTokens = options.contextWindowTokens ?? knownContextWindow(options.model.modelId);
    this.#options = options;
  }

  async converse(request: ModelRequest, signal: AbortSignal, stream?: ModelStreamSink): Promise<ModelResponse> {
    const deadline = AbortSignal.timeout(this.maxDurationMs);
    const callOptions: LanguageModelV4CallOptions = {
      ...callOptionsFor(request),
      abortSignal: AbortSignal.any([signal, deadline]),
      ...(this.#options.maxOutputTokens === undefined ? {} : { maxOutputTokens: this.#options.maxOutputTokens }),
      ...(this.#options.temperature === undefined ? {} : { temperature: this.#options.temperature }),
      ...(this.#options.providerOptions === undefined ? {} : { providerOptions: this.#options.providerOptions }),
    };
    let response: ModelResponse;
    try {
      response = this.#options.stream
        ? await this.#stream(callOptions, stream)
        : modelResponse(await this.#options.model.doGenerate(callOptions));
    } catch (error) {
      // The caller's abort (cancel, budget, lost lease) is not a model failure: pass it through.
      if (signal.aborted) throw signal.reason ?? error;
      if (deadline.aborted)
        throw new StepError(`model ${this.id} did not answer within ${this.maxDurationMs} ms`, {
          cause: error,
          retryable: true,
        });
      throw classifyAiSdkError(this.id, error);
    }
    if (response.stopReason === 'content_filtered')
      throw new StepError(`model ${this.id}: the response was withheld by the provider's content filter`, {
        retryable: false,
      });
    return response;
  }

  async #stream(options: LanguageModelV4CallOptions, sink: ModelStreamSink | undefined): Promise<ModelResponse> {
    const { stream } = await this.#options.model.doStream(options);
    const content: LanguageModelV4Content[] = [];
    const texts = new Map<string, string>();
    let finish: { usage: LanguageModelV4Usage; finishReason: LanguageModelV4FinishReason } | undefined;
    for await (const part of stream as unknown as AsyncIterable<LanguageModelV4StreamPart>) {
      switch (part.type) {
        case 'text-start':
          texts.set(part.id, '');
          break;
        case 'text-delta':
          texts.set(part.id, (texts.get(part.id) ?? '') + part.delta);
          sink?.text(part.delta);
          break;
        case 'text-end':
          content.push({ type: 'text', text: texts.get(part.id) ?? '' });
          texts.delete(part.id);
          break;
        case 'tool-call':
          content.push(part);
          break;
        case 'finish':
          finish = { usage: part.usage, finishReason: part.finishReason };
          break;
        case 'error':
          throw part.error;
        default:
          break;
      }
    }
    // A text never closed by text-end still belongs to the response.
    for (const text of texts.values()) content.push({ type: 'text', text });
    if (!finish) throw new StepError(`model ${this.id}: the stream ended without a finish`, { retryable: true });
    return modelResponse({ content, ...finish });
  }
}

/** The AI SDK call options for `request`: system prompt first, then the mapped transcript and tools. */
export function callOptionsFor(request: ModelRequest): LanguageModelV4CallOptions {
  const prompt: LanguageModelV4Message[] = [];
  if (request.system !== '') prompt.push({ role: 'system', content: request.system });
  const toolNames = new Map<string, string>();
  for (const message of request.messages) prompt.push(...toPromptMessages(message, toolNames));
  return {
    prompt,
    ...(request.tools.length === 0
      ? {}
      : {
          tools: request.tools.map((tool) => ({
            type: 'function' as const,
            name: tool.name,
            description: tool.description,
            inputSchema: tool.inputSchema,
          })),
          toolChoice: { type: 'auto' as const },
        }),
  };
}

/** One Baton message as AI SDK messages: tool results travel in a `tool` message of their own. */
function toPromptMessages(message: ChatMessage, toolNames: Map<string, string>): LanguageModelV4Message[] {
  if (message.role === 'assistant') {
    return [
      {
        role: 'assistant',
        content: message.content.map((c) => {
          if (c.type === 'text') return { type: 'text' as const, text: c.text };
          toolNames.set(c.toolCallId, c.name);
          return { type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.name, input: c.input ?? {} };
        }),
      },
    ];
  }
  const results = message.content.filter((c) => c.type === 'toolResult');
  const texts = message.content.filter((c) => c.type === 'text');
  const out: LanguageModelV4Message[] = [];
  if (results.length > 0)
    out.push({
      role: 'tool',
      content: results.map((r) => ({
        type: 'tool-result' as const,
        toolCallId: r.toolCallId,
        toolName: toolNames.get(r.toolCallId) ?? 'unknown',
        output: toolResultOutput(r),
      })),
    });
  if (texts.length > 0)
    out.push({ role: 'user', content: texts.map((t) => ({ type: 'text' as const, text: t.text })) });
  return out;
}

function toolResultOutput(result: Extract<UserContent, { type: 'toolResult' }>): LanguageModelV4ToolResultOutput {
  const value = (result.output ?? null) as JSONValue;
  if (typeof value === 'string') return { type: result.ok ? 'text' : 'error-text', value };
  return { type: result.ok ? 'json' : 'error-json', value };
}

/** The AI SDK result as Baton's ModelResponse: texts joined, client-executed tool calls in order. */
export function modelResponse(result: {
  content: readonly LanguageModelV4Content[];
  finishReason: LanguageModelV4FinishReason;
  usage: LanguageModelV4Usage;
}): ModelResponse {
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const part of result.content) {
    if (part.type === 'text' && part.text !== '') texts.push(part.text);
    else if (part.type === 'tool-call' && !part.providerExecuted)
      toolCalls.push({ id: part.toolCallId, name: part.toolName, input: parseToolInput(part.input) });
    // Reasoning, sources, files and provider-executed tools are not journaled: the transcript is text and tools.
  }
  return {
    text: texts.length === 0 ? undefined : texts.join('\n'),
    toolCalls,
    stopReason: stopReasonOf(result.finishReason, toolCalls.length > 0),
    usage: {
      inputTokens: result.usage.inputTokens.total ?? 0,
      outputTokens: result.usage.outputTokens.total ?? 0,
    },
  };
}

/** Tool input arrives JSON-encoded; a string that is not JSON is kept, so the tool's schema names the problem. */
function parseToolInput(input: string): unknown {
  if (input.trim() === '') return {};
  try {
    return JSON.parse(input);
  } catch {
    return input;
  }
}

/** The AI SDK's unified finish reason in the journal's vocabulary (Converse's words). */
function stopReasonOf(reason: LanguageModelV4FinishReason, hasToolCalls: boolean): string {
  switch (reason.unified) {
    case 'stop':
      return hasToolCalls ? 'tool_use' : 'end_turn';
    case 'tool-calls':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'content-filter':
      return 'content_filtered';
    default:
      return reason.raw ?? reason.unified;
  }
}

/** Turns what the model threw into a StepError that says whether another attempt can help. */
export function classifyAiSdkError(modelId: string, error: unknown): StepError {
  const message = `model ${modelId}: ${errorMessage(error)}`;
  if (APICallError.isInstance(error)) {
    const status = error.statusCode;
    const retryable =
      status === undefined
        ? error.isRetryable
        : status === 408 || status === 409 || status === 429 || status >= 500
          ? true
          : TERMINAL_STATUSES.has(status)
            ? false
            : error.isRetryable;
    return new StepError(message, { cause: error, retryable, retryAfterMs: retryAfterMs(error.responseHeaders) });
  }
  if (error instanceof Error && TERMINAL_ERRORS.has(error.name))
    return new StepError(message, { cause: error, retryable: false });
  // No usable answer (socket reset, DNS, an unparsable or empty body): transient.
  return new StepError(message, { cause: error, retryable: true });
}

/** The provider's retry-after, from `retry-after-ms` or `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(
  headers: Record<string, string | undefined> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = Number(lower.get('retry-after-ms'));
  if (lower.has('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const value = lower.get('retry-after');
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
