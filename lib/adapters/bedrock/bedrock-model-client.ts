import type {
  BedrockRuntimeClient,
  ContentBlock,
  ConverseCommandInput,
  ConverseCommandOutput,
  ConverseStreamOutput,
  Message,
  Tool,
  ToolResultContentBlock,
  ToolSpecification,
  ToolUseBlock,
} from '@aws-sdk/client-bedrock-runtime';
import * as z from 'zod';
import { errorMessage, StepError } from '../../core/errors.ts';
import type { ToolCall } from '../../core/journal.ts';
import type {
  AssistantContent,
  ChatMessage,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelStreamSink,
  ToolSpec,
  UserContent,
} from '../../ports/model-client.ts';
import { foundationModelId, knownContextWindow, modelFamilyName } from '../context-windows.ts';

/** A JSON value as the SDK types it (tool inputs and JSON tool results). */
type Document = NonNullable<ToolUseBlock['input']>;

export interface BedrockModelClientOptions {
  /** A model id, inference profile id or ARN, as Converse takes it. */
  readonly modelId: string;
  /** Used only when `client` is absent; the SDK's region chain applies otherwise. */
  readonly region?: string | undefined;
  /** A client built by the composition root (tests pass one with a recorded-response handler). */
  readonly client?: BedrockRuntimeClient | undefined;
  readonly maxTokens?: number | undefined;
  readonly temperature?: number | undefined;
  /** Upper bound of one call: the budget check uses it, and the call is aborted past it. */
  readonly maxDurationMs: number;
  /** Call ConverseStream: partial text goes to the step's stream sink; the journal keeps the whole response. */
  readonly stream?: boolean | undefined;
  /** The model's context window; defaults to the published window of its family (lib/adapters/context-windows.ts). */
  readonly contextWindowTokens?: number | undefined;
  /**
   * Ask Bedrock's CountTokens for a request's size when the estimate says it may be near the
   * window. Default: on for Anthropic's models, the ones CountTokens documents.
   */
  readonly countTokens?: boolean | undefined;
}

/**
 * The Bedrock Runtime SDK, imported at the first model call and not with this module: `baton`
 * exports this client, so every agents module (and the intake function, which never calls a model)
 * would otherwise load the SDK at cold start. A dynamic import of the package itself, so that it
 * stays lazy in a bundle that leaves the SDK external too.
 */
let bedrockSdk: Promise<typeof import('@aws-sdk/client-bedrock-runtime')> | undefined;
const loadBedrockSdk = () => {
  bedrockSdk ??= import('@aws-sdk/client-bedrock-runtime');
  return bedrockSdk;
};

/** Converse errors that another attempt, later, can cure. */
const RETRYABLE_ERRORS: ReadonlySet<string> = new Set([
  'ThrottlingException',
  'ServiceUnavailableException',
  'InternalServerException',
  'ModelTimeoutException',
  'ModelNotReadyException',
  // A quota hit (e.g. tokens per day) clears with time; the retry policy's attempt cap bounds it.
  'ServiceQuotaExceededException',
]);

/** Converse errors that the same request will meet again, whenever it is sent. */
const TERMINAL_ERRORS: ReadonlySet<string> = new Set([
  'ValidationException',
  'AccessDeniedException',
  'ResourceNotFoundException',
]);

/**
 * Amazon Bedrock's Converse API as a ModelClient. The system prompt comes from the request (so
 * from code); the transcript maps block by block; errors come back as StepErrors whose
 * `retryable` the retry policy honours.
 * @example new BedrockModelClient({ modelId: 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0', maxDurationMs: 120_000 })
 */
export class BedrockModelClient implements ModelClient {
  readonly id: string;
  readonly maxDurationMs: number;
  readonly contextWindowTokens: number | undefined;
  readonly countTokens: ModelClient['countTokens'];
  #client: Promise<BedrockRuntimeClient> | undefined;
  readonly #options: BedrockModelClientOptions;

  constructor(options: BedrockModelClientOptions) {
    if (!(options.maxDurationMs > 0)) throw new RangeError(`model ${options.modelId}: maxDurationMs must be positive`);
    this.id = options.modelId;
    this.maxDurationMs = options.maxDurationMs;
    this.contextWindowTokens = options.contextWindowTokens ?? knownContextWindow(options.modelId);
    this.#options = options;
    if (options.client) this.#client = Promise.resolve(options.client);
    const counts = options.countTokens ?? modelFamilyName(options.modelId).startsWith('claude-');
    this.countTokens = counts ? (request, signal) => this.#countTokens(request, signal) : undefined;
  }

  /**
   * Bedrock's count of a request's input tokens. CountTokens takes the foundation model, not an
   * inference profile, so a geography prefix is dropped (the count is the same model's).
   */
  async #countTokens(request: ModelRequest, abortSignal: AbortSignal): Promise<number> {
    const { modelId, messages, system, toolConfig } = converseInput(foundationModelId(this.id), request);
    const [sdk, client] = await Promise.all([loadBedrockSdk(), this.#sdkClient()]);
    const input = { converse: { messages, ...(system ? { system } : {}), ...(toolConfig ? { toolConfig } : {}) } };
    const { inputTokens } = await client.send(new sdk.CountTokensCommand({ modelId, input }), { abortSignal });
    if (inputTokens === undefined) throw new Error(`model ${this.id}: CountTokens answered without a count`);
    return inputTokens;
  }

  /** The SDK client, built at the first call (see loadBedrockSdk). */
  #sdkClient(): Promise<BedrockRuntimeClient> {
    const { region } = this.#options;
    // One attempt per call: Baton's retry policy owns retries, so each one is journaled and
    // backs off through a delayed kick instead of sleeping inside this invocation's budget.
    this.#client ??= loadBedrockSdk().then(
      (sdk) => new sdk.BedrockRuntimeClient({ maxAttempts: 1, ...(region === undefined ? {} : { region }) }),
    );
    return this.#client;
  }

  async converse(request: ModelRequest, signal: AbortSignal, sink?: ModelStreamSink): Promise<ModelResponse> {
    const deadline = AbortSignal.timeout(this.maxDurationMs);
    const input = converseInput(this.id, request, {
      maxTokens: this.#options.maxTokens,
      temperature: this.#options.temperature,
    });
    const abortSignal = AbortSignal.any([signal, deadline]);
    let output: ConverseCommandOutput;
    try {
      const [sdk, client] = await Promise.all([loadBedrockSdk(), this.#sdkClient()]);
      output = this.#options.stream
        ? await this.#stream(sdk, client, input, abortSignal, sink)
        : await client.send(new sdk.ConverseCommand(input), { abortSignal });
    } catch (error) {
      // The caller's abort (cancel, budget, lost lease) is not a model failure: pass it through.
      if (signal.aborted) throw signal.reason ?? error;
      if (deadline.aborted)
        throw new StepError(`model ${this.id} did not answer within ${this.maxDurationMs} ms`, {
          cause: error,
          retryable: true,
        });
      throw classifyBedrockError(this.id, error);
    }
    return modelResponse(output);
  }

  /** ConverseStream, its events gathered into the answer Converse would have given. */
  async #stream(
    sdk: typeof import('@aws-sdk/client-bedrock-runtime'),
    client: BedrockRuntimeClient,
    input: ConverseCommandInput,
    abortSignal: AbortSignal,
    sink: ModelStreamSink | undefined,
  ): Promise<ConverseCommandOutput> {
    const { stream, $metadata } = await client.send(new sdk.ConverseStreamCommand(input), { abortSignal });
    const blocks = new Map<number, { text: string; toolUse?: { toolUseId: string; name: string; input: string } }>();
    const blockAt = (index: number | undefined) => {
      const block = blocks.get(index ?? 0) ?? { text: '' };
      blocks.set(index ?? 0, block);
      return block;
    };
    let stopReason: ConverseCommandOutput['stopReason'];
    let usage: ConverseCommandOutput['usage'];
    for await (const event of stream ?? []) {
      const failure = streamFailure(event);
      if (failure) throw failure;
      if (event.contentBlockStart?.start?.toolUse) {
        const { toolUseId = '', name = '' } = event.contentBlockStart.start.toolUse;
        blockAt(event.contentBlockStart.contentBlockIndex).toolUse = { toolUseId, name, input: '' };
      } else if (event.contentBlockDelta?.delta) {
        const { delta, contentBlockIndex } = event.contentBlockDelta;
        const block = blockAt(contentBlockIndex);
        if (delta.text !== undefined) {
          block.text += delta.text;
          sink?.text(delta.text);
        } else if (delta.toolUse && block.toolUse) block.toolUse.input += delta.toolUse.input ?? '';
      } else if (event.messageStop) stopReason = event.messageStop.stopReason;
      else if (event.metadata) usage = event.metadata.usage;
    }
    if (stopReason === undefined)
      throw new StepError(`model ${this.id}: the stream ended without a stop reason`, { retryable: true });
    const content: ContentBlock[] = [...blocks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, block]) =>
        block.toolUse
          ? { toolUse: { ...block.toolUse, input: parseToolInput(block.toolUse.input) } }
          : { text: block.text },
      );
    return { output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: undefined, $metadata };
  }
}

/** An exception the stream delivered as an event (the SDK usually throws these itself). */
function streamFailure(event: ConverseStreamOutput): Error | undefined {
  return (
    event.internalServerException ??
    event.modelStreamErrorException ??
    event.validationException ??
    event.throttlingException ??
    event.serviceUnavailableException
  );
}

/** A streamed tool input arrives as JSON text in pieces; text that is not JSON is kept, so the tool's schema names it. */
function parseToolInput(input: string): Document {
  if (input.trim() === '') return {};
  try {
    return JSON.parse(input) as Document;
  } catch {
    return input;
  }
}

/** The Converse request for `request`: system blocks, mapped messages, tool specs, inference settings. */
export function converseInput(
  modelId: string,
  request: ModelRequest,
  inference: { maxTokens?: number | undefined; temperature?: number | undefined } = {},
): ConverseCommandInput {
  const inferenceConfig = {
    ...(inference.maxTokens === undefined ? {} : { maxTokens: inference.maxTokens }),
    ...(inference.temperature === undefined ? {} : { temperature: inference.temperature }),
  };
  return {
    modelId,
    messages: request.messages.map(toBedrockMessage),
    // Converse refuses blank text blocks and an empty tool list: leave such fields out.
    ...(request.system === '' ? {} : { system: [{ text: request.system }] }),
    ...(request.tools.length === 0 ? {} : { toolConfig: { tools: request.tools.map(toBedrockTool) } }),
    ...(Object.keys(inferenceConfig).length === 0 ? {} : { inferenceConfig }),
  };
}

function toBedrockMessage(message: ChatMessage): Message {
  return message.role === 'user'
    ? { role: 'user', content: message.content.map(userBlock) }
    : { role: 'assistant', content: message.content.map(assistantBlock) };
}

function userBlock(content: UserContent): ContentBlock {
  if (content.type === 'text') return { text: content.text };
  return {
    toolResult: {
      toolUseId: content.toolCallId,
      content: [toolResultContent(content.output)],
      status: content.ok ? 'success' : 'error',
    },
  };
}

function assistantBlock(content: AssistantContent): ContentBlock {
  if (content.type === 'text') return { text: content.text };
  return { toolUse: { toolUseId: content.toolCallId, name: content.name, input: (content.input ?? {}) as Document } };
}

/**
 * A tool's output as one result block: a JSON object as `json`, a string as `text`, anything
 * else wrapped in an object, because models behind Converse expect a JSON object there.
 */
function toolResultContent(output: unknown): ToolResultContentBlock {
  if (typeof output === 'string' && output !== '') return { text: output };
  if (isPlainObject(output)) return { json: output as Document };
  return { json: { result: (output ?? null) as Document } };
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function toBedrockTool(tool: ToolSpec): Tool {
  return { toolSpec: bedrockToolSpec(tool) };
}

const bedrockToolSpec = (tool: ToolSpec): ToolSpecification => ({
  name: tool.name,
  description: tool.description,
  inputSchema: { json: tool.inputSchema as Document },
});

/** The Converse answer as Baton's ModelResponse: texts joined, tool calls in the order given. */
export function modelResponse(output: ConverseCommandOutput): ModelResponse {
  const blocks = output.output?.message?.content ?? [];
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of blocks) {
    if (block.text !== undefined && block.text !== '') texts.push(block.text);
    else if (block.toolUse !== undefined)
      // A missing id stays '': the response check gives the call an id of its own (checked-model-response.ts).
      toolCalls.push({ id: block.toolUse.toolUseId ?? '', name: block.toolUse.name ?? '', input: block.toolUse.input });
    // Reasoning, citations and media blocks are not journaled: the transcript is text and tools.
  }
  return {
    text: texts.length === 0 ? undefined : texts.join('\n'),
    toolCalls,
    stopReason: output.stopReason ?? 'unknown',
    usage: { inputTokens: output.usage?.inputTokens ?? 0, outputTokens: output.usage?.outputTokens ?? 0 },
  };
}

/** Turns what `send` threw into a StepError that says whether another attempt can help. */
export function classifyBedrockError(modelId: string, error: unknown): StepError {
  const message = `model ${modelId}: ${errorMessage(error)}`;
  if (!isServiceException(error))
    // No service answer at all (socket reset, DNS, timeout before a response): transient.
    return new StepError(message, { cause: error, retryable: true });
  return new StepError(message, { cause: error, retryable: isRetryable(error) });
}

/** What the SDK's exceptions carry; the SDK's own `instanceof` checks these same fields. */
interface ServiceError extends Error {
  readonly $fault: 'client' | 'server';
  readonly $metadata: { readonly httpStatusCode?: number | undefined };
}

/** A service's answer, as the SDK's ServiceException.isInstance decides it, without importing the SDK. */
function isServiceException(error: unknown): error is ServiceError {
  if (!(error instanceof Error)) return false;
  const { $fault, $metadata } = error as Partial<ServiceError>;
  return Boolean($metadata) && ($fault === 'client' || $fault === 'server');
}

function isRetryable(error: ServiceError): boolean {
  if (RETRYABLE_ERRORS.has(error.name)) return true;
  if (TERMINAL_ERRORS.has(error.name)) return false;
  if (error.name === 'ModelErrorException') {
    // The model failed while processing. Its output is sampled, so another attempt often
    // succeeds, and the retry policy caps the attempts; but when the model's own status says
    // the request was bad (4xx other than 429), the same request fails the same way.
    const original = (error as { originalStatusCode?: number }).originalStatusCode;
    return original === undefined || original === 429 || original >= 500;
  }
  const status = error.$metadata.httpStatusCode ?? 0;
  return error.$fault === 'server' || status >= 500 || status === 429;
}

/**
 * A Converse tool spec from a zod schema: Converse wants a plain JSON Schema object, so the
 * `$schema` key that `z.toJSONSchema` adds is stripped.
 * @example toolSpecFromZod('lookup_order', 'Finds an order by id', z.object({ orderId: z.string() }))
 */
export function toolSpecFromZod(name: string, description: string, schema: z.ZodType): ToolSpecification {
  const { $schema: _dropped, ...inputSchema } = z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return bedrockToolSpec({ name, description, inputSchema });
}
