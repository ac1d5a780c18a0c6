import { APICallError, type LanguageModelV4GenerateResult, LoadAPIKeyError } from '@ai-sdk/provider';
import { convertArrayToReadableStream, MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AiSdkModelClient, retryAfterMs } from '../../../../lib/adapters/ai-sdk/ai-sdk-model-client.ts';
import { StepError } from '../../../../lib/core/errors.ts';
import type { ModelRequest } from '../../../../lib/ports/model-client.ts';

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

const twoCalls: LanguageModelV4GenerateResult = {
  content: [
    { type: 'text', text: 'Looking both up.' },
    { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"id":"a"}' },
    { type: 'tool-call', toolCallId: 'c2', toolName: 'lookup', input: '{"id":"b"}' },
  ],
  finishReason: { unified: 'tool-calls', raw: 'tool_use' },
  usage: usage(120, 30),
  warnings: [],
};

const request: ModelRequest = {
  system: 'Look every id up.',
  messages: [
    { role: 'user', content: [{ type: 'text', text: '{"ids":["a"]}' }] },
    { role: 'assistant', content: [{ type: 'toolUse', toolCallId: 'c0', name: 'lookup', input: { id: 'a' } }] },
    {
      role: 'user',
      content: [
        { type: 'toolResult', toolCallId: 'c0', ok: true, output: { id: 'a', found: true } },
        { type: 'text', text: 'and b too' },
      ],
    },
  ],
  tools: [
    {
      name: 'lookup',
      description: 'Looks an id up.',
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
  ],
};

const apiError = (statusCode: number, headers: Record<string, string> = {}, isRetryable = false) =>
  new APICallError({
    message: `status ${statusCode}`,
    url: 'https://provider.test/v1/chat',
    requestBodyValues: {},
    statusCode,
    responseHeaders: headers,
    isRetryable,
  });

async function failureOf(client: AiSdkModelClient): Promise<StepError> {
  const error = await client.converse(request, new AbortController().signal).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StepError);
  return error as StepError;
}

const failing = (error: unknown) =>
  new AiSdkModelClient({
    model: new MockLanguageModelV4({
      doGenerate: async () => {
        throw error;
      },
    }),
    maxDurationMs: 5_000,
  });

describe('AiSdkModelClient', () => {
  it('sends the system prompt, the transcript with tool results in a tool message, and the tools', async () => {
    const model = new MockLanguageModelV4({ doGenerate: twoCalls });
    await new AiSdkModelClient({ model, maxDurationMs: 5_000 }).converse(request, new AbortController().signal);
    const sent = model.doGenerateCalls[0]!;
    expect(sent.prompt).toEqual([
      { role: 'system', content: 'Look every id up.' },
      { role: 'user', content: [{ type: 'text', text: '{"ids":["a"]}' }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c0', toolName: 'lookup', input: { id: 'a' } }] },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c0',
            toolName: 'lookup',
            output: { type: 'json', value: { id: 'a', found: true } },
          },
        ],
      },
      { role: 'user', content: [{ type: 'text', text: 'and b too' }] },
    ]);
    expect(sent.tools).toEqual([
      { type: 'function', name: 'lookup', description: 'Looks an id up.', inputSchema: request.tools[0]!.inputSchema },
    ]);
  });

  it('maps several tool calls, the text, usage and the finish reason', async () => {
    const client = new AiSdkModelClient({
      model: new MockLanguageModelV4({ doGenerate: twoCalls }),
      maxDurationMs: 5_000,
    });
    expect(client.id).toBe('mock-provider:mock-model-id');
    const response = await client.converse(request, new AbortController().signal);
    expect(response).toEqual({
      text: 'Looking both up.',
      toolCalls: [
        { id: 'c1', name: 'lookup', input: { id: 'a' } },
        { id: 'c2', name: 'lookup', input: { id: 'b' } },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 120, outputTokens: 30 },
    });
  });

  it('maps a final answer and a length stop', async () => {
    const answer = (unified: 'stop' | 'length') =>
      new AiSdkModelClient({
        model: new MockLanguageModelV4({
          doGenerate: {
            content: [{ type: 'text', text: 'done' }],
            finishReason: { unified, raw: undefined },
            usage: usage(5, 1),
            warnings: [],
          },
        }),
        maxDurationMs: 5_000,
      }).converse(request, new AbortController().signal);
    expect(await answer('stop')).toMatchObject({ text: 'done', toolCalls: [], stopReason: 'end_turn' });
    expect((await answer('length')).stopReason).toBe('max_tokens');
  });

  it.each([
    ['rate limited', 429],
    ['overloaded', 529],
    ['server error', 500],
    ['unavailable', 503],
    ['request timeout', 408],
  ])('classifies %s (%i) as retryable', async (_what, status) => {
    expect((await failureOf(failing(apiError(status)))).retryable).toBe(true);
  });

  it.each([
    ['unauthorised', 401],
    ['forbidden', 403],
    ['bad request', 400],
    ['unprocessable', 422],
  ])('classifies %s (%i) as terminal', async (_what, status) => {
    expect((await failureOf(failing(apiError(status, {}, true)))).retryable).toBe(false);
  });

  it('carries the provider retry-after on a rate limit', async () => {
    const error = await failureOf(failing(apiError(429, { 'Retry-After': '7' })));
    expect(error).toMatchObject({ retryable: true, retryAfterMs: 7_000 });
    expect((await failureOf(failing(apiError(429, { 'retry-after-ms': '1500' })))).retryAfterMs).toBe(1_500);
  });

  it('classifies a missing API key as terminal and a dropped connection as retryable', async () => {
    const noKey = new LoadAPIKeyError({ message: 'OPENAI_API_KEY is missing' });
    expect((await failureOf(failing(noKey))).retryable).toBe(false);
    expect((await failureOf(failing(new TypeError('fetch failed')))).retryable).toBe(true);
  });

  it('fails terminally when the content filter withheld the response', async () => {
    const filtered = new AiSdkModelClient({
      model: new MockLanguageModelV4({
        doGenerate: {
          content: [],
          finishReason: { unified: 'content-filter', raw: 'SAFETY' },
          usage: usage(5, 0),
          warnings: [],
        },
      }),
      maxDurationMs: 5_000,
    });
    const error = await failureOf(filtered);
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/content filter/);
  });

  it('times out as a retryable error past maxDurationMs', async () => {
    const hanging = new AiSdkModelClient({
      model: new MockLanguageModelV4({
        doGenerate: ({ abortSignal }) =>
          new Promise((_, reject) => abortSignal?.addEventListener('abort', () => reject(abortSignal.reason))),
      }),
      maxDurationMs: 50,
    });
    const error = await failureOf(hanging);
    expect(error).toMatchObject({ retryable: true });
    expect(error.message).toMatch(/did not answer within 50 ms/);
  });

  it('passes the caller abort through rather than classifying it', async () => {
    const controller = new AbortController();
    const model = new MockLanguageModelV4({
      doGenerate: ({ abortSignal }) =>
        new Promise((_, reject) => abortSignal?.addEventListener('abort', () => reject(new Error('aborted')))),
    });
    const pending = new AiSdkModelClient({ model, maxDurationMs: 5_000 }).converse(request, controller.signal);
    controller.abort('cancel');
    await expect(pending).rejects.toBe('cancel');
  });

  it('streams partial text to the sink and resolves with the whole response', async () => {
    const model = new MockLanguageModelV4({
      doStream: {
        stream: convertArrayToReadableStream([
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Hel' },
          { type: 'text-delta', id: 't', delta: 'lo' },
          { type: 'text-end', id: 't' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"id":"a"}' },
          { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage: usage(9, 4) },
        ]),
      },
    });
    const deltas: string[] = [];
    const response = await new AiSdkModelClient({ model, maxDurationMs: 5_000, stream: true }).converse(
      request,
      new AbortController().signal,
      { text: (delta) => deltas.push(delta) },
    );
    expect(deltas).toEqual(['Hel', 'lo']);
    expect(response).toEqual({
      text: 'Hello',
      toolCalls: [{ id: 'c1', name: 'lookup', input: { id: 'a' } }],
      stopReason: 'tool_use',
      usage: { inputTokens: 9, outputTokens: 4 },
    });
  });

  it('classifies an error part in the stream like a thrown one', async () => {
    const model = new MockLanguageModelV4({
      doStream: { stream: convertArrayToReadableStream([{ type: 'error', error: apiError(503) }]) },
    });
    const client = new AiSdkModelClient({ model, maxDurationMs: 5_000, stream: true });
    expect((await failureOf(client)).retryable).toBe(true);
  });
});

describe('retryAfterMs', () => {
  it('reads seconds, milliseconds and an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after': '2' })).toBe(2_000);
    expect(retryAfterMs({ 'retry-after-ms': '250' })).toBe(250);
    expect(retryAfterMs({ 'retry-after': 'Tue, 01 Dec 2026 10:00:30 GMT' }, Date.parse('2026-12-01T10:00:00Z'))).toBe(
      30_000,
    );
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('AiSdkModelClient context window', () => {
  it("defaults to the published window of the model's family, unless given one", () => {
    const claude = new MockLanguageModelV4({ provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5' });
    const house = new MockLanguageModelV4({ provider: 'acme', modelId: 'house-model' });

    expect(new AiSdkModelClient({ model: claude, maxDurationMs: 5_000 }).contextWindowTokens).toBe(200_000);
    expect(
      new AiSdkModelClient({ model: claude, maxDurationMs: 5_000, contextWindowTokens: 50_000 }).contextWindowTokens,
    ).toBe(50_000);
    expect(new AiSdkModelClient({ model: house, maxDurationMs: 5_000 }).contextWindowTokens).toBeUndefined();
  });
});
