/**
 * The client's operations and what they take and answer, whichever way it reaches Baton (the
 * store and queues directly, BatonClient; or the HTTP API, HttpBatonClient), with nothing of the
 * runtime or its schemas: the CLI's session commands and the HTTP client load this, not zod.
 */
import type { CallIdentity, CallRef } from '../core/call-identity.ts';
import type { JournalEntry } from '../core/journal.ts';
import type { SpendLimits } from '../core/spend.ts';
import type { TaskStatus } from '../core/tasks.ts';
import type { ForkEffects, SessionState } from '../core/vocabulary.ts';
import type { TurnOutcome } from '../ports/session-store.ts';
import type { Forked } from '../runtime/fork.ts';

export interface SubmitRequest {
  readonly agent: string;
  readonly input: unknown;
  readonly ticketId?: string | undefined;
  readonly tenant?: string | undefined;
  /** The turn's spend limits, within the agent's ceiling (a limit above it is refused). */
  readonly limits?: SpendLimits | undefined;
}

export interface Submitted {
  readonly ticketId: string;
  readonly sessionId: string;
  readonly tenant: string;
  readonly agent: string;
  readonly traceId: string;
}

export interface SessionStatus {
  readonly sessionId: string;
  readonly tenant: string;
  readonly agent: string;
  readonly ticketId: string;
  readonly status: SessionState;
  readonly turnId?: string | undefined;
  readonly outcome?: TurnOutcome | undefined;
  readonly legs: number;
  readonly epoch: number;
  /** Every recovery the session has had. */
  readonly recoveries: number;
  /** Recoveries in a row without progress (a crash loop fails the turn past its cap). */
  readonly consecutiveRecoveries: number;
  readonly tokens: number;
  /** What the session's model calls (compactions included) spent, in all and in its latest turn. */
  readonly usage?: { readonly session: SpendFigures; readonly turn: SpendFigures } | undefined;
  readonly cancelRequested: boolean;
  readonly traceId: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** A conversation's turns, oldest first. */
  readonly turns?: readonly { readonly turnId: string; readonly status: string; readonly outcome?: string }[];
  readonly activeTurnId?: string | undefined;
  /** Turns and messages accepted and not yet taken by the session. */
  readonly pendingInputs?: number | undefined;
  readonly pendingApprovals?: readonly PendingApproval[] | undefined;
  /** A once-only call parked for a human (`baton resolve`). */
  readonly parked?: ParkedCallView | undefined;
  /** When a waiting session wakes by itself (a durable timer, an approval timeout, a retry), ISO 8601. */
  readonly wakeAt?: string | undefined;
  /**
   * A tenant limit the waiting session is held back by (fair sharing): a tenant slot (with its
   * place in line when it last looked) or a model call's rate.
   */
  readonly limited?: LimitedView | undefined;
  /** A background task's session: the session that started it. */
  readonly parent?: string | undefined;
  /** A fork: the session whose history up to `cursor` is this one's. */
  readonly forkedFrom?: { readonly session: string; readonly cursor: number } | undefined;
  /** A session with background tasks: how many are in each status. */
  readonly tasks?: Partial<Record<TaskStatus, number>> | undefined;
  /** A release was asked for (`requested`) or carried out (`released`). */
  readonly release?: 'requested' | 'released' | undefined;
}

/** What a session waiting on a tenant limit shows: which limit, the sentence that says so, its place in line. */
export interface LimitedView {
  readonly limit: 'tenant-concurrency' | 'model-rate';
  readonly reason: string;
  readonly place?: number | undefined;
}

/** Tokens, model calls and US dollars (of the models the agent's price table names). */
export interface SpendFigures {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly modelCalls: number;
  readonly costUsd: number;
}

/** One background task of a session, as `baton tasks` lists it. */
export interface TaskInfo {
  readonly taskId: string;
  /** The child session that runs it (today the task id itself). */
  readonly sessionId: string;
  readonly agent: string;
  readonly description: string;
  readonly status: TaskStatus;
  /** The child turn the task is on (a continued task moves to a new one). */
  readonly turnId: string;
  readonly output?: unknown;
  readonly error?: string | undefined;
}

export interface ReleaseOptions {
  /** Cancel running tasks (default). Without it, a session with running tasks is refused and nothing changes. */
  readonly cancel?: boolean | undefined;
  /** How long the release waits for cancelled tasks before recording them failed (default 30 s). */
  readonly timeoutS?: number | undefined;
  /**
   * How long this call waits for the release to be carried out (default: its bound and a grace);
   * past it the outcome says `released: false` and the same release may be asked for again.
   */
  readonly waitMs?: number | undefined;
}

export interface ReleaseOutcome {
  readonly sessionId: string;
  /** False when the session's holder had not carried the release out when the client stopped waiting. */
  readonly released: boolean;
  /** Tasks that were running and were cancelled. */
  readonly cancelled: readonly string[];
  /** Tasks still running at the bound: recorded as failed, "cancelled because the session was released". */
  readonly stragglers: readonly string[];
}

/** A release's bound unless told otherwise. */
export const DEFAULT_RELEASE_TIMEOUT_S = 30;
/** How long after its bound a release waits for the session's holder to journal it. */
export const RELEASE_GRACE_MS = 60_000;

/** One journal entry as a stream event; `cursor` resumes the stream after it. */
export interface SessionEvent {
  readonly cursor: number;
  readonly kind: JournalEntry['kind'];
  readonly seq: number;
  readonly epoch: number;
  readonly at: string;
  readonly turnId?: string | undefined;
  readonly data: unknown;
}

/**
 * Partial model text while the response streams (a follower asked with `live`): never journaled,
 * in chunks to append in order; the model entry at `seq`, when it comes, is the whole response.
 */
export interface ModelTextEvent {
  readonly kind: 'model-text';
  /** The seq the model entry will take. */
  readonly seq: number;
  readonly turnId: string;
  /** 0, 1, 2 … : the chunks of one response, each following the one before. */
  readonly chunk: number;
  /** The text added since the previous chunk. */
  readonly text: string;
}

/** What a live follower sees: journal entries, and partial model text between them. */
export type FollowEvent = SessionEvent | ModelTextEvent;

/** A page of the stream (BatonClient.eventsPage). */
export interface EventsPage {
  readonly events: SessionEvent[];
  /** The last seq read, shown or not: the next page starts after it. */
  readonly cursor: number;
  /** The read came back full: more may follow at once. */
  readonly full: boolean;
  /** A per-turn stream reached its end. */
  readonly ended: boolean;
}

/** Where and how an events stream runs. */
export interface EventsOptions {
  readonly after?: number | undefined;
  /** Only this turn's entries, ending with its published result. */
  readonly turnId?: string | undefined;
  readonly follow?: boolean | undefined;
  /** With `follow`: partial model text of a streaming response as `model-text` events. */
  readonly live?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
}

export type CancelResult = 'requested' | 'already-finished' | 'not-found';

/**
 * What a stop of one turn found: `requested` (the turn runs, or waits in the queue, and ends
 * `cancelled` at its next step boundary or as it comes up, without running), `already-ended` (it
 * has its outcome, or the session ended: nothing changes), `not-found` (no such session or turn).
 */
export type StopTurnResult = 'requested' | 'already-ended' | 'not-found';

/** How a sent input reaches the session: a new turn behind the active one, or a message into it. */
export const SendMode = { queue: 'queue', inject: 'inject', steer: 'steer' } as const;
export type SendMode = (typeof SendMode)[keyof typeof SendMode];

export interface SendOptions {
  /** The turn's (or message's) id: a second send with the same id is the same input. */
  readonly id?: string | undefined;
  readonly mode?: SendMode | undefined;
  /** Refuse unless the turn accepted last is this one. */
  readonly ifLastTurn?: string | undefined;
  /** The turn's spend limits, within the agent's ceiling; refused for a message into a running turn. */
  readonly limits?: SpendLimits | undefined;
}

export interface Sent {
  readonly sessionId: string;
  readonly turnId: string;
  /** `inject` and `steer` fall back to `queue` when no turn is running to take them. */
  readonly mode: SendMode;
  /** False when this id was sent before: the send converged on it. */
  readonly accepted: boolean;
}

/**
 * A call waiting for a human's approval: the identity a decision names (lib/core/call-identity.ts)
 * and the parsed input the tool would run with, which `digest` digests (absent only on a request
 * journaled before digests existed).
 */
export interface PendingApproval extends CallIdentity {
  readonly input: unknown;
  /** In a fork: the original session already ran this call (its watermark's seq there, its key, its result). */
  readonly ranBefore?: { session: string; seq: number; idempotencyKey: string; result?: unknown } | undefined;
}

export type { Forked };

/** A fork's options (`baton fork`): the cursor, a new input at it, the fork's id and its effects. */
export interface ForkOptions {
  /** The last seq of the original the fork keeps. */
  readonly at: number;
  /** A new turn at the cursor; without it the fork continues the turn the cursor is inside. */
  readonly input?: unknown;
  /** The fork's ticket id (its session id derives from it); default a fresh one. */
  readonly id?: string | undefined;
  readonly effects?: ForkEffects | undefined;
  /** Another registered version of the agent for the fork to run on, for good ("what would version 3 have done here?"). */
  readonly version?: number | undefined;
}

/** `baton rerun`: a fork at the start of a turn, with that turn's input. */
export interface RerunOptions {
  readonly turnId: string;
  readonly id?: string | undefined;
  readonly effects?: ForkEffects | undefined;
  /** As ForkOptions.version. */
  readonly version?: number | undefined;
}

/** A once-only call parked for an operator: its identity and the park (`parkSeq`) a verdict answers. */
export interface ParkedCallView extends CallIdentity {
  readonly parkSeq: number;
}

/** How a verdict names a parked call: as a decision names its call, and optionally the park. */
export interface ParkedRef extends CallRef {
  readonly parkSeq?: number | undefined;
}

/** The park a verdict's caller named, if any. */
export const parkOf = (call: string | ParkedRef): { parkSeq?: number } =>
  typeof call === 'string' || call.parkSeq === undefined ? {} : { parkSeq: call.parkSeq };

/** A page request of the session list (one tenant, newest first). Times are ISO 8601. */
export interface SessionListQuery {
  readonly tenant?: string | undefined;
  readonly agent?: string | undefined;
  readonly state?: SessionState | undefined;
  readonly from?: string | undefined;
  readonly to?: string | undefined;
  readonly limit?: number | undefined;
  readonly cursor?: string | undefined;
}

/** One row of the session list. */
export interface SessionListItem {
  readonly sessionId: string;
  readonly tenant: string;
  readonly agent: string;
  readonly ticketId: string;
  readonly status: SessionState;
  readonly legs: number;
  readonly recoveries: number;
  readonly tokens: number;
  readonly cancelRequested: boolean;
  readonly createdAt: string;
}

export interface SessionListPage {
  readonly sessions: SessionListItem[];
  /** Pass it back for the next page; absent on the last. */
  readonly cursor?: string | undefined;
}

/** The client's operations, whichever way it reaches Baton: the store and queues directly, or the HTTP API. */
export interface BatonTransport {
  submit(request: SubmitRequest): Promise<Submitted>;
  fork(sessionId: string, options: ForkOptions): Promise<Forked>;
  rerun(sessionId: string, options: RerunOptions): Promise<Forked>;
  status(sessionId: string): Promise<SessionStatus | undefined>;
  sessions(query?: SessionListQuery): Promise<SessionListPage>;
  events(sessionId: string, options: EventsOptions & { live: true }): AsyncGenerator<FollowEvent>;
  events(sessionId: string, options?: EventsOptions): AsyncGenerator<SessionEvent>;
  cancel(sessionId: string): Promise<CancelResult>;
  /** Stops one turn of a session (running or queued); the conversation goes on. */
  stopTurn(sessionId: string, turnId: string): Promise<StopTurnResult>;
  /** A further turn or a message into the running turn; a refusal throws TurnRefusedError. */
  send(sessionId: string, input: unknown, options?: SendOptions): Promise<Sent>;
  /**
   * A human's decision on a call that waits for approval, named by its id alone or with its model
   * entry, tool and input digest (as `status` shows them); answers the whole identity it posted for.
   */
  approve(
    sessionId: string,
    call: string | CallRef,
    decision: { approved: boolean; reason?: string },
  ): Promise<CallIdentity>;
  /** An operator's verdict on a parked once-only call, named as `approve` names one (and its park). */
  resolve(
    sessionId: string,
    call: string | ParkedRef,
    verdict: { done: boolean; output?: unknown },
  ): Promise<CallIdentity>;
  /** A session's background tasks with their status read now. */
  tasks(sessionId: string): Promise<TaskInfo[]>;
  /** Cancels a session's running tasks, waits for them up to the bound, and refuses it new work. */
  release(sessionId: string, options?: ReleaseOptions): Promise<ReleaseOutcome>;
}

/** Rows shown when a list request names no limit. */
export const DEFAULT_LIST_LIMIT = 50;
