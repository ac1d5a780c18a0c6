import type { SessionKey } from '../core/ids.ts';
import type { InboxItem } from '../core/inbox.ts';
import type { JournalEntry } from '../core/journal.ts';
import type { SessionSnapshot } from '../core/snapshot.ts';
import type { SpendLimits } from '../core/spend.ts';
import type { OutcomeStatus, SessionState } from '../core/vocabulary.ts';

/** The session record (sk META): state, lease and the counters that drive wake-ups. */
export interface SessionRecord {
  readonly key: SessionKey;
  readonly ticketId: string;
  readonly state: SessionState;
  /** Lease holder; absent when the lease is free. */
  readonly owner?: string | undefined;
  /** Lease expiry (epoch ms); absent when the lease is free. */
  readonly until?: number | undefined;
  /** Fencing token: incremented by every acquire. */
  readonly epoch: number;
  /** Bumped by every external event (turn, inbox message, child outcome, approval, cancel). */
  readonly pendingVersion: number;
  /** The pendingVersion the last owner had handled when it released. */
  readonly seenVersion: number;
  readonly activeTurnId?: string | undefined;
  /**
   * The input of a turn, carried by the write that made it active when it is small
   * (INLINE_INPUT_MAX_BYTES): a leg starting that turn needs no read of the turn item. Only
   * valid while `turnId` is the active turn.
   */
  readonly activeInput?: ActiveInput | undefined;
  /** A conversation takes further turns and goes idle between them; a one-shot session refuses them. */
  readonly conversation: boolean;
  /** Turns accepted behind the active one, oldest first: they run in this order. */
  readonly turnQueue: readonly string[];
  /** The turn accepted last: what `--if-last-turn` compares against. */
  readonly lastTurnId?: string | undefined;
  /**
   * The turn whose result was published last, set by the release or `endTurn` that follows the
   * publish (in place of a `published` journal entry): a later leg does not send it again.
   */
  readonly publishedTurnId?: string | undefined;
  /** Messages, decisions and verdicts waiting for the owner to journal them, oldest first. */
  readonly inbox: readonly InboxItem[];
  readonly cancelRequested: boolean;
  /** Consecutive recoveries with no journal progress (a crash loop when it passes its cap). */
  readonly recoveries: number;
  readonly legs: number;
  /** Every recovery the session has had; `recoveries` is reset by progress, this never is. */
  readonly recovered: number;
  /** Model tokens (input + output) of the legs that released; a leg that died is not counted (the journal has every step). */
  readonly tokens: number;
  /** One W3C trace id for the whole session. */
  readonly traceId: string;
  /** Present only while the sweeper should look at this session. */
  readonly sweepAt?: number | undefined;
  /** The nonce the current holder stored when it yielded (lib/core/lease.ts planAcquire). */
  readonly handoff?: string | undefined;
  /** When every item of the session last had its expiry moved forward (refreshExpiry); absent: never. */
  readonly expiryRefreshedAt?: number | undefined;
  /**
   * The retention (s) the session's items were written under since then: with that time, it tells
   * until when every item lives (lib/runtime/expiry.ts). Absent on records written before it was kept.
   */
  readonly retentionS?: number | undefined;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** When the retention TTL lets the store delete it (epoch ms); deletion may lag, so readers check. */
  readonly expiresAt?: number | undefined;
  /** A background task's session names the session that started it (same tenant). */
  readonly parent?: SessionKey | undefined;
  /** A release was asked for (when, and how long it waits for running tasks): new work is refused. */
  readonly releaseRequested?: ReleaseRequestMark | undefined;
  /**
   * The agent version the session runs on: the newest deployed when it was created, moved by an
   * upgrade (the journal's `upgraded` entry is the truth; this copy serves `baton versions`).
   * Absent on sessions created before agents had versions: version 1.
   */
  readonly agentVersion?: number | undefined;
  /** The journal format of the build that created it (lib/core/journal.ts); absent: format 1. */
  readonly journalFormat?: number | undefined;
  /** A fork: the session (same tenant) whose journal up to `cursor` is this one's history. */
  readonly forkedFrom?: ForkOrigin | undefined;
}

/**
 * Where a fork came from: its history is `key`'s journal up to `cursor`, read from there. `chain`
 * is every session whose journal items that history reads (`key` first, then `key`'s own origins
 * as far as the cursor reaches): their items must live as long as the fork's (lib/runtime/fork.ts).
 */
export interface ForkOrigin {
  readonly key: SessionKey;
  readonly cursor: number;
  readonly chain: readonly SessionKey[];
}

/** A turn's input carried on the session record; see SessionRecord.activeInput. */
export interface ActiveInput {
  readonly turnId: string;
  readonly input: unknown;
}

/** When a release was asked for and the bound of its wait; the first request's mark is kept. */
export interface ReleaseRequestMark {
  readonly at: number;
  readonly timeoutMs: number;
}

export interface NewSession {
  readonly key: SessionKey;
  readonly ticketId: string;
  readonly activeTurnId: string;
  /** The active turn's input when small enough to carry on the record (SessionRecord.activeInput). */
  readonly activeInput?: ActiveInput | undefined;
  readonly traceId: string;
  readonly now: number;
  /** When the sweeper should kick it if no kick arrives first. */
  readonly sweepAt: number;
  /** Created already finished: a ticket refused at intake, recorded so `status` can show why. */
  readonly rejected?: boolean | undefined;
  readonly ttlSeconds?: number | undefined;
  /** The retention its items are written under (SessionRecord.retentionS). */
  readonly retentionS?: number | undefined;
  /** The agent declares `conversation: true`: the session takes further turns. */
  readonly conversation?: boolean | undefined;
  /** A background task's session: the session that started it. */
  readonly parent?: SessionKey | undefined;
  /** The agent version it starts on (SessionRecord.agentVersion). */
  readonly agentVersion?: number | undefined;
  /** The journal format of the build that creates it (SessionRecord.journalFormat). */
  readonly journalFormat?: number | undefined;
  /**
   * A fork: its origin, and the epoch its `forked` entry was written under (the original's, so the
   * fork's first acquire fences above every entry of its history).
   */
  readonly fork?: { readonly origin: ForkOrigin; readonly epoch: number } | undefined;
  /** When the session's items were last known to move (SessionRecord.expiryRefreshedAt): a fork inherits its origin's. */
  readonly expiryRefreshedAt?: number | undefined;
}

/** A turn: one input of a session, write-once outcome. */
export interface TurnRecord {
  readonly turnId: string;
  readonly ticketId: string;
  readonly input: unknown;
  readonly inputHash: string;
  readonly createdAt: number;
  readonly outcome?: TurnOutcome | undefined;
  /** The ticket's spend limits for this turn (within the agent's ceiling, checked at intake). */
  readonly limits?: SpendLimits | undefined;
}

export interface TurnOutcome {
  readonly status: OutcomeStatus;
  readonly output?: unknown;
  readonly error?: string | undefined;
  readonly at: number;
}

export interface AcquireRequest {
  readonly owner: string;
  readonly until: number;
  readonly now: number;
  /** The epoch read just before: the acquire is a compare-and-set on it. */
  readonly expectEpoch: number;
  /** The holder seen (for a continuation or a recovery), or undefined when the lease was free. */
  readonly expectOwner?: string | undefined;
  /** Taking over an expired lease: counts a recovery and requires `until < now`. */
  readonly recovery: boolean;
  /** The record's new expiry (epoch s): a session in use never expires under its holder. */
  readonly ttlSeconds?: number | undefined;
}

export type AcquireResult =
  | { readonly ok: true; readonly record: SessionRecord }
  | { readonly ok: false; readonly current: SessionRecord | undefined };

export interface RenewRequest {
  readonly owner: string;
  readonly epoch: number;
  readonly until: number;
  /** The leg has appended progress since it acquired: clears the crash-loop counter. */
  readonly progressed: boolean;
  /** Stores the nonce its continuation will carry (a yield); acquire clears it. */
  readonly handoff?: string | undefined;
  /** Records the agent version the session moved to (an upgrade the leg journaled). */
  readonly agentVersion?: number | undefined;
}

export interface ReleaseRequest {
  readonly owner: string;
  readonly epoch: number;
  readonly state: SessionState;
  /** Release only if no event arrived since the owner last looked (no lost wake-up). */
  readonly expectPendingVersion?: number | undefined;
  /** Recorded as seenVersion. */
  readonly seenVersion: number;
  /** Keep the sweeper watching (a yield, a wait with a timer) or stop (terminal, idle). */
  readonly sweepAt?: number | undefined;
  readonly progressed: boolean;
  readonly ttlSeconds?: number | undefined;
  /** Model tokens this leg used, added to the session's count. */
  readonly tokens?: number | undefined;
  /** The turn whose result this leg published: recorded as `publishedTurnId` in the same write. */
  readonly publishedTurnId?: string | undefined;
}

export type ReleaseResult = { readonly ok: true } | { readonly ok: false; readonly current: SessionRecord | undefined };

export interface BumpRequest {
  readonly now: number;
  readonly cancel?: boolean | undefined;
  /** Marks a release (kept if one is marked already), which the lease holder carries out. */
  readonly release?: { readonly timeoutMs: number } | undefined;
  /** When the sweeper should look if no kick arrives (kept if already earlier). */
  readonly sweepAt: number;
  /**
   * Set `sweepAt` to this one even when one is set: for a session waiting on a far timer (a task
   * wait), so a lost wake-up kick costs a sweep, not the rest of the wait. An early look is
   * harmless: it finds the new version, or the timer not yet due, and waits again.
   */
  readonly sweepSoon?: boolean | undefined;
}

export type BumpResult =
  | { readonly ok: true; readonly record: SessionRecord }
  | { readonly ok: false; readonly reason: 'not-found' | 'finished'; readonly current?: SessionRecord | undefined };

export interface EnqueueTurnRequest {
  readonly turnId: string;
  readonly now: number;
  /** When the sweeper should kick an idle session if the new turn's kick is lost. */
  readonly sweepAt: number;
  /** Refused when this many turns already wait behind the active one. */
  readonly maxPending: number;
  /** Refused unless the turn accepted last is this one (the sender's view is current). */
  readonly ifLastTurn?: string | undefined;
  /**
   * Steer: when a turn is active, the new turn goes to the head of the queue and a `steer` inbox
   * item (same write) tells the owner to supersede the running turn. Idle, it is queued as usual.
   */
  readonly steer?: boolean | undefined;
  /** The turn's input, carried on the record when this enqueue makes it active (SessionRecord.activeInput). */
  readonly activeInput?: ActiveInput | undefined;
}

/** Why a new turn was refused. */
export const EnqueueRefusal = {
  notFound: 'not-found',
  finished: 'finished',
  oneShot: 'one-shot',
  stale: 'stale',
  full: 'full',
  released: 'released',
} as const;
export type EnqueueRefusal = (typeof EnqueueRefusal)[keyof typeof EnqueueRefusal];

export type EnqueueTurnResult =
  | {
      readonly ok: true;
      readonly record: SessionRecord;
      /** False when the turn was accepted before (active, waiting or finished): nothing changed. */
      readonly queued: boolean;
      /** The turn was queued at the head and the running turn told to wind down. */
      readonly steered?: boolean | undefined;
    }
  | { readonly ok: false; readonly reason: EnqueueRefusal; readonly current?: SessionRecord | undefined };

export interface EndTurnRequest {
  readonly owner: string;
  readonly epoch: number;
  /** The head of the turn queue as the owner read it (it becomes active), or undefined to go idle. */
  readonly next: string | undefined;
  /**
   * End the turn only if no event arrived since the owner last looked (a cancel, a release, a
   * turn): the write records it as seenVersion, so an event it did not see is never absorbed.
   */
  readonly expectPendingVersion: number;
  readonly now: number;
  /** With a next turn: when the sweeper kicks it if its kick is lost. */
  readonly sweepAt: number;
  readonly progressed: boolean;
  readonly ttlSeconds?: number | undefined;
  /** The turn whose result this leg published: recorded as `publishedTurnId` in the same write. */
  readonly publishedTurnId?: string | undefined;
}

/**
 * The owner goes straight on to the next queued turn under the lease it holds (one leg for both
 * turns): the head of the queue becomes active, the session stays `running` under the same owner
 * and epoch, and the lease is extended — in the one write that also records the published turn.
 * Fenced as `endTurn` is: on the lease, the queue head and pendingVersion.
 */
export interface AdvanceTurnRequest {
  readonly owner: string;
  readonly epoch: number;
  /** The head of the turn queue as the owner read it: it becomes the active turn. */
  readonly next: string;
  /** Advance only if no event arrived since the owner last looked; recorded as seenVersion. */
  readonly expectPendingVersion: number;
  readonly now: number;
  /** The lease's new expiry (and the sweeper's look, as a renewal sets it). */
  readonly until: number;
  readonly progressed: boolean;
  readonly ttlSeconds?: number | undefined;
  /** The turn whose result this leg published: recorded as `publishedTurnId` in the same write. */
  readonly publishedTurnId?: string | undefined;
}

export type AdvanceTurnResult =
  | { readonly ok: true; readonly record: SessionRecord }
  | { readonly ok: false; readonly current: SessionRecord | undefined };

export interface PostInboxRequest {
  readonly item: InboxItem;
  readonly now: number;
  /** When the sweeper should look if the item's kick is lost (kept if already earlier). */
  readonly sweepAt: number;
  /** Refused when this many items already wait. */
  readonly maxPending: number;
}

export type PostInboxResult =
  | {
      readonly ok: true;
      readonly record: SessionRecord /** False when an item of this id was posted before. */;
      readonly posted: boolean;
    }
  | {
      readonly ok: false;
      readonly reason: 'not-found' | 'finished' | 'full';
      readonly current?: SessionRecord | undefined;
    };

export interface TakeInboxRequest {
  readonly owner: string;
  readonly epoch: number;
  /** The items the owner journaled or dropped, with their place in the inbox as it read it. */
  readonly taken: readonly { readonly id: string; readonly index: number }[];
}

export interface RefreshExpiryRequest {
  /** The items' new expiry (epoch s). */
  readonly ttlSeconds: number;
  readonly now: number;
  /** The retention `ttlSeconds` was computed under (SessionRecord.retentionS). */
  readonly retentionS: number;
}

/** How much of the journal one read returns. */
export interface JournalReadOptions {
  /**
   * At most this many entries (a positive integer): a page, which costs about what it returns.
   * The next page is read after the last entry's seq.
   */
  readonly limit?: number | undefined;
}

/** The limit of a journal read, checked: a page of no entries, or a fraction of one, is a caller's bug. */
export function journalReadLimit(options: JournalReadOptions | undefined): number | undefined {
  const limit = options?.limit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
    throw new RangeError(`journal read limit must be a positive integer, got ${limit}`);
  return limit;
}

/**
 * Durable session state: records, turns, the journal. Every write that an owner makes is fenced
 * (session record by epoch and owner, journal entries by seq) and recognises its own retried write.
 */
/** One turn of one session, as `getTurns` is asked for it. */
export interface TurnRead {
  readonly key: SessionKey;
  readonly turnId: string;
}

export interface SessionStore {
  /** Conditional create; an existing session is returned unchanged. */
  createSession(session: NewSession): Promise<{ created: boolean; record: SessionRecord }>;
  getSession(key: SessionKey): Promise<SessionRecord | undefined>;
  /**
   * Many records at once, in the order asked (undefined where none), each read as `getSession`
   * reads it; not a snapshot across them. What a parent reads of its tasks: a few requests for a
   * hundred children instead of a hundred.
   */
  getSessions(keys: readonly SessionKey[]): Promise<(SessionRecord | undefined)[]>;

  /** Conditional create; an existing turn is returned unchanged (the caller compares hashes). */
  putTurn(key: SessionKey, turn: TurnRecord, ttlSeconds?: number): Promise<{ created: boolean; turn: TurnRecord }>;
  getTurn(key: SessionKey, turnId: string): Promise<TurnRecord | undefined>;
  /** Many turns at once, in the order asked (undefined where none), as `getSessions` reads records. */
  getTurns(reads: readonly TurnRead[]): Promise<(TurnRecord | undefined)[]>;
  /** Write-once: a second outcome is ignored and the first returned. */
  setTurnOutcome(key: SessionKey, turnId: string, outcome: TurnOutcome): Promise<TurnOutcome>;

  /** Every turn of the session, oldest first (by creation time). */
  listTurns(key: SessionKey): Promise<TurnRecord[]>;
  /**
   * Accepts a further turn of a conversation, atomically with the turn having no outcome yet:
   * bumps pendingVersion and appends it to the turn queue or, when the session is idle (its last
   * turn ended and published), makes it the active turn at once (state queued, for its kick).
   * A turn accepted before answers `queued: false`.
   */
  enqueueTurn(key: SessionKey, request: EnqueueTurnRequest): Promise<EnqueueTurnResult>;
  /**
   * The owner's release at the end of a conversation turn: the next queued turn becomes active
   * (state queued, for its kick) or, with none, the session goes idle with no sweep and no lease.
   * Refused when the lease moved, an event arrived since `expectPendingVersion` or the queue head
   * is not `next`: the owner reads again and handles what arrived first.
   */
  endTurn(key: SessionKey, request: EndTurnRequest): Promise<ReleaseResult>;
  /**
   * The owner's end of a conversation turn when it goes on to the next queued turn itself: that
   * turn becomes active with the session still `running` under this lease (extended to `until`),
   * and the fresh record is returned. Refused as `endTurn` is (lease moved, an event arrived since
   * `expectPendingVersion`, the queue head is not `next`); recognises its own retried write.
   */
  advanceTurn(key: SessionKey, request: AdvanceTurnRequest): Promise<AdvanceTurnResult>;

  /** Posts an inbox item (idempotent by id) and bumps pendingVersion, so the owner or a kick sees it. */
  postInbox(key: SessionKey, request: PostInboxRequest): Promise<PostInboxResult>;
  /** The owner takes items off the inbox; throws LeaseLostError when it no longer holds the lease. */
  takeInbox(key: SessionKey, request: TakeInboxRequest): Promise<void>;

  acquire(key: SessionKey, request: AcquireRequest): Promise<AcquireResult>;
  /** Extends the lease; throws LeaseLostError when the condition fails. Returns the fresh record. */
  renew(key: SessionKey, request: RenewRequest): Promise<SessionRecord>;
  release(key: SessionKey, request: ReleaseRequest): Promise<ReleaseResult>;
  /** Records an external event: pendingVersion + 1 (and cancelRequested). */
  bump(key: SessionKey, request: BumpRequest): Promise<BumpResult>;

  /**
   * Moves the expiry of every item of the session but the record (turns, journal, snapshots) that
   * expires before `ttlSeconds` forward to it, then stamps `expiryRefreshedAt` (= `now`) and
   * `retentionS` on the record: a session in use longer than the retention keeps its first
   * entries. Items without an expiry are left so. Returns how many moved.
   */
  refreshExpiry(key: SessionKey, request: RefreshExpiryRequest): Promise<number>;

  /** Appends at entry.seq, conditional on the seq being free; throws SeqTakenError otherwise. */
  append(key: SessionKey, entry: JournalEntry, ttlSeconds?: number): Promise<void>;
  /** Entries with seq > afterSeq, in order, validated; with `limit`, only the first `limit` of them. */
  readJournal(key: SessionKey, afterSeq?: number, options?: JournalReadOptions): Promise<JournalEntry[]>;

  /** Write-once per seq: a snapshot already at that seq is kept. */
  putSnapshot(key: SessionKey, snapshot: SessionSnapshot, ttlSeconds?: number): Promise<void>;
  /** The snapshot with the highest seq, unvalidated beyond its shape: the runtime decides whether to trust it. */
  getLatestSnapshot(key: SessionKey): Promise<SessionSnapshot | undefined>;

  /** Sessions whose sweepAt has passed, from one shard of the sparse sweep index. */
  findDue(shard: number, now: number, limit: number): Promise<DueSession[]>;
  /** Finds a session by its id alone (the CLI knows only the id). */
  findSession(sessionId: string): Promise<SessionRecord | undefined>;
  listSessions(options?: { state?: SessionState | undefined; limit?: number | undefined }): Promise<SessionRecord[]>;
  /** One page of a tenant's sessions, newest first, from the byTenant index (never a table scan). */
  querySessions(query: SessionQuery): Promise<SessionPage>;
}

/** A page request of the session list. Time bounds are on creation time (epoch ms, inclusive). */
export interface SessionQuery {
  readonly tenant: string;
  readonly agent?: string | undefined;
  readonly state?: SessionState | undefined;
  readonly createdFrom?: number | undefined;
  readonly createdTo?: number | undefined;
  readonly limit: number;
  /** The `cursor` of the previous page. */
  readonly cursor?: string | undefined;
}

/** What a list row shows: the byTenant index's projection. */
export interface SessionSummary {
  readonly key: SessionKey;
  readonly ticketId: string;
  readonly state: SessionState;
  readonly legs: number;
  /** Every recovery so far (the record's `recovered`). */
  readonly recoveries: number;
  readonly tokens: number;
  readonly cancelRequested: boolean;
  readonly createdAt: number;
}

export interface SessionPage {
  readonly sessions: SessionSummary[];
  /** Present when more sessions may follow. */
  readonly cursor?: string | undefined;
}

/** A session the sweeper should look at, and since when (oldest first). */
export interface DueSession {
  readonly key: SessionKey;
  readonly sweepAt: number;
}

/** Number of shards of the sweep index; a session's shard is derived from its id. */
export const SWEEP_SHARDS = 4;
