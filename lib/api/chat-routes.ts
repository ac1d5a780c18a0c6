import * as z from 'zod';
import { type LivePosition, toModelText } from '../client/baton-client.ts';
import { NotFoundError, TicketConflictError, TurnRefusedError } from '../core/errors.ts';
import { deriveSessionId, NAME_PATTERN } from '../core/ids.ts';
import { TicketId } from '../core/messages.ts';
import { OPERATION_ROLES, type Role, roleRefusal } from '../core/roles.ts';
import { TERMINAL_SESSION_STATES } from '../core/vocabulary.ts';
import type { SessionRecord } from '../ports/session-store.ts';
import { ApiError, type ApiErrorCode } from './api-errors.ts';
import { ErrorBody } from './api-schemas.ts';
import { type Caller, canSee, tenantFor } from './caller.ts';
import { conversationMessages } from './chat-history.ts';
import { defineRoute, type Route, type RouteContext, type RouteResult } from './route.ts';
import { SSE_CONTENT_TYPE } from './sse.ts';
import { openStreamSlot } from './stream-slot.ts';
import {
  TurnStreamMapper,
  UI_MESSAGE_STREAM_HEADERS,
  UI_STREAM_DONE,
  type UiChunk,
  uiChunkLine,
} from './ui-message-stream.ts';

/**
 * Browser chat: a conversation as the AI SDK's `useChat` speaks to a server. The chat's id is
 * the conversation's ticket id (its session id derives from it, the tenant and the agent), each
 * user message is a turn, and the answer is that turn's journal and live text as a UI message
 * stream. Paths follow the transport's defaults, so `new DefaultChatTransport({ api })` with
 * `api = …/agents/{agent}/chat` needs nothing else: POST `api`, reconnect GET `api/{chatId}/stream`.
 */

/** How long one streamed answer may run where the server streams; then it pauses, and a reconnect continues it. */
const CHAT_STREAM_MS = 10 * 60_000;
/** Entries per journal read while a turn streams. */
const ENTRIES_PER_READ = 200;
/** Entries read at most to rebuild a conversation's messages. */
const HISTORY_ENTRIES_MAX = 20_000;

const ChatParams = z.object({
  agent: z.string().regex(NAME_PATTERN, `agent must match ${NAME_PATTERN}`),
});
const ChatIdParams = ChatParams.extend({ chatId: TicketId });

/** A UI message part as useChat sends it: only `text` parts are read; the rest are carried and ignored. */
const ChatPartIn = z.looseObject({ type: z.string().min(1).max(100), text: z.string().optional() });
const ChatMessageIn = z.looseObject({
  id: z.string().min(1).max(256),
  role: z.enum(['system', 'user', 'assistant']),
  parts: z.array(ChatPartIn).max(1_000),
});

/** POST …/chat: what DefaultChatTransport sends (the chat id and its messages), and the tenant when the caller has several. */
export const ChatBody = z
  .looseObject({
    id: TicketId,
    messages: z.array(ChatMessageIn).min(1).max(10_000),
    trigger: z.enum(['submit-message', 'regenerate-message']).optional(),
    messageId: z.string().max(256).optional(),
    tenant: z.string().min(1).max(128).optional(),
  })
  .meta({ id: 'ChatBody' });

const StreamQuery = z
  .object({
    /** Continue after this position (a `cursor` from the answer's metadata) rather than from the turn's start. */
    after: z
      .string()
      .regex(/^\d{1,15}(?:\.\d{1,6})?$/, 'after must be a cursor from the answer’s metadata (C or C.K)')
      .optional(),
    /** The turn to continue (the answer's metadata `turnId`), running or ended; default the running one. */
    turn: z.string().min(1).max(256).optional(),
    tenant: z.string().min(1).max(128).optional(),
  })
  .strict();
const TenantQuery = z.object({ tenant: z.string().min(1).max(128).optional() }).strict();
/** POST …/stop: the turn to stop (the answer's metadata `turnId`); default the running one. */
const ChatStopQuery = TenantQuery.extend({ turn: z.string().min(1).max(256).optional() }).strict();

const ChatHistoryView = z
  .object({
    sessionId: z.string(),
    /** The turn running now, if any: the page's reconnect streams it. */
    activeTurnId: z.string().optional(),
    messages: z.array(
      z.looseObject({ id: z.string(), role: z.enum(['user', 'assistant']), parts: z.array(z.unknown()) }),
    ),
  })
  .meta({ id: 'ChatHistory' });

const errors = {
  400: { description: 'invalid request', schema: ErrorBody },
  401: { description: 'no caller', schema: ErrorBody },
  403: { description: 'the caller may not use this tenant, or lacks a role (`missing_role`)', schema: ErrorBody },
  404: { description: 'no such conversation (or not one of the caller’s tenants)', schema: ErrorBody },
} as const;

const UI_STREAM_DESCRIPTION =
  'the turn’s answer as an AI SDK UI message stream (`data: <chunk JSON>` lines, `data: [DONE]` last; header `x-vercel-ai-ui-message-stream: v1`)';

/** Every role of `roles` the caller holds, or a refusal naming the first it lacks. */
function requireRoles(caller: Caller, roles: readonly Role[]): void {
  const missing = roles.find((role) => !caller.roles.includes(role));
  if (missing !== undefined) throw new ApiError('missing_role', roleRefusal(caller.principal, missing));
}

/** The conversation a chat id names in the caller's tenant; a chat nobody started is undefined. */
async function chatSession(
  context: RouteContext<{ agent: string; chatId: string }, { tenant?: string | undefined }, unknown>,
): Promise<SessionRecord | undefined> {
  const { agent, chatId } = context.params;
  const tenant = tenantFor(context.caller, context.query.tenant);
  const record = await context.services.store.findSession(deriveSessionId(tenant, agent, chatId));
  return record !== undefined && canSee(context.caller, record.key.tenant) ? record : undefined;
}

const REFUSAL_CODES: Record<TurnRefusedError['reason'], ApiErrorCode> = {
  'not-found': 'not_found',
  finished: 'already_finished',
  'one-shot': 'not_a_conversation',
  stale: 'stale_turn',
  full: 'too_many_pending',
  released: 'released',
  'tasks-running': 'tasks_running',
};

/** A turn's input from the last user message: its text parts, as `{ text }`. */
function turnInput(body: z.infer<typeof ChatBody>): {
  message: z.infer<typeof ChatMessageIn>;
  input: { text: string };
} {
  if (body.trigger === 'regenerate-message')
    throw new ApiError(
      'invalid_request',
      'regenerate is not supported: a turn that ran stays in the conversation; send a new message instead',
    );
  const message = body.messages.at(-1) as z.infer<typeof ChatMessageIn>;
  if (message.role !== 'user')
    throw new ApiError('invalid_request', `the last message must be the user's new message, not a ${message.role} one`);
  const text = message.parts
    .filter((part) => part.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text)
    .join('');
  if (text.trim() === '') throw new ApiError('invalid_request', `message ${message.id} has no text`);
  return { message, input: { text } };
}

/** A stream position from `after` (C or C.K), as the events stream's Last-Event-ID reads. */
function positionOf(after: string | undefined): LivePosition & { cursor: number } {
  const [cursor, chunk] = (after ?? '0').split('.');
  const at = Number(cursor);
  return { cursor: at, seq: at + 1, chunk: chunk === undefined ? -1 : Number(chunk) };
}

interface TurnStreamRequest {
  readonly sessionId: string;
  readonly turnId: string;
  /** Where the client is: the turn's start (0), or a cursor a pause handed it. */
  readonly from: LivePosition & { cursor: number };
}

/**
 * One turn's answer as UI message stream lines: the turn's entries and live text from `from`,
 * polled until its outcome, the bound, or the client leaving. Ended by the bound, it closes what
 * is open and says in the answer's metadata where a reconnect continues (`cursor`).
 */
async function* turnLines(
  context: RouteContext<unknown, unknown, unknown>,
  request: TurnStreamRequest,
  boundMs: number,
  release: () => Promise<void>,
): AsyncGenerator<string> {
  const { services, signal } = context;
  const { client } = services;
  const { sessionId, turnId } = request;
  const resumed = request.from.cursor > 0;
  const mapper = new TurnStreamMapper(
    { sessionId, turnId },
    resumed ? { partPrefix: `text-r${request.from.cursor}` } : {},
  );
  const deadline = services.clock.now() + boundMs;
  const lines = (chunks: UiChunk[]) => chunks.map(uiChunkLine).join('');
  let cursor: number | undefined;
  let shown: LivePosition = request.from;
  try {
    yield lines(mapper.start());
    for (;;) {
      const record = await services.store.findSession(sessionId);
      // A first message's session exists once intake has taken its ticket: until then, wait.
      if (record !== undefined && canSee(context.caller, record.key.tenant)) {
        cursor ??= await startOf(context, record, request, mapper);
        if (cursor !== undefined) {
          // Live text before the journal: a partial is never sent after its entry was read.
          const live =
            record.state === 'running'
              ? (await client.liveTextAfter(record, cursor, shown)).filter((chunk) => chunk.turnId === turnId)
              : [];
          const page = await client.eventsPage(record, cursor, { limit: ENTRIES_PER_READ, turnId });
          const out: UiChunk[] = page.events.flatMap((event) => mapper.map(event));
          const readNothing = page.cursor === cursor;
          cursor = page.cursor;
          if (readNothing)
            for (const chunk of live) {
              shown = { seq: chunk.seq, chunk: chunk.index };
              out.push(...mapper.map(toModelText(chunk)));
            }
          if (out.length > 0) yield lines(out);
          if (mapper.finished || page.ended) break;
          if (TERMINAL_SESSION_STATES.includes(record.state) && readNothing && !page.full) {
            // The conversation ended (cancelled, released) without this turn's outcome.
            yield lines([{ type: 'abort', reason: `the conversation is ${record.state}` }]);
            break;
          }
          if (page.full) continue;
        }
      }
      if (services.clock.now() >= deadline || signal?.aborted) {
        const at = cursor ?? request.from.cursor;
        const position = shown.seq === at + 1 && shown.chunk >= 0 ? `${at}.${shown.chunk}` : `${at}`;
        yield lines(mapper.pause(position));
        break;
      }
      await services.clock.sleep(services.eventsPollMs, signal).catch(() => undefined);
    }
    yield UI_STREAM_DONE;
  } finally {
    await release();
  }
}

/**
 * Where the turn's stream starts reading: its first entry, or the client's cursor (then the text
 * of the response it had is read back, so only the rest is sent). Undefined while the turn is
 * not yet recorded (its ticket not yet taken).
 */
async function startOf(
  context: RouteContext<unknown, unknown, unknown>,
  record: SessionRecord,
  request: TurnStreamRequest,
  mapper: TurnStreamMapper,
): Promise<number | undefined> {
  const { client } = context.services;
  try {
    const start = await client.turnStart(record, request.turnId, request.from.cursor);
    const { from } = request;
    if (from.cursor > 0 && from.chunk >= 0) {
      const had = await client.liveTextAfter(record, from.cursor, { seq: from.seq, chunk: -1 });
      mapper.continueAfter(
        from.seq,
        had
          .filter((chunk) => chunk.index <= from.chunk)
          .map((chunk) => chunk.text)
          .join(''),
      );
    }
    return start;
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
}

/** The answer of one turn as the route's streamed result, under a slot of the caller's. */
async function streamTurn(
  context: RouteContext<unknown, unknown, unknown>,
  request: TurnStreamRequest,
): Promise<RouteResult> {
  // A function URL sends its answer whole: it must end within one request, as an events poll does.
  const boundMs = context.streaming ? CHAT_STREAM_MS : context.services.eventsWaitMs;
  const release = await openStreamSlot(context, boundMs);
  return {
    status: 200,
    contentType: SSE_CONTENT_TYPE,
    headers: UI_MESSAGE_STREAM_HEADERS,
    stream: turnLines(context, request, boundMs, release),
  };
}

/** Takes the new message as a turn: the first starts the conversation, a later one is sent to it. */
async function acceptMessage(
  context: RouteContext<{ agent: string }, unknown, z.infer<typeof ChatBody>>,
): Promise<TurnStreamRequest> {
  const { caller, services, body } = context;
  const { agent } = context.params;
  const { message, input } = turnInput(body);
  const tenant = tenantFor(caller, body.tenant);
  const sessionId = deriveSessionId(tenant, agent, body.id);
  // The chat's first user message is its ticket (the chat id): a retried POST is the same ticket.
  const first = body.messages.filter((m) => m.role === 'user').length === 1;
  try {
    if (first) {
      requireRoles(caller, [OPERATION_ROLES.submit]);
      const submitted = await services.client.submit({ agent, input, ticketId: body.id, tenant });
      return { sessionId: submitted.sessionId, turnId: body.id, from: positionOf(undefined) };
    }
    const record = await services.store.findSession(sessionId);
    if (record === undefined || !canSee(caller, record.key.tenant))
      throw new ApiError(
        'not_found',
        `chat ${body.id} has no conversation with ${agent}: its first message starts one`,
      );
    // The message's id is the turn's: a retried POST converges on the turn it started. It is
    // checked as a send's turn id is, so a stored key never differs from the id given.
    const turnId = TicketId.safeParse(message.id);
    if (!turnId.success)
      throw new ApiError(
        'invalid_request',
        `message ${JSON.stringify(message.id)} cannot be a turn id: ${turnId.error.issues.map((issue) => issue.message).join('; ')}`,
      );
    const sent = await services.client.sendTo(record, input, { id: message.id });
    return { sessionId: sent.sessionId, turnId: sent.turnId, from: positionOf(undefined) };
  } catch (error) {
    if (error instanceof TurnRefusedError) throw new ApiError(REFUSAL_CODES[error.reason], error.message);
    if (error instanceof TicketConflictError)
      throw new ApiError(
        'invalid_request',
        `chat ${body.id} was started with another first message: its first message cannot change`,
      );
    throw error;
  }
}

/** The running turn of a conversation, if any: a reconnect has something to stream only then. */
async function runningTurn(context: RouteContext<unknown, unknown, unknown>, record: SessionRecord) {
  const turnId = record.activeTurnId;
  if (turnId === undefined || TERMINAL_SESSION_STATES.includes(record.state) || record.state === 'idle')
    return undefined;
  const turn = await context.services.store.getTurn(record.key, turnId);
  return turn === undefined || turn.outcome !== undefined ? undefined : turnId;
}

/** The chat routes; the API serves them beside the session operations. */
export const CHAT_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'POST',
    path: '/agents/{agent}/chat',
    operationId: 'chatMessage',
    role: OPERATION_ROLES.send,
    summary:
      'Send a chat message (useChat’s request): the chat’s first user message starts a conversation whose ticket id is the chat id (needs `submit`), a later one is a turn of it (its id the message’s, so a retried POST is the same turn). The answer streams that turn as an AI SDK UI message stream. Needs `converse` and `read`.',
    params: ChatParams,
    body: ChatBody,
    responses: {
      200: { description: UI_STREAM_DESCRIPTION, contentType: SSE_CONTENT_TYPE, schema: z.string() },
      ...errors,
      409: {
        description: 'the conversation has ended (stopped, released) and takes no further turns',
        schema: ErrorBody,
      },
      429: {
        description: 'too many inputs wait, or the caller holds as many open streams as it may',
        schema: ErrorBody,
      },
    },
    async handle(context) {
      requireRoles(context.caller, [OPERATION_ROLES.events]);
      const request = await acceptMessage(context);
      return streamTurn(context, request);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/agents/{agent}/chat/{chatId}/stream',
    operationId: 'chatStream',
    role: OPERATION_ROLES.events,
    summary:
      'Reconnect to a chat (useChat’s `resume`): the running turn’s answer replayed from its start and followed live (204 when no turn runs); with `turn` and `after` (the `turnId` and `cursor` of a paused answer’s metadata), that turn from there on, ended or not.',
    params: ChatIdParams,
    query: StreamQuery,
    responses: {
      200: { description: UI_STREAM_DESCRIPTION, contentType: SSE_CONTENT_TYPE, schema: z.string() },
      204: { description: 'no turn runs: nothing to resume' },
      ...errors,
    },
    async handle(context) {
      const record = await chatSession(context);
      const { turn, after } = context.query;
      if (turn !== undefined) {
        // A named turn continues whether or not it has ended since: the client missed its end.
        if (record === undefined || (await context.services.store.getTurn(record.key, turn)) === undefined)
          throw new ApiError('not_found', `chat ${context.params.chatId} has no turn ${turn}`);
        return streamTurn(context, { sessionId: record.key.id, turnId: turn, from: positionOf(after) });
      }
      const turnId = record === undefined ? undefined : await runningTurn(context, record);
      if (record === undefined || turnId === undefined) return { status: 204, text: '', contentType: 'text/plain' };
      return streamTurn(context, { sessionId: record.key.id, turnId, from: positionOf(after) });
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/agents/{agent}/chat/{chatId}',
    operationId: 'chatMessages',
    role: OPERATION_ROLES.events,
    summary:
      'A chat’s messages as useChat holds them (UIMessage[]): each turn’s input and, once it has ended, its answer. A page starts from them on a reload, then reconnects for the running turn.',
    params: ChatIdParams,
    query: TenantQuery,
    responses: { 200: { description: 'the conversation so far', schema: ChatHistoryView }, ...errors },
    async handle(context) {
      const record = await chatSession(context);
      if (record === undefined) throw new ApiError('not_found', `chat ${context.params.chatId} has no conversation`);
      const events = [];
      for (let cursor = 0; events.length < HISTORY_ENTRIES_MAX; ) {
        const page = await context.services.client.eventsPage(record, cursor, { limit: ENTRIES_PER_READ });
        events.push(...page.events);
        if (!page.full || page.cursor === cursor) break;
        cursor = page.cursor;
      }
      const activeTurnId = await runningTurn(context, record);
      return {
        status: 200,
        json: {
          sessionId: record.key.id,
          ...(activeTurnId === undefined ? {} : { activeTurnId }),
          messages: conversationMessages(record.key.id, events),
        },
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/agents/{agent}/chat/{chatId}/stop',
    operationId: 'chatStop',
    role: OPERATION_ROLES.stopTurn,
    summary:
      'Stop a chat’s answer (the page’s stop button): the running turn — or `turn`, the answer’s metadata `turnId`, which a page should send so that a stop never reaches a later turn — ends `cancelled` at its next step boundary and its stream finishes; the conversation goes on, and the next message is a new turn. With no turn running (or `turn` ended) nothing changes: `already-ended`. Closing a connection stops nothing.',
    params: ChatIdParams,
    query: ChatStopQuery,
    responses: {
      202: {
        description: 'stop requested',
        schema: z.object({ sessionId: z.string(), turnId: z.string(), result: z.literal('requested') }),
      },
      200: {
        description: 'no turn runs (or the one named has ended): nothing changed',
        schema: z.object({ sessionId: z.string(), turnId: z.string().optional(), result: z.literal('already-ended') }),
      },
      ...errors,
      429: { description: 'the conversation’s inbox is full (`too_many_pending`)', schema: ErrorBody },
    },
    async handle(context) {
      const record = await chatSession(context);
      if (record === undefined) throw new ApiError('not_found', `chat ${context.params.chatId} has no conversation`);
      const sessionId = record.key.id;
      const turnId = context.query.turn ?? (await runningTurn(context, record));
      if (turnId === undefined) return { status: 200, json: { sessionId, result: 'already-ended' } };
      let result: Awaited<ReturnType<typeof context.services.client.stopTurnOf>>;
      try {
        result = await context.services.client.stopTurnOf(record, turnId);
      } catch (error) {
        if (error instanceof TurnRefusedError) throw new ApiError(REFUSAL_CODES[error.reason], error.message);
        throw error;
      }
      if (result === 'not-found')
        throw new ApiError('not_found', `chat ${context.params.chatId} has no turn ${turnId}`);
      return { status: result === 'requested' ? 202 : 200, json: { sessionId, turnId, result } };
    },
  }),
];
