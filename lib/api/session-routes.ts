import * as z from 'zod';
import { type LivePosition, toModelText } from '../client/baton-client.ts';
import { NotFoundError, TurnRefusedError } from '../core/errors.ts';
import { OPERATION_ROLES, roleRefusal } from '../core/roles.ts';
import { TERMINAL_SESSION_STATES } from '../core/vocabulary.ts';
import type { SessionRecord } from '../ports/session-store.ts';
import { ApiError, type ApiErrorCode } from './api-errors.ts';
import {
  ApproveBody,
  CancelResponse,
  DecisionResponse,
  ErrorBody,
  EventsQuery,
  ForkBody,
  ForkedView,
  ListQuery,
  ModelTextView,
  ReleaseBody,
  ReleaseView,
  RerunBody,
  ResolveBody,
  SendBody,
  SentView,
  SessionEventView,
  SessionIdParams,
  SessionPage,
  SessionStatusView,
  StopTurnResponse,
  SubmitBody,
  Submitted,
  TasksView,
  TurnPathParams,
} from './api-schemas.ts';
import { canSee, tenantFor } from './caller.ts';
import { defineRoute, type Route, type RouteContext, type RouteResult } from './route.ts';
import { SSE_CONTENT_TYPE, sseEvent, sseRetry } from './sse.ts';
import { openStreamSlot } from './stream-slot.ts';

/** Entries per events response; a longer journal streams over several rounds. */
const EVENTS_PER_RESPONSE = 200;
/** How long one release request waits for the release to be carried out: well inside the API's 30 s. */
const RELEASE_WAIT_MS = 20_000;
/** How soon an EventSource reconnects for the next round. */
const EVENTS_RETRY_MS = 250;

const errors = {
  400: { description: 'invalid request', schema: ErrorBody },
  401: { description: 'no caller', schema: ErrorBody },
  403: { description: 'the caller may not use this tenant, or lacks the role (`missing_role`)', schema: ErrorBody },
  404: { description: 'no such session (or not one of the caller’s tenants)', schema: ErrorBody },
} as const;

/**
 * Runs a request that waits under one of the caller's stream slots, freed when it answers: the
 * slots are shared by every invocation of the API, so one caller cannot hold more than its bound
 * of them whichever containers serve it. A request that does not wait takes none.
 */
async function withStreamSlot<T>(
  context: RouteContext<unknown, unknown, unknown>,
  waitMs: number,
  answer: () => Promise<T>,
): Promise<T> {
  if (waitMs === 0) return answer();
  const close = await openStreamSlot(context, waitMs);
  try {
    return await answer();
  } finally {
    await close();
  }
}

/** The session a fork reads: the caller must also hold `read` (its history is shown in the fork). */
async function readableOriginal(context: RouteContext<{ id: string }, unknown, unknown>): Promise<SessionRecord> {
  const { caller } = context;
  if (!caller.roles.includes(OPERATION_ROLES.status))
    throw new ApiError('missing_role', roleRefusal(caller.principal, OPERATION_ROLES.status));
  return visibleSession(context);
}

/** A session the caller may see; another tenant's session is reported as not found, not forbidden. */
async function visibleSession(context: RouteContext<{ id: string }, unknown, unknown>): Promise<SessionRecord> {
  const record = await context.services.store.findSession(context.params.id);
  if (record === undefined || !canSee(context.caller, record.key.tenant))
    throw new ApiError('not_found', `session ${context.params.id} not found`);
  return record;
}

/** The API's code for each reason a session refuses an input. */
const REFUSAL_CODES: Record<TurnRefusedError['reason'], ApiErrorCode> = {
  'not-found': 'not_found',
  finished: 'already_finished',
  'one-shot': 'not_a_conversation',
  stale: 'stale_turn',
  full: 'too_many_pending',
  released: 'released',
  'tasks-running': 'tasks_running',
};

/** Runs an input operation, answering a refusal with its own code rather than a bare 400. */
async function refusalsAsErrors<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (error instanceof TurnRefusedError) throw new ApiError(REFUSAL_CODES[error.reason], error.message);
    throw error;
  }
}

const refusals = {
  409: {
    description: 'the session has finished or was released, takes no further turns, or `ifLastTurn` is stale',
    schema: ErrorBody,
  },
  429: { description: 'too many inputs already wait for the session', schema: ErrorBody },
} as const;

const isTerminal = (record: SessionRecord) => TERMINAL_SESSION_STATES.includes(record.state);

/**
 * Where an events request starts: the EventSource's Last-Event-ID (a reconnect repeats the first
 * URL, so the header is the newer of the two), else `after`, else the beginning. An id `C.K`
 * (a `model-text` event's) is journal cursor C with chunks up to K of the streaming response seen.
 */
function eventsPosition(after: number | undefined, lastEventId: string | undefined): LivePosition & { cursor: number } {
  const at = (cursor: number, chunk = -1) => ({ cursor, seq: cursor + 1, chunk });
  if (lastEventId === undefined || lastEventId === '') return at(after ?? 0);
  const match = /^(\d{1,15})(?:\.(\d{1,6}))?$/.exec(lastEventId);
  if (!match)
    throw new ApiError(
      'invalid_request',
      `Last-Event-ID must be a journal cursor (a whole number, or cursor.chunk), got '${lastEventId}'`,
    );
  return at(Number(match[1]), match[2] === undefined ? -1 : Number(match[2]));
}

/** One events response: what is new after the request's position, waiting up to `waitMs` for something. */
async function answerEvents(
  context: RouteContext<{ id: string }, z.infer<typeof EventsQuery>, unknown>,
  waitMs: number,
): Promise<RouteResult> {
  const { services, query, signal } = context;
  const position = eventsPosition(query.after, context.headers['last-event-id']);
  const after = position.cursor;
  const deadline = services.clock.now() + waitMs;
  // Where this response reads from: the cursor, or for a turn near its first entry (found once).
  let from: number | undefined;
  for (;;) {
    // The record is read before the journal: if it was finished then, the journal read is complete.
    const record = await visibleSession(context);
    from ??=
      query.turn === undefined
        ? after
        : await services.client.turnStart(record, query.turn, after).catch((error: unknown) => {
            throw error instanceof NotFoundError ? new ApiError('not_found', error.message) : error;
          });
    // Live text before the journal too: a partial is never sent after its entry was read.
    const chunks =
      query.live === 'true' && record.state === 'running'
        ? (await services.client.liveTextAfter(record, after, position)).filter(
            (chunk) => query.turn === undefined || chunk.turnId === query.turn,
          )
        : [];
    const page = await services.client.eventsPage(record, from, { limit: EVENTS_PER_RESPONSE, turnId: query.turn });
    const { events } = page;
    // Nothing after the cursor yet (a turn's start moved past entries: they are there).
    const readNothing = page.cursor === after;
    const partial = readNothing ? chunks : [];
    const finished = page.ended || (isTerminal(record) && !page.full);
    // Entries read past the last one shown (another turn's): the next request starts after them.
    const skipped = page.cursor > (events.at(-1)?.cursor ?? after);
    if (
      events.length > 0 ||
      partial.length > 0 ||
      finished ||
      skipped ||
      services.clock.now() >= deadline ||
      signal?.aborted
    ) {
      let text = sseRetry(EVENTS_RETRY_MS);
      for (const event of events) text += sseEvent({ id: event.cursor, event: 'entry', data: event });
      if (skipped && !page.ended) text += sseEvent({ id: page.cursor, event: 'cursor', data: { cursor: page.cursor } });
      for (const chunk of partial)
        text += sseEvent({ id: `${after}.${chunk.index}`, event: 'model-text', data: toModelText(chunk) });
      if (finished)
        text += sseEvent({
          event: 'end',
          data: { status: record.state, ...(query.turn === undefined ? {} : { turnId: query.turn }) },
        });
      return { status: 200, text, contentType: SSE_CONTENT_TYPE };
    }
    await services.clock.sleep(services.eventsPollMs, signal).catch(() => undefined);
  }
}

/** The session operations. A new operation is one more entry. */
export const SESSION_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'POST',
    path: '/sessions',
    operationId: 'submitTicket',
    role: OPERATION_ROLES.submit,
    summary: 'Submit a ticket: it goes to the tickets queue; the session id is known at once',
    body: SubmitBody,
    responses: { 202: { description: 'ticket accepted', schema: Submitted }, ...errors },
    async handle({ body, caller, services }) {
      const tenant = tenantFor(caller, body.tenant);
      const submitted = await services.client.submit({
        agent: body.agent,
        input: body.input,
        ticketId: body.ticketId,
        tenant,
        limits: body.limits,
      });
      return { status: 202, json: submitted };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/fork',
    operationId: 'forkSession',
    role: OPERATION_ROLES.fork,
    summary:
      "Fork a session at a journal cursor: a new session whose history is this one's up to it, with a new input there or continuing the turn it is inside; once-only calls the original made after it are asked (default), reused, denied or rerun. Needs `submit` and `read`.",
    params: SessionIdParams,
    body: ForkBody,
    responses: { 201: { description: 'fork created', schema: ForkedView }, ...errors },
    async handle(context) {
      const record = await readableOriginal(context);
      const { at, text, input, id, effects, version } = context.body;
      if (text !== undefined && input !== undefined)
        throw new ApiError('invalid_request', 'give the fork either text or input, not both');
      const forked = await context.services.client.forkRecord(record, {
        at,
        input: text === undefined ? input : { text },
        id,
        effects,
        version,
      });
      return { status: 201, json: forked };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/rerun',
    operationId: 'rerunTurn',
    role: OPERATION_ROLES.fork,
    summary: 'Run a turn again in a fork that starts where it started, with its input. Needs `submit` and `read`.',
    params: SessionIdParams,
    body: RerunBody,
    responses: { 201: { description: 'fork created', schema: ForkedView }, ...errors },
    async handle(context) {
      const record = await readableOriginal(context);
      const { turn, id, effects, version } = context.body;
      const forked = await context.services.client.rerunRecord(record, { turnId: turn, id, effects, version });
      return { status: 201, json: forked };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/sessions',
    operationId: 'listSessions',
    role: OPERATION_ROLES.sessions,
    summary: "A page of one tenant's sessions, newest first, filtered by agent, state and creation time",
    query: ListQuery,
    responses: { 200: { description: 'a page of sessions', schema: SessionPage }, ...errors },
    async handle({ query, caller, services }) {
      const tenant = tenantFor(caller, query.tenant);
      const page = await services.client.sessions({
        tenant,
        agent: query.agent,
        state: query.state,
        from: query.from,
        to: query.to,
        limit: query.limit,
        cursor: query.cursor,
      });
      return { status: 200, json: page };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/sessions/{id}',
    operationId: 'getSession',
    role: OPERATION_ROLES.status,
    summary: "A session's state, counters and outcome",
    params: SessionIdParams,
    responses: { 200: { description: 'the session', schema: SessionStatusView }, ...errors },
    async handle(context) {
      const record = await visibleSession(context);
      return { status: 200, json: await context.services.client.statusOf(record) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/sessions/{id}/events',
    operationId: 'sessionEvents',
    role: OPERATION_ROLES.events,
    summary:
      "The session's journal from a cursor as Server-Sent Events. Each response carries what is new (waiting up to waitMs for something) and ends; an EventSource reconnects with Last-Event-ID. `event: end` follows the last entry of a finished session. With live=true, a running session's partial model text comes as `event: model-text` (never journaled; the model entry that follows is the whole response). With turn=TURN_ID, only that turn's entries, and `event: end` follows its published result; `event: cursor` moves the position past entries read that were not the turn's.",
    params: SessionIdParams,
    query: EventsQuery,
    headers: { 'Last-Event-ID': 'resume after this cursor (set by EventSource on reconnect)' },
    responses: {
      200: {
        description:
          'events (`entry`: `id` = cursor, `data` = SessionEvent; `model-text`: `id` = cursor.chunk, `data` = ModelTextEvent; `cursor`: `id` = cursor, `data` = { cursor })',
        schema: z.union([SessionEventView, ModelTextView]),
        contentType: SSE_CONTENT_TYPE,
      },
      ...errors,
      429: {
        description: 'the caller already holds as many open event streams as one caller may (`too_many_streams`)',
        schema: ErrorBody,
      },
    },
    async handle(context) {
      const { services, query } = context;
      const waitMs = query.waitMs ?? services.eventsWaitMs;
      return withStreamSlot(context, waitMs, () => answerEvents(context, waitMs));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/cancel',
    operationId: 'cancelSession',
    role: OPERATION_ROLES.cancel,
    summary: 'Ask a session to stop: a running leg aborts at its next renewal',
    params: SessionIdParams,
    responses: {
      202: { description: 'cancel requested', schema: CancelResponse },
      409: { description: 'the session has already finished', schema: ErrorBody },
      ...errors,
    },
    async handle(context) {
      const record = await visibleSession(context);
      const result = await context.services.client.cancel(record.key.id);
      if (result === 'already-finished')
        throw new ApiError('already_finished', `session ${record.key.id} has already finished`);
      if (result === 'not-found') throw new ApiError('not_found', `session ${record.key.id} not found`);
      return { status: 202, json: { sessionId: record.key.id, result } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/turns/{turnId}/stop',
    operationId: 'stopTurn',
    role: OPERATION_ROLES.stopTurn,
    summary:
      'Stop one turn, not the session: a running turn ends `cancelled` at its next step boundary, a queued one as it comes up, without running; the conversation takes its next turn. A turn that has ended is left as it is (`already-ended`, 200). The same stop sent again is one stop.',
    params: TurnPathParams,
    responses: {
      202: { description: 'stop requested', schema: StopTurnResponse },
      200: { description: 'the turn has already ended: nothing changed', schema: StopTurnResponse },
      ...errors,
      429: { description: 'the session’s inbox is full (`too_many_pending`)', schema: ErrorBody },
    },
    async handle(context) {
      const record = await visibleSession(context);
      const { turnId } = context.params;
      const result = await refusalsAsErrors(() => context.services.client.stopTurnOf(record, turnId));
      if (result === 'not-found') throw new ApiError('not_found', `session ${record.key.id} has no turn ${turnId}`);
      return { status: result === 'requested' ? 202 : 200, json: { sessionId: record.key.id, turnId, result } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/send',
    operationId: 'sendInput',
    role: OPERATION_ROLES.send,
    summary:
      'Send an input to a conversation: a further turn behind the active one (`queue`, the default), or a message into the running turn (`inject`; queued when no turn runs). The same `id` sent again is the same input.',
    params: SessionIdParams,
    body: SendBody,
    responses: { 202: { description: 'input accepted', schema: SentView }, ...refusals, ...errors },
    async handle(context) {
      const record = await visibleSession(context);
      const { input, id, mode, ifLastTurn, limits } = context.body;
      const sent = await refusalsAsErrors(() =>
        context.services.client.sendTo(record, input, { id, mode, ifLastTurn, limits }),
      );
      return { status: 202, json: sent };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/approve',
    operationId: 'approveCall',
    role: OPERATION_ROLES.approve,
    summary: 'Approve or deny a call that waits for a human; the turn resumes',
    params: SessionIdParams,
    body: ApproveBody,
    responses: { 202: { description: 'decision posted', schema: DecisionResponse }, ...refusals, ...errors },
    async handle(context) {
      const record = await visibleSession(context);
      const { approved, reason, ...call } = context.body;
      const named = await refusalsAsErrors(() =>
        context.services.client.approve(record.key.id, call, {
          approved,
          ...(reason !== undefined ? { reason } : {}),
        }),
      );
      return { status: 202, json: { sessionId: record.key.id, ...named, result: 'posted' } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/resolve',
    operationId: 'resolveCall',
    role: OPERATION_ROLES.resolve,
    summary:
      'Record whether a parked once-only call happened: done (with its output, the turn goes on from it) or not done (it runs again under a new key)',
    params: SessionIdParams,
    body: ResolveBody,
    responses: { 202: { description: 'verdict posted', schema: DecisionResponse }, ...refusals, ...errors },
    async handle(context) {
      const record = await visibleSession(context);
      const { done, output, ...call } = context.body;
      const named = await refusalsAsErrors(() =>
        context.services.client.resolve(record.key.id, call, { done, ...(output !== undefined ? { output } : {}) }),
      );
      return { status: 202, json: { sessionId: record.key.id, ...named, result: 'posted' } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/sessions/{id}/tasks',
    operationId: 'sessionTasks',
    role: OPERATION_ROLES.tasks,
    summary: "A session's background tasks, with each one's status read now (and its result or error)",
    params: SessionIdParams,
    responses: { 200: { description: 'the tasks, oldest first', schema: TasksView }, ...errors },
    async handle(context) {
      const record = await visibleSession(context);
      const tasks = await refusalsAsErrors(() => context.services.client.tasks(record.key.id));
      return { status: 200, json: { sessionId: record.key.id, tasks } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sessions/{id}/release',
    operationId: 'releaseSession',
    role: OPERATION_ROLES.release,
    summary:
      'Release a session: cancel its running tasks (unless `cancel` is false, which refuses while tasks run), wait for them up to `timeoutS` (default 30), record the rest failed, and refuse new work. One request waits up to 20 s: `released: false` means not carried out yet, and the same release may be asked for again.',
    params: SessionIdParams,
    body: ReleaseBody,
    responses: {
      200: { description: 'the release’s outcome', schema: ReleaseView },
      409: { description: 'tasks still run and `cancel` is false', schema: ErrorBody },
      ...errors,
    },
    async handle(context) {
      const record = await visibleSession(context);
      const { cancel, timeoutS } = context.body;
      const outcome = await refusalsAsErrors(() =>
        context.services.client.release(record.key.id, { cancel, timeoutS, waitMs: RELEASE_WAIT_MS }),
      );
      return { status: 200, json: outcome };
    },
  }),
];
