import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { conversationMessages } from '../../../lib/api/chat-history.ts';
import { TurnStreamMapper, type UiChunk } from '../../../lib/api/ui-message-stream.ts';
import type { FollowEvent, SessionEvent } from '../../../lib/client/baton-client.ts';

const ids = { sessionId: 'S1', turnId: 'T1' };

const entry = (seq: number, kind: SessionEvent['kind'], data: unknown, turnId = 'T1'): SessionEvent => ({
  cursor: seq,
  seq,
  kind,
  epoch: 1,
  at: '2026-12-02T00:00:00.000Z',
  turnId,
  data,
});
const live = (seq: number, chunk: number, text: string, turnId = 'T1'): FollowEvent => ({
  kind: 'model-text',
  seq,
  turnId,
  chunk,
  text,
});
const model = (seq: number, text: string | undefined, toolCalls: unknown[] = []) =>
  entry(seq, 'model', {
    ...(text === undefined ? {} : { text }),
    toolCalls,
    stopReason: toolCalls.length ? 'tool_use' : 'end_turn',
    usage: { inputTokens: 1, outputTokens: 1 },
  });

/** The chunks as the AI SDK's own reader folds them: the message useChat would show (throws on a protocol error). */
async function asUseChatWouldRead(chunks: UiChunk[]): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk as UIMessageChunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, terminateOnError: true })) last = message;
  if (last === undefined) throw new Error('the stream made no message');
  return last;
}

const mapAll = (events: FollowEvent[], mapper = new TurnStreamMapper(ids)) => events.flatMap((e) => mapper.map(e));

describe('a turn as an AI SDK UI message stream', () => {
  it('streams live text as deltas and sends only the rest when the model entry comes, then finishes', async () => {
    // Arrange
    const events = [
      entry(3, 'input', { input: { text: 'hi' } }),
      live(4, 0, 'Hel'),
      live(4, 1, 'lo, '),
      model(4, 'Hello, world.'),
      entry(5, 'outcome', { status: 'completed', output: 'Hello, world.' }),
    ];

    // Act
    const chunks = mapAll(events);
    const message = await asUseChatWouldRead(chunks);

    // Assert
    expect(chunks.filter((c) => c.type === 'text-delta').map((c) => (c as { delta: string }).delta)).toEqual([
      'Hel',
      'lo, ',
      'world.',
    ]);
    expect(chunks[0]).toEqual({ type: 'start', messageId: 'answer-T1', messageMetadata: ids });
    expect(chunks.at(-1)).toMatchObject({
      type: 'finish',
      finishReason: 'stop',
      messageMetadata: { outcome: 'completed' },
    });
    expect(message.id).toBe('answer-T1');
    expect(message.parts.filter((p) => p.type === 'text')).toEqual([
      { type: 'text', text: 'Hello, world.', state: 'done' },
    ]);
  });

  it('shows a tool call with its input and then its output, and an error result as an error', async () => {
    // Arrange
    const events = [
      model(2, 'Looking.', [
        { id: 'c1', name: 'lookup', input: { q: 'x' } },
        { id: 'c2', name: 'broken', input: {} },
      ]),
      entry(3, 'tool', { callId: 'c1', tool: 'lookup', ok: true, output: { found: 1 } }),
      entry(4, 'tool', { callId: 'c2', tool: 'broken', ok: false, error: 'no such row' }),
      model(5, 'Found one.'),
      entry(6, 'outcome', { status: 'completed' }),
    ];

    // Act
    const message = await asUseChatWouldRead(mapAll(events));

    // Assert
    const tools = message.parts.filter((p) => p.type === 'dynamic-tool');
    expect(tools).toEqual([
      expect.objectContaining({
        toolName: 'lookup',
        toolCallId: 'c1',
        state: 'output-available',
        input: { q: 'x' },
        output: { found: 1 },
      }),
      expect.objectContaining({
        toolName: 'broken',
        toolCallId: 'c2',
        state: 'output-error',
        errorText: 'no such row',
      }),
    ]);
    expect(message.parts.filter((p) => p.type === 'step-start')).toHaveLength(2);
    expect(message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual([
      'Looking.',
      'Found one.',
    ]);
  });

  it('ignores other turns’ events and bookkeeping entries', () => {
    const chunks = mapAll(
      [
        entry(1, 'leg', { owner: 'o', reason: 'first', traceparent: 't' }),
        live(2, 0, 'other turn', 'T0'),
        model(2, 'other turn', []),
      ].map((e) => ({ ...e, turnId: 'T0' })),
    );
    expect(chunks).toEqual([]);
  });

  it('sends the journaled text whole when the live text was of an attempt that was not journaled', async () => {
    const chunks = mapAll([
      live(4, 0, 'Draft that died'),
      model(4, 'Final answer'),
      entry(5, 'outcome', { status: 'completed' }),
    ]);
    const message = await asUseChatWouldRead(chunks);
    expect(message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual([
      'Draft that died',
      'Final answer',
    ]);
  });

  it('says why a failed turn failed as an error, and ends a cancelled one as an abort', async () => {
    const failed = mapAll([entry(5, 'outcome', { status: 'failed', error: 'step limit of 3 reached' })]);
    const cancelled = mapAll([entry(5, 'outcome', { status: 'cancelled' })]);
    expect(failed.at(-1)).toEqual({ type: 'error', errorText: 'the turn failed: step limit of 3 reached' });
    await expect(asUseChatWouldRead(failed)).rejects.toThrow('the turn failed: step limit of 3 reached');
    expect(cancelled.at(-1)).toEqual({ type: 'abort', reason: 'the turn was cancelled' });
  });

  it('finishes a stopped turn (a stop of that turn alone) with what it had said, its metadata saying so', async () => {
    // Arrange
    const events = [
      model(4, 'Half an'),
      entry(5, 'outcome', { status: 'cancelled', error: 'turn stopped by request', stopped: true }),
    ];

    // Act
    const chunks = mapAll(events);
    const message = await asUseChatWouldRead(chunks);

    // Assert
    expect(chunks.at(-1)).toEqual({
      type: 'finish',
      finishReason: 'other',
      messageMetadata: { ...ids, outcome: 'cancelled', stopped: true },
    });
    expect(message.parts.filter((p) => p.type === 'text').map((p) => p.text)).toEqual(['Half an']);
    expect(message.metadata).toMatchObject({ outcome: 'cancelled', stopped: true });
  });

  it('pauses with the cursor to continue from, and a continuation sends only the text the client had not', async () => {
    // Arrange: the first response saw two chunks of the response at seq 4, then paused.
    const first = new TurnStreamMapper(ids);
    const before = [...mapAll([live(4, 0, 'Hel'), live(4, 1, 'lo, ')], first), ...first.pause('3.1')];
    const next = new TurnStreamMapper(ids, { partPrefix: 'text-r3' });
    next.continueAfter(4, 'Hello, ');

    // Act
    const after = mapAll(
      [live(4, 2, 'wor'), model(4, 'Hello, world.'), entry(5, 'outcome', { status: 'completed' })],
      next,
    );
    const message = await asUseChatWouldRead([...before, ...after.filter((c) => c.type !== 'start')]);

    // Assert
    expect(before.at(-1)).toEqual({ type: 'message-metadata', messageMetadata: { ...ids, cursor: '3.1' } });
    expect(
      message.parts
        .filter((p) => p.type === 'text')
        .map((p) => (p as { text: string }).text)
        .join(''),
    ).toBe('Hello, world.');
  });

  it('rebuilds a conversation’s messages from its journal: inputs, and the answers of ended turns only', () => {
    const messages = conversationMessages('S1', [
      entry(1, 'input', { input: { text: 'first' } }, 'T1'),
      model(2, 'one'),
      entry(3, 'outcome', { status: 'completed' }, 'T1'),
      entry(4, 'input', { input: { text: 'second' } }, 'T2'),
      { ...model(5, 'partial'), turnId: 'T2' },
    ]);
    expect(messages).toEqual([
      { id: 'T1', role: 'user', parts: [{ type: 'text', text: 'first', state: 'done' }] },
      {
        id: 'answer-T1',
        role: 'assistant',
        parts: [{ type: 'step-start' }, { type: 'text', text: 'one', state: 'done' }],
        metadata: { sessionId: 'S1', turnId: 'T1', outcome: 'completed' },
      },
      { id: 'T2', role: 'user', parts: [{ type: 'text', text: 'second', state: 'done' }] },
    ]);
  });
});
