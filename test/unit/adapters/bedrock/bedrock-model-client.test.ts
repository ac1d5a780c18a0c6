import { ThrottlingException, ValidationException } from '@aws-sdk/client-bedrock-runtime';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BedrockModelClient, toolSpecFromZod } from '../../../../lib/adapters/bedrock/bedrock-model-client.ts';
import { StepError } from '../../../../lib/core/errors.ts';
import type { ModelRequest, ToolSpec } from '../../../../lib/ports/model-client.ts';
import {
  loadFixture,
  type RecordedResponse,
  recordedBedrockClient,
  type StreamFrame,
  streamResponse,
} from '../../../fixtures/bedrock/recorded-http-handler.ts';

const MODEL_ID = 'anthropic.claude-3-sonnet-20240229-v1:0';
const TOOL_USE_ID = 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q';

/** The documented top_song tool, as Baton's ToolSpec carries it. */
const topSong: ToolSpec = {
  name: 'top_song',
  description: 'Get the most popular song played on a radio station.',
  inputSchema: {
    type: 'object',
    properties: {
      sign: {
        type: 'string',
        description:
          'The call sign for the radio station for which you want the most popular song. Example calls signs are WZPZ and WKRP.',
      },
    },
    required: ['sign'],
  },
};

/** The documented top_song conversation, as Baton's transcript holds it after one tool call. */
const roundTripRequest: ModelRequest = {
  system:
    'You are an app that creates playlists for a radio station that plays rock and pop music. Only return song names and the artist.',
  messages: [
    { role: 'user', content: [{ type: 'text', text: 'What is the most popular song on WZPZ?' }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: "I'll look up the most popular song on WZPZ." },
        { type: 'toolUse', toolCallId: TOOL_USE_ID, name: 'top_song', input: { sign: 'WZPZ' } },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'toolResult',
          toolCallId: TOOL_USE_ID,
          ok: true,
          output: { song: 'Elemental Hotel', artist: '8 Storey Hike' },
        },
      ],
    },
  ],
  tools: [topSong],
};

const shortRequest: ModelRequest = {
  system: 'Answer briefly.',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What is the most popular song on WZPZ?' }] }],
  tools: [],
};

function modelOver(responses: RecordedResponse[], options: { hold?: boolean; maxDurationMs?: number } = {}) {
  const { client, sent } = recordedBedrockClient(responses, options);
  const model = new BedrockModelClient({ modelId: MODEL_ID, client, maxDurationMs: options.maxDurationMs ?? 5_000 });
  return { model, sent };
}

async function conversingError(model: BedrockModelClient): Promise<StepError> {
  const error = await model.converse(shortRequest, new AbortController().signal).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StepError);
  return error as StepError;
}

describe('BedrockModelClient request mapping', () => {
  it('sends a transcript of text, toolUse and toolResult as the documented Converse request', async () => {
    // Arrange
    const expected = loadFixture<{ path: string; body: unknown }>('converse-request-tool-round-trip.json');
    const { client, sent } = recordedBedrockClient([loadFixture('converse-response-end-turn.json')]);
    const model = new BedrockModelClient({
      modelId: MODEL_ID,
      client,
      maxDurationMs: 5_000,
      maxTokens: 2000,
      temperature: 0,
    });

    // Act
    await model.converse(roundTripRequest, new AbortController().signal);

    // Assert
    expect(sent).toHaveLength(1);
    expect(sent[0]?.method).toBe('POST');
    expect(sent[0]?.path).toBe(expected.path);
    expect(sent[0]?.body).toEqual(expected.body);
  });

  it('marks a failed tool call as an error result and wraps non-object outputs in an object', async () => {
    // Arrange
    const { model, sent } = modelOver([loadFixture('converse-response-end-turn.json')]);
    const request: ModelRequest = {
      ...roundTripRequest,
      messages: [
        ...roundTripRequest.messages.slice(0, 2),
        {
          role: 'user',
          content: [
            { type: 'toolResult', toolCallId: TOOL_USE_ID, ok: false, output: { error: 'Station WZPA not found.' } },
            { type: 'toolResult', toolCallId: 'tooluse_second', ok: true, output: ['a', 'b'] },
            { type: 'toolResult', toolCallId: 'tooluse_third', ok: true, output: 'plain text' },
          ],
        },
      ],
    };

    // Act
    await model.converse(request, new AbortController().signal);

    // Assert
    const body = sent[0]?.body as { messages: Array<{ content: unknown[] }> };
    expect(body.messages[2]?.content).toEqual([
      {
        toolResult: {
          toolUseId: TOOL_USE_ID,
          content: [{ json: { error: 'Station WZPA not found.' } }],
          status: 'error',
        },
      },
      { toolResult: { toolUseId: 'tooluse_second', content: [{ json: { result: ['a', 'b'] } }], status: 'success' } },
      { toolResult: { toolUseId: 'tooluse_third', content: [{ text: 'plain text' }], status: 'success' } },
    ]);
  });

  it('leaves out toolConfig and inferenceConfig when there are no tools and no settings', async () => {
    // Arrange
    const { model, sent } = modelOver([loadFixture('converse-response-end-turn.json')]);

    // Act
    await model.converse(shortRequest, new AbortController().signal);

    // Assert
    expect(sent[0]?.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'What is the most popular song on WZPZ?' }] }],
      system: [{ text: 'Answer briefly.' }],
    });
  });
});

describe('BedrockModelClient response mapping', () => {
  it('keeps every toolUse block of one response as tool calls, in order, beside the text', async () => {
    // Arrange
    const { model } = modelOver([loadFixture('converse-response-two-tool-uses.json')]);

    // Act
    const response = await model.converse(roundTripRequest, new AbortController().signal);

    // Assert
    expect(response).toEqual({
      text: "I'll check both stations.",
      toolCalls: [
        { id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', name: 'top_song', input: { sign: 'WZPZ' } },
        { id: 'tooluse_8XcW2lY1T8mJq0v3QyHk9A', name: 'top_song', input: { sign: 'WKRP' } },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 375, outputTokens: 97 },
    });
  });

  it('returns the final text, end_turn and the token usage of a finished answer', async () => {
    // Arrange
    const { model } = modelOver([loadFixture('converse-response-end-turn.json')]);

    // Act
    const response = await model.converse(shortRequest, new AbortController().signal);

    // Assert
    expect(response).toEqual({
      text: 'The most popular song on WZPZ is Elemental Hotel by 8 Storey Hike.',
      toolCalls: [],
      stopReason: 'end_turn',
      usage: { inputTokens: 442, outputTokens: 19 },
    });
  });

  it('passes a max_tokens stop reason through for the runtime to judge', async () => {
    // Arrange
    const { model } = modelOver([loadFixture('converse-response-max-tokens.json')]);

    // Act
    const response = await model.converse(shortRequest, new AbortController().signal);

    // Assert
    expect(response.stopReason).toBe('max_tokens');
    expect(response.text).toBe('The most popular');
    expect(response.usage).toEqual({ inputTokens: 120, outputTokens: 4 });
  });
});

describe('BedrockModelClient error classification', () => {
  it('turns a throttling answer into a retryable StepError that keeps the SDK error as its cause', async () => {
    // Arrange
    const { model } = modelOver([loadFixture('error-throttling.json')]);

    // Act
    const error = await conversingError(model);

    // Assert
    expect(error.retryable).toBe(true);
    expect(error.cause).toBeInstanceOf(ThrottlingException);
    expect(error.message).toContain(MODEL_ID);
    expect(error.message).toContain('Too many requests');
  });

  it('turns a validation answer into a terminal StepError naming the model and the error', async () => {
    // Arrange
    const { model } = modelOver([loadFixture('error-validation.json')]);

    // Act
    const error = await conversingError(model);

    // Assert
    expect(error.retryable).toBe(false);
    expect(error.cause).toBeInstanceOf(ValidationException);
    expect(error.message).toBe(
      `model ${MODEL_ID}: ValidationException: A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.`,
    );
  });

  it.each([
    ['error-service-unavailable.json', true],
    ['error-internal-server.json', true],
    ['error-model-not-ready.json', true],
    ['error-model-error-5xx.json', true],
    ['error-model-error-4xx.json', false],
    ['error-access-denied.json', false],
    ['error-resource-not-found.json', false],
  ])('classifies %s as retryable: %s', async (fixture, retryable) => {
    // Arrange
    const { model } = modelOver([loadFixture(fixture)]);

    // Act
    const error = await conversingError(model);

    // Assert
    expect(error.retryable).toBe(retryable);
  });

  it('treats a failure before any answer (no service error) as retryable', async () => {
    // Arrange: an empty recording makes the handler throw, as a reset socket would.
    const { model } = modelOver([]);

    // Act
    const error = await conversingError(model);

    // Assert
    expect(error.retryable).toBe(true);
  });
});

describe('BedrockModelClient cancellation', () => {
  it('hands the abort signal to the SDK, so aborting the caller aborts the request in flight', async () => {
    // Arrange
    const { model, sent } = modelOver([loadFixture('converse-response-end-turn.json')], { hold: true });
    const controller = new AbortController();
    const pending = model.converse(shortRequest, controller.signal);
    await vi.waitFor(() => expect(sent).toHaveLength(1));

    // Act
    controller.abort(new Error('budget spent'));

    // Assert
    await expect(pending).rejects.toThrow('budget spent');
    expect(sent[0]?.abortSignal?.aborted).toBe(true);
  });

  it('aborts a call that outlives maxDurationMs and reports it as retryable', async () => {
    // Arrange
    const { model } = modelOver([loadFixture('converse-response-end-turn.json')], { hold: true, maxDurationMs: 50 });

    // Act
    const error = await conversingError(model);

    // Assert
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(`model ${MODEL_ID} did not answer within 50 ms`);
  });
});

describe('toolSpecFromZod', () => {
  it('builds a Converse tool spec whose JSON schema has no $schema key', () => {
    // Act
    const spec = toolSpecFromZod('lookup_order', 'Finds an order by id', z.object({ orderId: z.string() }));

    // Assert
    expect(spec).toEqual({
      name: 'lookup_order',
      description: 'Finds an order by id',
      inputSchema: {
        json: {
          type: 'object',
          properties: { orderId: { type: 'string' } },
          required: ['orderId'],
          additionalProperties: false,
        },
      },
    });
  });
});

describe('BedrockModelClient streaming (ConverseStream)', () => {
  const frames: StreamFrame[] = [
    { event: 'messageStart', payload: { role: 'assistant' } },
    { event: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { text: "I'll look " } } },
    { event: 'contentBlockDelta', payload: { contentBlockIndex: 0, delta: { text: 'it up.' } } },
    { event: 'contentBlockStop', payload: { contentBlockIndex: 0 } },
    {
      event: 'contentBlockStart',
      payload: { contentBlockIndex: 1, start: { toolUse: { toolUseId: TOOL_USE_ID, name: 'top_song' } } },
    },
    { event: 'contentBlockDelta', payload: { contentBlockIndex: 1, delta: { toolUse: { input: '{"sign":' } } } },
    { event: 'contentBlockDelta', payload: { contentBlockIndex: 1, delta: { toolUse: { input: '"WZPZ"}' } } } },
    { event: 'contentBlockStop', payload: { contentBlockIndex: 1 } },
    { event: 'messageStop', payload: { stopReason: 'tool_use' } },
    {
      event: 'metadata',
      payload: { usage: { inputTokens: 30, outputTokens: 12, totalTokens: 42 }, metrics: { latencyMs: 400 } },
    },
  ];

  it('streams text to the sink and answers what Converse would: text, tool calls, stop reason, usage', async () => {
    // Arrange
    const { client, sent } = recordedBedrockClient([streamResponse(frames)]);
    const model = new BedrockModelClient({ modelId: MODEL_ID, client, maxDurationMs: 5_000, stream: true });
    const deltas: string[] = [];

    // Act
    const response = await model.converse(roundTripRequest, new AbortController().signal, {
      text: (delta) => deltas.push(delta),
    });

    // Assert
    expect(sent[0]?.path).toBe(`/model/${encodeURIComponent(MODEL_ID)}/converse-stream`);
    expect(deltas).toEqual(["I'll look ", 'it up.']);
    expect(response).toEqual({
      text: "I'll look it up.",
      toolCalls: [{ id: TOOL_USE_ID, name: 'top_song', input: { sign: 'WZPZ' } }],
      stopReason: 'tool_use',
      usage: { inputTokens: 30, outputTokens: 12 },
    });
  });

  it('classifies an exception in the stream like a thrown one', async () => {
    // Arrange: text arrives, then the service throttles mid-stream.
    const { client } = recordedBedrockClient([
      streamResponse([
        frames[0] as StreamFrame,
        frames[1] as StreamFrame,
        { exception: 'throttlingException', payload: { message: 'Too many tokens, please wait.' } },
      ]),
    ]);
    const model = new BedrockModelClient({ modelId: MODEL_ID, client, maxDurationMs: 5_000, stream: true });

    // Act
    const error = await model.converse(roundTripRequest, new AbortController().signal).catch((e: unknown) => e);

    // Assert
    expect(error).toBeInstanceOf(StepError);
    expect((error as StepError).retryable).toBe(true);
    expect((error as StepError).message).toContain('Too many tokens');
  });
});

describe('BedrockModelClient context window and token count', () => {
  it("defaults its context window to its family's published one, unless given one", () => {
    // Arrange
    const { client } = recordedBedrockClient([]);
    const profile = 'eu.anthropic.claude-sonnet-4-5-20250929-v1:0';

    // Act
    const known = new BedrockModelClient({ modelId: profile, client, maxDurationMs: 5_000 });
    const given = new BedrockModelClient({
      modelId: profile,
      client,
      maxDurationMs: 5_000,
      contextWindowTokens: 8_000,
    });
    const unknown = new BedrockModelClient({ modelId: 'acme.house-model-v1:0', client, maxDurationMs: 5_000 });

    // Assert
    expect(known.contextWindowTokens).toBe(200_000);
    expect(given.contextWindowTokens).toBe(8_000);
    expect(unknown.contextWindowTokens).toBeUndefined();
  });

  it("asks CountTokens of the profile's foundation model with the Converse request's messages, system and tools", async () => {
    // Arrange
    const { client, sent } = recordedBedrockClient([
      {
        source: 'CountTokens API reference',
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: { inputTokens: 417 },
      },
    ]);
    const model = new BedrockModelClient({ modelId: `us.${MODEL_ID}`, client, maxDurationMs: 5_000 });

    // Act
    const tokens = await model.countTokens?.(roundTripRequest, new AbortController().signal);

    // Assert
    expect(tokens).toBe(417);
    expect(sent[0]?.path).toBe(`/model/${encodeURIComponent(MODEL_ID)}/count-tokens`);
    const body = sent[0]?.body as { input: { converse: Record<string, unknown> } };
    expect(Object.keys(body.input.converse).sort()).toEqual(['messages', 'system', 'toolConfig']);
  });

  it('offers a token count only for the models CountTokens serves, unless told', () => {
    // Arrange
    const { client } = recordedBedrockClient([]);
    const nova = { modelId: 'amazon.nova-pro-v1:0', client, maxDurationMs: 5_000 };

    // Act / Assert
    expect(new BedrockModelClient(nova).countTokens).toBeUndefined();
    expect(new BedrockModelClient({ ...nova, countTokens: true }).countTokens).toBeTypeOf('function');
    expect(new BedrockModelClient({ ...nova, modelId: MODEL_ID, countTokens: false }).countTokens).toBeUndefined();
  });
});
