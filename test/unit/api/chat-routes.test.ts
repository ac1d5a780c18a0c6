import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStreamSlots } from '../../../lib/adapters/memory/memory-stream-slots.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, toolResults } from '../../../lib/agent/scripted-model.ts';
import { UNANSWERED } from '../../../lib/agent/transcript.ts';
import { createApiHandler } from '../../../lib/api/api-handler.ts';
import type { Caller } from '../../../lib/api/caller.ts';
import type { BatonClient } from '../../../lib/client/baton-client.ts';
import { ALL_ROLES, type Role } from '../../../lib/core/roles.ts';
import { chatter, memoryStack } from '../../fixtures/memory-stack.ts';

/** A conversation whose first reply asks for a call a human approves, then answers with its result. */
const approver = defineAgent({
  name: 'approver',
  instructions: 'Ask before refunding.',
  conversation: true,
  input: z.object({ text: z.string() }),
  tools: [
    defineTool({
      name: 'refund',
      description: 'Refunds an order',
      input: z.object({ order: z.string() }),
      effect: 'idempotent',
      maxDurationMs: 1_000,
      requiresApproval: true,
      run: async ({ order }) => ({ refunded: order }),
    }),
  ],
  model: scriptedModel({
    maxDurationMs: 1_000,
    script: (messages) => {
      const result = toolResults(messages).get('r1');
      if (result === undefined)
        return {
          text: 'I will refund it once approved.',
          toolCalls: [{ id: 'r1', name: 'refund', input: { order: 'A7' } }],
        };
      return { final: `Refund done: ${JSON.stringify(result.output)}` };
    },
  }),
});

const caller = (tenants: string[], roles: readonly Role[] = ALL_ROLES): Caller => ({
  principal: `p-${tenants.join('-')}`,
  tenants,
  roles,
});

/** The API over the in-memory runtime: a submit or send runs to its end (or its wait) before it answers. */
function chatApi() {
  const stack = memoryStack([chatter, approver]);
  let who = caller(['acme']);
  const api = createApiHandler({
    services: {
      client: stack.eager as BatonClient,
      store: stack.store,
      clock: stack.clock,
      // As a function URL: each answer is one round, sent whole.
      eventsWaitMs: 0,
      eventsPollMs: 10,
      streams: new MemoryStreamSlots(),
      streamsPerCaller: 4,
    },
    resolveCaller: () => who,
  });
  const call = async (method: string, path: string, body?: unknown, query = '') => {
    const answer = await api({
      requestContext: { http: { method } },
      rawPath: path,
      rawQueryString: query,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    } as unknown as LambdaFunctionURLEvent);
    if (typeof answer === 'string') throw new Error('the API answered a bare string');
    const text = answer.body ?? '';
    const chunks = text
      .split('\n\n')
      .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
      .map((line) => JSON.parse(line.slice('data: '.length)) as { type: string } & Record<string, unknown>);
    /** The answer's metadata as its first chunk (`start`) or its last (a pause's) carries it. */
    const metadata = (at: number) =>
      (chunks.at(at)?.messageMetadata ?? {}) as { sessionId?: string; turnId?: string; cursor?: string };
    return { status: answer.statusCode, headers: answer.headers ?? {}, text, chunks, metadata };
  };
  const as = (tenants: string[], roles: readonly Role[] = ALL_ROLES) => {
    who = caller(tenants, roles);
  };
  return { stack, call, as };
}

const user = (id: string, text: string) => ({ id, role: 'user', parts: [{ type: 'text', text }] });
const assistant = (id: string, text: string) => ({ id, role: 'assistant', parts: [{ type: 'text', text }] });
const answerText = (chunks: Array<Record<string, unknown>>) =>
  chunks
    .filter((c) => c.type === 'text-delta')
    .map((c) => c.delta)
    .join('');

describe('browser chat over the API (issue 25 item 7)', () => {
  it('takes a message as one turn however often it is posted, and streams its answer as a UI message stream', async () => {
    // Arrange
    const { call, stack } = chatApi();
    const first = { id: 'chat-1', messages: [user('m1', 'hello')] };
    const second = {
      id: 'chat-1',
      messages: [user('m1', 'hello'), assistant('answer-chat-1', 'echo 1: hello'), user('m2', 'again')],
    };

    // Act: each POST twice, as a retry after a lost answer would.
    const a = await call('POST', '/agents/chatter/chat', first);
    const aAgain = await call('POST', '/agents/chatter/chat', first);
    const b = await call('POST', '/agents/chatter/chat', second);
    const bAgain = await call('POST', '/agents/chatter/chat', second);

    // Assert
    expect(a.status).toBe(200);
    expect(a.headers['x-vercel-ai-ui-message-stream']).toBe('v1');
    expect(a.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(a.chunks[0]).toMatchObject({ type: 'start', messageId: 'answer-chat-1' });
    expect(a.chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
    expect([answerText(a.chunks), answerText(aAgain.chunks)]).toEqual(['echo 1: hello', 'echo 1: hello']);
    expect([answerText(b.chunks), answerText(bAgain.chunks)]).toEqual(['echo 2: again', 'echo 2: again']);
    const sessionId = a.metadata(0).sessionId as string;
    const record = await stack.store.findSession(sessionId);
    const turns = await stack.store.listTurns(record?.key as NonNullable<typeof record>['key']);
    expect(turns.map((t) => t.turnId)).toEqual(['chat-1', 'm2']);
  });

  it('resumes by cursor: a paused answer continues from where it paused, without repeating what was sent', async () => {
    // Arrange: the turn waits for an approval, so its answer pauses mid-turn.
    const { call, stack } = chatApi();
    const posted = await call('POST', '/agents/approver/chat', { id: 'chat-2', messages: [user('m1', 'refund A7')] });
    const paused = posted.chunks.at(-1) as {
      type: string;
      messageMetadata: { cursor: string; turnId: string; sessionId: string };
    };

    // Act
    const replay = await call('GET', '/agents/approver/chat/chat-2/stream');
    await stack.eager.approve(paused.messageMetadata.sessionId as string, 'r1', { approved: true });
    await stack.pump();
    const nothingRunning = await call('GET', '/agents/approver/chat/chat-2/stream');
    const rest = await call(
      'GET',
      '/agents/approver/chat/chat-2/stream',
      undefined,
      `turn=${paused.messageMetadata.turnId}&after=${paused.messageMetadata.cursor}`,
    );

    // Assert
    expect(paused.type).toBe('message-metadata');
    expect(answerText(posted.chunks)).toBe('I will refund it once approved.');
    expect(posted.chunks).toContainEqual(
      expect.objectContaining({ type: 'tool-input-available', toolName: 'refund', input: { order: 'A7' } }),
    );
    expect(posted.chunks.some((c) => c.type === 'finish')).toBe(false);
    // A reconnect without a cursor replays the running turn from its start (useChat resets the message to it).
    expect(answerText(replay.chunks)).toBe('I will refund it once approved.');
    expect(nothingRunning.status).toBe(204);
    expect(answerText(rest.chunks)).toBe('Refund done: {"refunded":"A7"}');
    expect(rest.chunks).toContainEqual(
      expect.objectContaining({ type: 'tool-output-available', toolCallId: 'r1', output: { refunded: 'A7' } }),
    );
    expect(rest.chunks.some((c) => c.type === 'tool-input-available')).toBe(false);
    expect(rest.chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });
  });

  it('gives a reload the conversation so far, and keeps each tenant’s chats apart', async () => {
    // Arrange
    const { call, as } = chatApi();
    await call('POST', '/agents/chatter/chat', { id: 'chat-3', messages: [user('m1', 'for acme')] });

    // Act
    const history = await call('GET', '/agents/chatter/chat/chat-3');
    as(['globex']);
    const otherTenant = await call('GET', '/agents/chatter/chat/chat-3');
    const otherStream = await call('GET', '/agents/chatter/chat/chat-3/stream');
    const ownChat = await call('POST', '/agents/chatter/chat', { id: 'chat-3', messages: [user('m1', 'for globex')] });

    // Assert
    const body = JSON.parse(history.text);
    expect(body.messages).toEqual([
      { id: 'chat-3', role: 'user', parts: [{ type: 'text', text: 'for acme', state: 'done' }] },
      expect.objectContaining({
        id: 'answer-chat-3',
        role: 'assistant',
        parts: [{ type: 'step-start' }, { type: 'text', text: 'echo 1: for acme', state: 'done' }],
      }),
    ]);
    expect(otherTenant.status).toBe(404);
    expect(otherStream.status).toBe(204);
    expect(answerText(ownChat.chunks)).toBe('echo 1: for globex');
    expect(ownChat.metadata(0).sessionId).not.toBe(body.sessionId);
  });

  it('stops the chat’s running turn alone: its stream finishes, and the next message is a new turn that is answered', async () => {
    // Arrange: the turn waits for an approval, its refund call asked for and not run.
    const { call, stack } = chatApi();
    const posted = await call('POST', '/agents/approver/chat', { id: 'chat-4', messages: [user('m1', 'refund A7')] });
    const { turnId } = posted.metadata(-1);

    // Act
    const stop = await call('POST', '/agents/approver/chat/chat-4/stop', undefined, `turn=${turnId}`);
    await stack.pump();
    const again = await call('POST', '/agents/approver/chat/chat-4/stop', undefined, `turn=${turnId}`);
    const idle = await call('POST', '/agents/approver/chat/chat-4/stop');
    const end = await call('GET', '/agents/approver/chat/chat-4/stream', undefined, `turn=${turnId}`);
    const next = await call('POST', '/agents/approver/chat', {
      id: 'chat-4',
      messages: [user('m1', 'refund A7'), assistant(`answer-${turnId}`, '…'), user('m2', 'and another')],
    });

    // Assert
    expect([stop.status, JSON.parse(stop.text)]).toEqual([
      202,
      { sessionId: posted.metadata(0).sessionId, turnId, result: 'requested' },
    ]);
    expect([again.status, JSON.parse(again.text).result]).toEqual([200, 'already-ended']);
    expect([idle.status, JSON.parse(idle.text).result]).toEqual([200, 'already-ended']);
    expect(end.chunks.at(-1)).toMatchObject({
      type: 'finish',
      finishReason: 'other',
      messageMetadata: { turnId, outcome: 'cancelled', stopped: true },
    });
    expect(next.status).toBe(200);
    expect(next.chunks.at(-1)).toMatchObject({ type: 'finish' });
    // The next turn's transcript answers the stopped turn's call: it was never run.
    expect(answerText(next.chunks)).toBe(`Refund done: ${JSON.stringify({ error: UNANSWERED })}`);
    const status = await stack.eager.status(posted.metadata(0).sessionId ?? '');
    expect(status?.status).not.toBe('cancelled');
  });

  it('refuses what it cannot take as a turn, naming what is wrong', async () => {
    const { call } = chatApi();
    const noText = await call('POST', '/agents/chatter/chat', {
      id: 'c',
      messages: [{ id: 'm', role: 'user', parts: [{ type: 'file' }] }],
    });
    const lastIsAnswer = await call('POST', '/agents/chatter/chat', { id: 'c', messages: [assistant('a', 'hi')] });
    const regenerate = await call('POST', '/agents/chatter/chat', {
      id: 'c',
      trigger: 'regenerate-message',
      messages: [user('m', 'hi')],
    });
    const badCursor = await call('GET', '/agents/chatter/chat/c/stream', undefined, 'after=abc');
    expect([noText.status, JSON.parse(noText.text).error.message]).toEqual([400, 'message m has no text']);
    expect(JSON.parse(lastIsAnswer.text).error.message).toMatch(/last message must be the user's new message/);
    expect(JSON.parse(regenerate.text).error.message).toMatch(/regenerate is not supported/);
    expect(JSON.parse(badCursor.text).error.message).toMatch(/after must be a cursor/);
  });

  it('needs the roles of what it does: converse and read for a message, submit too for the first, operate to stop', async () => {
    // Arrange
    const { call, as } = chatApi();
    const first = { id: 'chat-5', messages: [user('m1', 'hi')] };
    const later = {
      id: 'chat-5',
      messages: [user('m1', 'hi'), assistant('answer-chat-5', 'echo 1: hi'), user('m2', 'more')],
    };

    // Act
    as(['acme'], ['converse', 'read']);
    const firstWithoutSubmit = await call('POST', '/agents/chatter/chat', first);
    as(['acme'], ['submit', 'converse']);
    const withoutRead = await call('POST', '/agents/chatter/chat', first);
    as(['acme'], ['submit', 'converse', 'read']);
    const started = await call('POST', '/agents/chatter/chat', first);
    as(['acme'], ['converse', 'read']);
    const laterWithoutSubmit = await call('POST', '/agents/chatter/chat', later);
    const stopWithoutOperate = await call('POST', '/agents/chatter/chat/chat-5/stop');

    // Assert
    const refusal = (a: { status?: number | undefined; text: string }) => [a.status, JSON.parse(a.text).error?.message];
    expect(refusal(firstWithoutSubmit)).toEqual([403, expect.stringContaining("lacks the role 'submit'")]);
    expect(refusal(withoutRead)).toEqual([403, expect.stringContaining("lacks the role 'read'")]);
    expect(answerText(started.chunks)).toBe('echo 1: hi');
    expect(answerText(laterWithoutSubmit.chunks)).toBe('echo 2: more');
    expect(refusal(stopWithoutOperate)).toEqual([403, expect.stringContaining("lacks the role 'operate'")]);
  });
});
