import * as z from 'zod';
import { SendMode } from '../client/baton-client.ts';
import { NAME_PATTERN } from '../core/ids.ts';
import { Ticket } from '../core/messages.ts';
import { API_ROLES } from '../core/resources.ts';
import { TaskStatus } from '../core/tasks.ts';
import { EntryKind, ForkEffects, OutcomeStatus, SessionState } from '../core/vocabulary.ts';
import { ApiErrorCode } from './api-errors.ts';

/**
 * The API's request and response contracts. Request bodies reuse the queue contracts
 * (lib/core/messages.ts), so a ticket the API accepts is exactly a ticket the tickets queue accepts;
 * the OpenAPI document is generated from these.
 */

const states = Object.values(SessionState) as [SessionState, ...SessionState[]];
const name = (what: string) => z.string().regex(NAME_PATTERN, `${what} must match ${NAME_PATTERN}`);

/** POST /sessions: the Ticket contract without its version; the ticket id defaults to a fresh UUID. */
export const SubmitBody = Ticket.omit({ v: true })
  .extend({ ticketId: Ticket.shape.ticketId.optional() })
  .meta({ id: 'SubmitBody' });

export const Submitted = z
  .object({
    ticketId: z.string(),
    sessionId: z.string(),
    tenant: z.string(),
    agent: z.string(),
    traceId: z.string(),
  })
  .meta({ id: 'Submitted' });

const effects = z.enum(Object.values(ForkEffects) as [ForkEffects, ...ForkEffects[]]);
/** Another registered version of the agent for a fork to run on. */
const version = z.number().int().positive();

/** POST /sessions/{id}/fork: the cursor, a new input there (`text` as the CLI's --text), the fork's id, its effects, its agent version. */
export const ForkBody = z
  .object({
    at: z.number().int().nonnegative(),
    input: z.unknown().optional(),
    text: z.string().optional(),
    /** The fork's ticket id, which names its session: checked as a ticket's. */
    id: Ticket.shape.ticketId.optional(),
    effects: effects.optional(),
    version: version.optional(),
  })
  .strict()
  .meta({ id: 'ForkBody' });

/** POST /sessions/{id}/rerun: a fork at the start of a turn, with its input. */
export const RerunBody = z
  .object({
    turn: z.string().min(1),
    id: Ticket.shape.ticketId.optional(),
    effects: effects.optional(),
    version: version.optional(),
  })
  .strict()
  .meta({ id: 'RerunBody' });

export const ForkedView = z
  .object({
    sessionId: z.string(),
    tenant: z.string(),
    agent: z.string(),
    ticketId: z.string(),
    turnId: z.string(),
    forkedFrom: z.object({ session: z.string(), cursor: z.number().int() }),
    effects,
    version: version.optional(),
    repeatable: z.number().int(),
    created: z.boolean(),
  })
  .meta({ id: 'Forked' });

/** GET /me: who the API takes the caller for, and what it may do. */
export const CallerView = z
  .object({
    principal: z.string(),
    tenants: z.union([z.literal('all'), z.array(z.string())]),
    roles: z.array(z.enum(API_ROLES)),
  })
  .meta({ id: 'Caller' });

export const SessionIdParams = z.object({ id: z.string().min(1).max(64) });

const isoTime = (what: string) => z.iso.datetime({ offset: true, message: `${what} must be an ISO 8601 date-time` });

/** GET /sessions query: filters and the page. */
export const ListQuery = z
  .object({
    tenant: name('tenant').optional(),
    agent: name('agent').optional(),
    state: z.enum(states).optional(),
    from: isoTime('from').optional(),
    to: isoTime('to').optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
    cursor: z.string().min(1).max(1024).optional(),
  })
  .strict();

export const SessionSummary = z
  .object({
    sessionId: z.string(),
    tenant: z.string(),
    agent: z.string(),
    ticketId: z.string(),
    status: z.enum(states),
    legs: z.number().int(),
    recoveries: z.number().int(),
    tokens: z.number().int(),
    cancelRequested: z.boolean(),
    createdAt: z.string(),
  })
  .meta({ id: 'SessionSummary' });

export const SessionPage = z
  .object({ sessions: z.array(SessionSummary), cursor: z.string().optional() })
  .meta({ id: 'SessionPage' });

export const TurnOutcomeView = z.object({
  status: z.enum(Object.values(OutcomeStatus) as [OutcomeStatus, ...OutcomeStatus[]]),
  output: z.unknown().optional(),
  error: z.string().optional(),
  at: z.number().int(),
});

/** One call of a session's journal as a decision names it (lib/core/call-identity.ts). */
const CallIdentityView = z.object({
  modelSeq: z.number().int(),
  callId: z.string(),
  tool: z.string(),
  digest: z.string().optional(),
});

/** Tokens, model calls and US dollars (of the models the agent's price table names). */
const SpendFiguresView = z.object({
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  modelCalls: z.number().int(),
  costUsd: z.number(),
});

export const SessionStatusView = z
  .object({
    sessionId: z.string(),
    tenant: z.string(),
    agent: z.string(),
    ticketId: z.string(),
    status: z.enum(states),
    turnId: z.string().optional(),
    outcome: TurnOutcomeView.optional(),
    legs: z.number().int(),
    epoch: z.number().int(),
    recoveries: z.number().int(),
    consecutiveRecoveries: z.number().int(),
    tokens: z.number().int(),
    /** What the session's model calls (compactions included) spent, in all and in its latest turn. */
    usage: z.object({ session: SpendFiguresView, turn: SpendFiguresView }).optional(),
    cancelRequested: z.boolean(),
    traceId: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    /** A conversation's turns, oldest first. */
    turns: z.array(z.object({ turnId: z.string(), status: z.string(), outcome: z.string().optional() })).optional(),
    activeTurnId: z.string().optional(),
    /** Turns and messages accepted and not yet taken by the session. */
    pendingInputs: z.number().int().optional(),
    /**
     * A waiting session's calls that wait for a human's approval (POST /sessions/{id}/approve): each
     * call's identity and the parsed input the tool would run with, which `digest` digests.
     */
    pendingApprovals: z
      .array(
        CallIdentityView.extend({
          input: z.unknown(),
          /** In a fork: the original session already ran this call (its watermark's seq there, its key, its result). */
          ranBefore: z
            .object({ session: z.string(), seq: z.number().int(), idempotencyKey: z.string(), result: z.unknown() })
            .optional(),
        }),
      )
      .optional(),
    /** A once-only call parked for a human (POST /sessions/{id}/resolve), and the park a verdict answers. */
    parked: CallIdentityView.extend({ parkSeq: z.number().int() }).optional(),
    /** When a waiting session wakes by itself, ISO 8601. */
    wakeAt: z.string().optional(),
    /** A tenant limit the waiting session is held back by: a tenant slot (its place in line) or a model call's rate. */
    limited: z
      .object({
        limit: z.enum(['tenant-concurrency', 'model-rate']),
        reason: z.string(),
        place: z.number().int().positive().optional(),
      })
      .optional(),
    /** A background task's session: the session that started it. */
    parent: z.string().optional(),
    /** A fork: the session whose history up to `cursor` is this one's. */
    forkedFrom: z.object({ session: z.string(), cursor: z.number().int() }).optional(),
    /** A session with background tasks: how many are in each status. */
    tasks: z.record(z.string(), z.number().int()).optional(),
    release: z.enum(['requested', 'released']).optional(),
  })
  .meta({ id: 'SessionStatus' });

/** GET /sessions/{id}/events: `after` (or the Last-Event-ID header) and how long to wait for news. */
export const EventsQuery = z
  .object({
    after: z.coerce.number().int().nonnegative().optional(),
    /** Only this turn's entries; the stream ends after its published result. */
    turn: z.string().min(1).max(256).optional(),
    /** How long the request may wait for news; at most 20 s, so an invocation holds its stream slot well inside the API's timeout. */
    waitMs: z.coerce.number().int().min(0).max(20_000).optional(),
    /** `true`: a running session's partial model text comes as `model-text` events between entries. */
    live: z.enum(['true', 'false']).optional(),
  })
  .strict();

/** One `data:` of the event stream: a journal entry; its `id:` is the cursor. */
export const SessionEventView = z
  .object({
    cursor: z.number().int(),
    kind: z.enum(Object.values(EntryKind) as [EntryKind, ...EntryKind[]]),
    seq: z.number().int(),
    epoch: z.number().int(),
    at: z.string(),
    turnId: z.string().optional(),
    data: z.unknown(),
  })
  .meta({ id: 'SessionEvent' });

/** One `data:` of a `model-text` event: partial model text, never journaled; its `id:` is `cursor.chunk`. */
export const ModelTextView = z
  .object({
    kind: z.literal('model-text'),
    seq: z.number().int(),
    turnId: z.string(),
    chunk: z.number().int(),
    text: z.string(),
  })
  .meta({ id: 'ModelTextEvent' });

/** POST /sessions/{id}/send: a further turn (`queue`) or a message into the running turn (`inject`). */
export const SendBody = z
  .object({
    input: z.unknown().refine((input) => input !== undefined, 'input is required'),
    id: Ticket.shape.ticketId.optional(),
    mode: z.enum(Object.values(SendMode) as [SendMode, ...SendMode[]]).optional(),
    ifLastTurn: z.string().min(1).max(256).optional(),
    limits: Ticket.shape.limits,
  })
  .strict()
  .meta({ id: 'SendBody' });

export const SentView = z
  .object({
    sessionId: z.string(),
    turnId: z.string(),
    mode: z.enum(Object.values(SendMode) as [SendMode, ...SendMode[]]),
    accepted: z.boolean(),
  })
  .meta({ id: 'Sent' });

/**
 * How a request names a call: its id, and (as `status` shows them) the model entry that asked for
 * it, its tool and the digest of its parsed input. Named by the id alone, it is the call that waits
 * with that id when the request arrives; the response says which call that was.
 */
const callRef = {
  callId: z.string().min(1).max(256),
  modelSeq: z.number().int().positive().optional(),
  tool: z.string().min(1).max(256).optional(),
  digest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
};

/** POST /sessions/{id}/approve: a human's decision on a call waiting for approval. */
export const ApproveBody = z
  .object({ ...callRef, approved: z.boolean(), reason: z.string().max(4096).optional() })
  .strict()
  .meta({ id: 'ApproveBody' });

/** POST /sessions/{id}/resolve: an operator's verdict on a parked once-only call (and, optionally, its park). */
export const ResolveBody = z
  .object({
    ...callRef,
    parkSeq: z.number().int().positive().optional(),
    done: z.boolean(),
    output: z.unknown().optional(),
  })
  .strict()
  .meta({ id: 'ResolveBody' });

/** The decision or verdict posted, with the whole identity of the call it names. */
export const DecisionResponse = CallIdentityView.extend({ sessionId: z.string(), result: z.literal('posted') }).meta({
  id: 'DecisionResponse',
});

/** One background task of a session (GET /sessions/{id}/tasks). */
export const TaskView = z
  .object({
    taskId: z.string(),
    sessionId: z.string(),
    agent: z.string(),
    description: z.string(),
    status: z.enum(Object.values(TaskStatus) as [TaskStatus, ...TaskStatus[]]),
    turnId: z.string(),
    output: z.unknown().optional(),
    error: z.string().optional(),
  })
  .meta({ id: 'Task' });

export const TasksView = z.object({ sessionId: z.string(), tasks: z.array(TaskView) }).meta({ id: 'Tasks' });

/** POST /sessions/{id}/release: as `baton release SESSION [--no-cancel] [--timeout-s S]`. */
export const ReleaseBody = z
  .object({
    cancel: z.boolean().optional(),
    timeoutS: z.number().min(0).max(3600).optional(),
  })
  .strict()
  .meta({ id: 'ReleaseBody' });

export const ReleaseView = z
  .object({
    sessionId: z.string(),
    released: z.boolean(),
    cancelled: z.array(z.string()),
    stragglers: z.array(z.string()),
  })
  .meta({ id: 'ReleaseOutcome' });

export const CancelResponse = z
  .object({ sessionId: z.string(), result: z.literal('requested') })
  .meta({ id: 'CancelResponse' });

/** A turn of a session, in a path: `POST /sessions/{id}/turns/{turnId}/stop`. */
export const TurnPathParams = SessionIdParams.extend({ turnId: z.string().min(1).max(256) });

/** A stop of one turn: `requested` (it ends at its next step boundary, or without running when it still waits), or `already-ended` (nothing changed). */
export const StopTurnResponse = z
  .object({ sessionId: z.string(), turnId: z.string(), result: z.enum(['requested', 'already-ended']) })
  .meta({ id: 'StopTurnResponse' });

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.enum(Object.values(ApiErrorCode) as [ApiErrorCode, ...ApiErrorCode[]]),
      message: z.string(),
    }),
  })
  .meta({ id: 'Error' });
