import { randomUUID } from 'node:crypto';
import { agentAtVersion } from '../agent/agent-versions.ts';
import type { AgentDefinition, AgentRegistry } from '../agent/define-agent.ts';
import { asText } from '../agent/transcript.ts';
import { type CallIdentity, type CallRef, callRef, identityOf, matchesRef } from '../core/call-identity.ts';
import { contentDigest, ticketBlobPrefix } from '../core/content-digest.ts';
import {
  GoneError,
  InvalidInputError,
  NotFoundError,
  RoleRequiredError,
  TicketConflictError,
  TurnRefusedError,
} from '../core/errors.ts';
import type { SessionView } from '../core/fold.ts';
import { DEFAULT_TENANT, deriveSessionId, hashJson } from '../core/ids.ts';
import { decisionItem, type InboxItem, resolveItem, stopItem } from '../core/inbox.ts';
import type { JournalEntry } from '../core/journal.ts';
import { describeIssues, INLINE_PAYLOAD_LIMIT_BYTES } from '../core/messages.ts';
import { nextWakeAt } from '../core/next-action.ts';
import { RUNTIME_DEFAULTS } from '../core/resources.ts';
import { missingRole, type Operation, type Role, roleRefusal } from '../core/roles.ts';
import { foldFromSnapshot, foldWhole, type SessionFold, snapshotAt } from '../core/snapshot.ts';
import { type SpendLimits, SpendLimitsSchema, turnLimits } from '../core/spend.ts';
import { childKey, countByStatus, TaskStatus } from '../core/tasks.ts';
import { childContext, newTraceId } from '../core/trace-context.ts';
import {
  DEFAULT_MAX_PENDING_INPUTS,
  reportedState,
  type SessionState,
  TERMINAL_SESSION_STATES,
} from '../core/vocabulary.ts';
import type { BlobStore } from '../ports/blob-store.ts';
import type { Clock } from '../ports/clock.ts';
import type { LiveTextChunk, LiveTextStore } from '../ports/live-text.ts';
import type { TicketQueue, WorkQueue } from '../ports/queues.ts';
import type { SessionRecord, SessionStore, TurnOutcome, TurnRecord } from '../ports/session-store.ts';
import { admitInput } from '../runtime/admission.ts';
import { sessionItemTtlSeconds } from '../runtime/expiry.ts';
import { type ForkDeps, type Forked, forkSession, rerunPoint } from '../runtime/fork.ts';
import { type PostDeps, post } from '../runtime/protocol/post.ts';
import { cancelChild, readTaskLines } from '../runtime/tasks/read-tasks.ts';
import { acceptTurn } from '../runtime/turn-intake.ts';
import { EVENTS_PAGE_ENTRIES, readJournalPage, turnStartCursor } from './journal-pages.ts';
import {
  type BatonTransport,
  type CancelResult,
  DEFAULT_LIST_LIMIT,
  DEFAULT_RELEASE_TIMEOUT_S,
  type EventsOptions,
  type EventsPage,
  type FollowEvent,
  type ForkOptions,
  type ModelTextEvent,
  type ParkedRef,
  parkOf,
  RELEASE_GRACE_MS,
  type ReleaseOptions,
  type ReleaseOutcome,
  type RerunOptions,
  SendMode,
  type SendOptions,
  type Sent,
  type SessionEvent,
  type SessionListPage,
  type SessionListQuery,
  type SessionStatus,
  type SpendFigures,
  type StopTurnResult,
  type SubmitRequest,
  type Submitted,
  type TaskInfo,
} from './transport.ts';

/** The operations' types and constants, in a module of their own that loads neither zod nor the runtime (transport.ts). */
export * from './transport.ts';

/** Ticket inputs above this go to the payload bucket (the queues keep to MAX_MESSAGE_BYTES, attributes included). */
export const INLINE_TICKET_LIMIT_BYTES = INLINE_PAYLOAD_LIMIT_BYTES;

export interface BatonClientDeps {
  readonly store: SessionStore;
  readonly tickets: TicketQueue;
  readonly workQueue: WorkQueue;
  readonly blobs?: BlobStore | undefined;
  /** Partial model text of running sessions, for followers that ask for it; without it they see entries only. */
  readonly live?: LiveTextStore | undefined;
  readonly clock: Clock;
  /** Inputs that may wait for a session (default 9). */
  readonly maxPendingInputs?: number | undefined;
  /** When the sweeper looks at a session whose kick was lost (default 30 s). */
  readonly sweepGraceMs?: number | undefined;
  /**
   * The roles of whoever uses this client (lib/core/roles.ts): an operation needing another is
   * refused with RoleRequiredError before anything is read. Default: every role (the table's IAM
   * grants are then what limits it).
   */
  readonly roles?: readonly Role[] | undefined;
  /**
   * The deployment's agents: submit and send then admit an input against its agent's schema and
   * limits at once (lib/runtime/admission.ts), as intake would. Without them the rules that need
   * no agent still hold.
   */
  readonly agents?: AgentRegistry | undefined;
}

const DEFAULT_SWEEP_GRACE_MS = RUNTIME_DEFAULTS.leaseTtlMs;

/**
 * Entries past the latest snapshot a read folds before it leaves a snapshot of its own for the
 * next read: status, polled by the console, then reads at most about this many entries, however
 * long the journal.
 */
export const READER_SNAPSHOT_AFTER_ENTRIES = 64;

/** A message's text: `{ text }` as the CLI's --text sends it, anything else as its JSON. */
const messageText = (input: unknown): string =>
  typeof (input as { text?: unknown } | null)?.text === 'string' ? (input as { text: string }).text : asText(input);

/** The spend figures of a folded journal: the session's and its latest turn's. */
function spendOf(view: SessionView): { session: SpendFigures; turn: SpendFigures } {
  return {
    session: { ...view.usage, modelCalls: view.modelCalls, costUsd: view.costUsd },
    turn: { ...view.turnUsage, modelCalls: view.turnModelCalls, costUsd: view.turnCostUsd },
  };
}

/**
 * The typed client the CLI, the demo and the tests use, straight on the store and queues: submit
 * tickets, read status, list, follow events from a cursor, cancel. HttpBatonClient does the same
 * through the HTTP API.
 */
export class BatonClient implements BatonTransport {
  constructor(private readonly deps: BatonClientDeps) {}

  /** Sends a ticket through the tickets queue; the session id is known before intake runs. */
  async submit(request: SubmitRequest): Promise<Submitted> {
    this.#may('submit');
    const tenant = request.tenant ?? DEFAULT_TENANT;
    const ticketId = request.ticketId ?? randomUUID();
    if (request.input === undefined) throw new InvalidInputError('input is required');
    const agent = this.#agent(request.agent);
    admitInput(request.input, agent, `ticket ${ticketId} input`);
    const limits = admitLimits(request.limits, agent);
    const sessionId = deriveSessionId(tenant, request.agent, ticketId);
    let traceId: string | undefined;
    if (request.ticketId !== undefined) {
      // Intake would refuse it anyway; refusing here gives the producer the error, not the results queue.
      const key = { tenant, agent: request.agent, id: sessionId };
      const turn = await this.deps.store.getTurn(key, ticketId);
      if (turn && turn.inputHash !== hashJson(request.input)) throw new TicketConflictError(ticketId);
      // A resubmission joins its session: it reports, and sends under, the trace the session has.
      if (turn) traceId = (await this.deps.store.getSession(key))?.traceId;
    }
    let input = request.input;
    const bytes = Buffer.byteLength(JSON.stringify(input));
    if (bytes > INLINE_TICKET_LIMIT_BYTES) {
      if (!this.deps.blobs)
        throw new InvalidInputError(`input is ${bytes} bytes, over the SQS limit, and no payload bucket is configured`);
      const text = JSON.stringify(input);
      const digest = contentDigest(text);
      // The key carries the hash too: a resubmission with another input never meets the first one's blob.
      const key = `${ticketBlobPrefix(tenant, request.agent)}/${encodeURIComponent(ticketId)}-${digest.sha256}.json`;
      await this.deps.blobs.put(key, text);
      input = { $blob: key, ...digest };
    }
    traceId ??= newTraceId();
    await this.deps.tickets.submit(
      { v: 1, ticketId, agent: request.agent, tenant, input, ...(limits === undefined ? {} : { limits }) },
      { trace: childContext(traceId) },
    );
    return {
      ticketId,
      sessionId,
      tenant,
      agent: request.agent,
      traceId,
    };
  }

  /**
   * Forks a session: a new session whose history is this one's up to `at` (nothing before it runs
   * again), with a new input there or continuing the turn `at` is inside; once-only calls the
   * original made after `at` are asked, reused, denied or rerun as `effects` says (default ask).
   * Needs `submit` and `read`. Another tenant's session is not found.
   * @example await client.fork(sessionId, { at: 12, input: { text: 'try the other order' }, effects: 'reuse' })
   */
  async fork(sessionId: string, options: ForkOptions): Promise<Forked> {
    for (const operation of ['fork', 'status'] as const) this.#may(operation);
    return this.forkRecord(await this.#find(sessionId), options);
  }

  /**
   * A fork of a record already read (the API checked its tenant). A new input is admitted against
   * the version the fork runs on: the one asked for, else the newest.
   */
  forkRecord(original: SessionRecord, options: ForkOptions): Promise<Forked> {
    const { agent } = original.key;
    const { agents } = this.deps;
    // Without agents, forkSession refuses a version it cannot check.
    const atVersion =
      options.version === undefined || agents === undefined
        ? undefined
        : agentAtVersion(agents, agent, options.version);
    if (options.input !== undefined)
      admitInput(options.input, atVersion ?? this.#agent(agent), `fork of ${original.key.id} input`);
    return forkSession(this.#forkDeps, {
      original,
      cursor: options.at,
      input: options.input,
      ticketId: options.id,
      effects: options.effects,
      version: options.version,
    });
  }

  /** Runs turn `turnId` again in a fork that starts where it started, with its input (see fork). */
  async rerun(sessionId: string, options: RerunOptions): Promise<Forked> {
    for (const operation of ['fork', 'status'] as const) this.#may(operation);
    return this.rerunRecord(await this.#find(sessionId), options);
  }

  /** A rerun of a record already read (the API checked its tenant). */
  async rerunRecord(original: SessionRecord, options: RerunOptions): Promise<Forked> {
    const { cursor, input } = await rerunPoint(this.deps.store, original, options.turnId);
    return this.forkRecord(original, {
      at: cursor,
      input,
      id: options.id,
      effects: options.effects,
      version: options.version,
    });
  }

  get #forkDeps(): ForkDeps {
    return { ...this.deps, sweepGraceMs: this.deps.sweepGraceMs ?? DEFAULT_SWEEP_GRACE_MS };
  }

  async status(sessionId: string): Promise<SessionStatus | undefined> {
    this.#may('status');
    const record = await this.deps.store.findSession(sessionId);
    if (!record) return undefined;
    return this.#status(record);
  }

  /** One page of a tenant's sessions (the default tenant unless named), from the byTenant index. */
  async sessions(query: SessionListQuery = {}): Promise<SessionListPage> {
    this.#may('sessions');
    const time = (iso: string | undefined, what: string) => {
      if (iso === undefined) return undefined;
      const ms = Date.parse(iso);
      if (Number.isNaN(ms)) throw new InvalidInputError(`${what} must be an ISO 8601 date-time, got '${iso}'`);
      return ms;
    };
    const page = await this.deps.store.querySessions({
      tenant: query.tenant ?? DEFAULT_TENANT,
      agent: query.agent,
      state: query.state,
      createdFrom: time(query.from, 'from'),
      createdTo: time(query.to, 'to'),
      limit: query.limit ?? DEFAULT_LIST_LIMIT,
      cursor: query.cursor,
    });
    return {
      sessions: page.sessions.map((s) => ({
        sessionId: s.key.id,
        tenant: s.key.tenant,
        agent: s.key.agent,
        ticketId: s.ticketId,
        status: s.state,
        legs: s.legs,
        recoveries: s.recoveries,
        tokens: s.tokens,
        cancelRequested: s.cancelRequested,
        createdAt: new Date(s.createdAt).toISOString(),
      })),
      ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
    };
  }

  /**
   * The journal as a stream from a cursor (the `cursor` of the last event seen; 0 from the start);
   * with `turnId` only that turn's entries, ending with its published result; with `follow`, polls
   * until the session (or the turn) finishes or the signal aborts, and with `live` too, shows a
   * running session's partial model text between entries. A client that reconnects with its last
   * cursor, whatever happened to the workers meanwhile, continues the same transcript.
   * Throws NotFoundError for an unknown session or turn, GoneError past the retention.
   */
  events(sessionId: string, options: EventsOptions & { live: true; pollMs?: number }): AsyncGenerator<FollowEvent>;
  events(sessionId: string, options?: EventsOptions & { pollMs?: number }): AsyncGenerator<SessionEvent>;
  async *events(sessionId: string, options: EventsOptions & { pollMs?: number } = {}): AsyncGenerator<FollowEvent> {
    this.#may('events');
    const record = await this.deps.store.findSession(sessionId);
    if (!record) throw new NotFoundError(`session ${sessionId} not found`);
    if (record.expiresAt !== undefined && record.expiresAt <= this.deps.clock.now())
      throw new GoneError(
        `session ${sessionId} is past its retention (expired ${new Date(record.expiresAt).toISOString()})`,
      );
    const { turnId } = options;
    const after = options.after ?? 0;
    let cursor = after;
    if (turnId !== undefined) {
      const start = await this.turnStart(record, turnId, after);
      if (after > 0)
        this.#retained(sessionId, after, await this.deps.store.readJournal(record.key, after, { limit: 1 }));
      // Nothing before the turn's first entry is shown: start near it.
      cursor = start;
    }
    const follow = options.follow ?? false;
    let running = record.state === 'running';
    let shown: LivePosition = { seq: cursor + 1, chunk: -1 };
    for (let first = true; ; first = false) {
      // Live text before the journal: a partial is never shown after its entry was read.
      const chunks = follow && options.live && running ? await this.liveTextAfter(record, cursor, shown) : [];
      const from = cursor;
      const page = await readJournalPage(this.deps.store, record.key, from, { limit: EVENTS_PAGE_ENTRIES, turnId });
      if (first && turnId === undefined) this.#retained(sessionId, after, page.entries);
      cursor = page.cursor;
      for (const entry of page.entries) yield toEvent(entry);
      if (page.ended) return;
      // A full page: the rest follows at once, following or not.
      if (page.full) continue;
      const readNothing = cursor === from;
      if (readNothing)
        for (const chunk of chunks) {
          shown = { seq: chunk.seq, chunk: chunk.index };
          if (turnId === undefined || chunk.turnId === turnId) yield toModelText(chunk);
        }
      if (!follow || options.signal?.aborted) return;
      const fresh = await this.deps.store.getSession(record.key);
      if (!fresh || (TERMINAL_SESSION_STATES.includes(fresh.state) && readNothing)) return;
      running = fresh.state === 'running';
      await this.deps.clock.sleep(options.pollMs ?? 500, options.signal).catch(() => undefined);
    }
  }

  /**
   * Entries expire by TTL oldest first: a cursor behind the oldest kept one cannot be resumed.
   * `next` is what the journal holds after the cursor (its first entry is enough).
   */
  #retained(sessionId: string, after: number, next: readonly JournalEntry[]): void {
    const oldest = next[0]?.seq;
    if (after > 0 && oldest !== undefined && oldest > after + 1)
      throw new GoneError(
        `cursor ${after} of session ${sessionId} is past retention: its journal now starts at seq ${oldest}`,
      );
  }

  /**
   * The partial text of the response after the journal's `cursor` that a follower at `shown` has
   * not seen: the next chunks in order, stopping at a gap (a chunk not yet readable). Empty without
   * a live text store.
   */
  async liveTextAfter(record: SessionRecord, cursor: number, shown: LivePosition): Promise<LiveTextChunk[]> {
    if (!this.deps.live) return [];
    const seq = cursor + 1;
    const after = shown.seq === seq ? shown.chunk : -1;
    const chunks = await this.deps.live.read(record.key, seq, { after, now: this.deps.clock.now() });
    const next: LiveTextChunk[] = [];
    for (const chunk of chunks) {
      if (chunk.index !== after + 1 + next.length) break;
      next.push(chunk);
    }
    return next;
  }

  /**
   * One update (cancelRequested, version bump) plus a cancel kick. Idempotent. A session that
   * `status` reports ended is `already-finished`, even while its record is a write from its
   * terminal state (the finish order): cancel and status never disagree.
   */
  async cancel(sessionId: string): Promise<CancelResult> {
    this.#may('cancel');
    const record = await this.deps.store.findSession(sessionId);
    if (!record) return 'not-found';
    if (await this.#reportedEnded(record)) return 'already-finished';
    const posted = await post(this.#postDeps, record.key, { kind: 'cancel' });
    if (!posted.ok) return posted.reason === 'finished' ? 'already-finished' : 'not-found';
    return 'requested';
  }

  /**
   * Stops one turn, not the session: one `stop` inbox item (its id from the turn's, so stops of
   * the same turn are one) plus a kick. The owner ends the named turn `cancelled` (its result says
   * it was stopped) at its next step boundary when it runs, or as it comes up when it waits in the
   * queue, and the conversation goes on to its next turn. A turn that has ended, or whose session
   * has, is `already-ended`: a stop never touches another turn.
   */
  async stopTurn(sessionId: string, turnId: string): Promise<StopTurnResult> {
    this.#may('stopTurn');
    const record = await this.deps.store.findSession(sessionId);
    if (!record) return 'not-found';
    return this.stopTurnOf(record, turnId);
  }

  /** A stop of a record already read (the API checked its tenant); see stopTurn. */
  async stopTurnOf(record: SessionRecord, turnId: string): Promise<StopTurnResult> {
    const turn = await this.deps.store.getTurn(record.key, turnId);
    if (!turn) return 'not-found';
    if (turn.outcome !== undefined || TERMINAL_SESSION_STATES.includes(record.state)) return 'already-ended';
    // Neither active nor queued: it ended (its outcome not yet on the turn), or was never accepted.
    if (record.activeTurnId !== turnId && !record.turnQueue.includes(turnId)) return 'already-ended';
    // Never refused as full: stops are bounded by the turns (one item a turn), not by the cap.
    const maxPending = this.#inboxCap(record) + 1;
    const posted = await post(this.#postDeps, record.key, { kind: 'inbox', item: stopItem(turnId), maxPending });
    if (posted.ok) return 'requested';
    if (posted.reason === 'finished') return 'already-ended';
    if (posted.reason === 'not-found') return 'not-found';
    throw new TurnRefusedError(posted.reason, `stop of turn ${turnId} refused: session ${record.key.id} is full`);
  }

  /**
   * Sends an input to a session from any process: a further turn (`queue`), a message into the
   * running turn (`inject`), which the owner journals before its next model call, or a turn that
   * supersedes the running one at its next step boundary and starts at once (`steer`).
   */
  async send(sessionId: string, input: unknown, options: SendOptions = {}): Promise<Sent> {
    this.#may('send');
    if (input === undefined) throw new InvalidInputError('input is required');
    const record = await this.deps.store.findSession(sessionId);
    if (!record) throw new TurnRefusedError('not-found', `session ${sessionId} not found`);
    return this.sendTo(record, input, options);
  }

  /** `send` to a session whose record the caller has just read (the API, which reads it to check the caller may see it). */
  async sendTo(record: SessionRecord, input: unknown, options: SendOptions = {}): Promise<Sent> {
    this.#may('send');
    if (input === undefined) throw new InvalidInputError('input is required');
    const sessionId = record.key.id;
    const id = options.id ?? randomUUID();
    const mode = options.mode ?? SendMode.queue;
    // An inject with no turn running to take it becomes a turn, and is admitted as one.
    const asMessage = mode === SendMode.inject && (await this.#turnRunning(record));
    const agent = this.#agent(record.key.agent);
    admitInput(input, agent, `input ${id}`, asMessage ? 'message' : 'turn');
    const limits = admitLimits(options.limits, agent);
    if (asMessage) {
      if (limits !== undefined)
        throw new InvalidInputError(`input ${id}: limits apply to a turn; a message into the running turn takes none`);
      const posted = await this.#post(record, { kind: 'message', id, text: messageText(input) }, `message ${id}`);
      return { sessionId, turnId: id, mode, accepted: posted };
    }
    const turn = await acceptTurn(
      {
        key: record.key,
        turnId: id,
        ticketId: id,
        input,
        ifLastTurn: options.ifLastTurn,
        maxPendingInputs: this.deps.maxPendingInputs,
        steer: mode === SendMode.steer,
        sweepGraceMs: this.deps.sweepGraceMs ?? DEFAULT_SWEEP_GRACE_MS,
        limits,
        session: record,
      },
      this.deps,
    );
    return { sessionId, turnId: id, mode: turn.steered ? SendMode.steer : SendMode.queue, accepted: turn.queued };
  }

  /**
   * A human's answer to a pending approval, from any process, at any time; the turn resumes. The
   * decision posted names the whole identity of the call it answers, read from the journal now: a
   * caller that named the id alone decides the call that waits with that id at this moment, and
   * the answer says which that is.
   */
  async approve(
    sessionId: string,
    call: string | CallRef,
    decision: { approved: boolean; reason?: string },
  ): Promise<CallIdentity> {
    this.#may('approve');
    const record = await this.#find(sessionId);
    const ref = callRef(call);
    const awaited = (await this.#view(record)).awaitingApproval.find((a) => matchesRef(a, ref));
    if (!awaited)
      throw new InvalidInputError(`session ${sessionId} has no pending approval for call ${describeRef(ref)}`);
    await this.#postAnswer(record, decisionItem(awaited, decision), (waiting) =>
      waiting.kind === 'decision' && waiting.approved ? 'approved' : 'denied',
    );
    return identityOf(awaited);
  }

  /**
   * An operator's verdict on a parked once-only call: done (with its output) or not done (it runs
   * again). It answers this park only: a call parked again needs a verdict of its own.
   */
  async resolve(
    sessionId: string,
    call: string | ParkedRef,
    verdict: { done: boolean; output?: unknown },
  ): Promise<CallIdentity> {
    this.#may('resolve');
    const record = await this.#find(sessionId);
    const ref = { ...callRef(call), ...parkOf(call) };
    const { parked } = await this.#view(record);
    if (!parked || !matchesRef(parked, ref) || (ref.parkSeq !== undefined && ref.parkSeq !== parked.seq))
      throw new InvalidInputError(
        `session ${sessionId} has no parked call ${describeRef(ref)}${parked ? ` (parked: ${parked.callId})` : ''}`,
      );
    await this.#postAnswer(record, resolveItem(parked, verdict), (waiting) =>
      waiting.kind === 'resolve' && waiting.done ? 'done' : 'not done',
    );
    return identityOf(parked);
  }

  /** A session's background tasks with their status read now from the store. */
  async tasks(sessionId: string): Promise<TaskInfo[]> {
    this.#may('tasks');
    return this.#tasks(sessionId);
  }

  async #tasks(sessionId: string): Promise<TaskInfo[]> {
    const record = await this.#find(sessionId);
    const { ledger } = await this.#fold(record);
    const lines = await readTaskLines(this.deps.store, record.key, ledger.tasks);
    return lines.map((t) => ({
      taskId: t.taskId,
      sessionId: t.taskId,
      agent: t.agent,
      description: t.description,
      status: t.status,
      turnId: t.turnId,
      ...(t.output !== undefined ? { output: t.output } : {}),
      ...(t.error !== undefined ? { error: t.error } : {}),
    }));
  }

  /**
   * Releases a session from any process: marks the release on its record (the first mark stands,
   * so a second release waits for the same one) and wakes its holder, which cancels the running
   * tasks wherever they run, waits for them up to the bound and journals the stragglers. Waits
   * for that entry. With `cancel: false` a session with running tasks is refused, unchanged.
   */
  async release(sessionId: string, options: ReleaseOptions = {}): Promise<ReleaseOutcome> {
    this.#may('release');
    const record = await this.#find(sessionId);
    const timeoutMs = Math.round((options.timeoutS ?? DEFAULT_RELEASE_TIMEOUT_S) * 1000);
    if (!(timeoutMs >= 0)) throw new InvalidInputError('the release timeout must be a number of seconds, 0 or more');
    if (options.cancel === false && record.releaseRequested === undefined) {
      const running = (await this.#tasks(sessionId)).filter((t) => t.status === TaskStatus.running);
      if (running.length > 0)
        throw new TurnRefusedError(
          'tasks-running',
          `session ${sessionId} has ${running.length} running task(s) (${running.map((t) => t.taskId).join(', ')}): release without --no-cancel, or wait for them`,
        );
    }
    const now = this.deps.clock.now();
    const waitUntil = now + (options.waitMs ?? Number.POSITIVE_INFINITY);
    if (TERMINAL_SESSION_STATES.includes(record.state)) return this.#releaseEnded(record, timeoutMs, waitUntil);
    const posted = await post(this.#postDeps, record.key, { kind: 'release', timeoutMs });
    if (!posted.ok) {
      const current = posted.current ?? record;
      if (posted.reason === 'finished') return this.#releaseEnded(current, timeoutMs, waitUntil);
      throw new TurnRefusedError('not-found', `session ${sessionId} not found`);
    }
    // A release asked again waits for the first one's bound from its own ask: the holder its
    // bump woke may only now carry out a mark whose bound passed while no leg could.
    const mark = posted.record.releaseRequested!;
    const deadline = Math.min(Math.max(mark.at, now) + mark.timeoutMs + RELEASE_GRACE_MS, waitUntil);
    let after = 0;
    for (;;) {
      const entries = await this.deps.store.readJournal(record.key, after);
      const done = entries.find((e) => e.kind === 'released');
      if (done?.kind === 'released')
        return { sessionId, released: true, cancelled: done.data.cancelled, stragglers: done.data.stragglers };
      after = entries.at(-1)?.seq ?? after;
      if (this.deps.clock.now() > deadline) return { sessionId, released: false, cancelled: [], stragglers: [] };
      await this.deps.clock.sleep(200);
    }
  }

  /**
   * A session that has ended has no holder to carry a release out: its tasks are cancelled from
   * here (a child's own cancel cascades to its tasks) and waited for up to the bound. Stopped
   * earlier by the caller's wait, with tasks still running, it is not released yet.
   */
  async #releaseEnded(record: SessionRecord, timeoutMs: number, waitUntil: number): Promise<ReleaseOutcome> {
    const { ledger } = await this.#fold(record);
    const running = (await readTaskLines(this.deps.store, record.key, ledger.tasks)).filter(
      (t) => t.status === TaskStatus.running,
    );
    await Promise.all(running.map((t) => cancelChild(this.#postDeps, childKey(record.key, t))));
    const bound = this.deps.clock.now() + timeoutMs;
    const deadline = Math.min(bound, waitUntil);
    let left = running;
    while (left.length > 0 && this.deps.clock.now() < deadline) {
      await this.deps.clock.sleep(200);
      left = (await readTaskLines(this.deps.store, record.key, left)).filter((t) => t.status === TaskStatus.running);
    }
    return {
      sessionId: record.key.id,
      released: left.length === 0 || deadline === bound,
      cancelled: running.map((t) => t.taskId),
      stragglers: left.map((t) => t.taskId),
    };
  }

  /** The definition of `agent` when this client knows the agents; an agent not among them is refused. */
  #agent(agent: string): AgentDefinition | undefined {
    const { agents } = this.deps;
    if (agents === undefined) return undefined;
    const definition = agents.get(agent);
    if (definition === undefined)
      throw new InvalidInputError(`unknown agent "${agent}" (deployed: ${[...agents.keys()].join(', ') || 'none'})`);
    return definition;
  }

  /** Refuses an operation this client's user has no role for (lib/core/roles.ts). */
  #may(operation: Operation): void {
    if (this.deps.roles === undefined) return;
    const role = missingRole(this.deps.roles, operation);
    if (role !== undefined) throw new RoleRequiredError(role, roleRefusal('this client', role));
  }

  async #find(sessionId: string): Promise<SessionRecord> {
    const record = await this.deps.store.findSession(sessionId);
    if (!record) throw new TurnRefusedError('not-found', `session ${sessionId} not found`);
    return record;
  }

  async #view(record: SessionRecord): Promise<SessionView> {
    return (await this.#fold(record)).view;
  }

  /**
   * The fold and task ledger of the session's whole journal, read from the latest snapshot and
   * the entries after it when the snapshot can be trusted, else from the start. A read that had
   * to fold more than READER_SNAPSHOT_AFTER_ENTRIES leaves a snapshot at the journal's end, so
   * the next read costs the entries since then, not the whole journal.
   */
  async #fold(record: SessionRecord): Promise<SessionFold> {
    const snapshot = await this.deps.store.getLatestSnapshot(record.key).catch(() => undefined);
    if (snapshot !== undefined) {
      // From the snapshot's own entry: it proves the snapshot was folded from this journal.
      const tail = await this.deps.store.readJournal(record.key, snapshot.seq - 1);
      const fold = foldFromSnapshot(snapshot, tail);
      if (fold !== undefined) {
        if (tail.length > READER_SNAPSHOT_AFTER_ENTRIES) await this.#leaveSnapshot(record, fold, tail.at(-1));
        return fold;
      }
    }
    const entries = await this.deps.store.readJournal(record.key);
    const fold = foldWhole(entries);
    if (entries.length > READER_SNAPSHOT_AFTER_ENTRIES) await this.#leaveSnapshot(record, fold, entries.at(-1));
    return fold;
  }

  /**
   * Best-effort, as the runtime's own: the journal up to `last` never changes, so any reader may
   * write the snapshot of it (write-once per seq; the runtime trusts it only if the entry hash
   * matches). It expires with the session's other items. A reader without write access to the table
   * (grantReadSessions) simply folds the tail again next time.
   */
  async #leaveSnapshot(record: SessionRecord, fold: SessionFold, last: JournalEntry | undefined): Promise<void> {
    const snapshot = last === undefined ? undefined : snapshotAt(fold.view, fold.ledger, last);
    if (snapshot === undefined) return;
    const ttlSeconds = sessionItemTtlSeconds(record, this.deps.clock.now());
    await this.deps.store.putSnapshot(record.key, snapshot, ttlSeconds).catch(() => undefined);
  }

  /** Posts an inbox item (the protocol's `post`); false when one of its id was posted before. */
  async #post(record: SessionRecord, item: InboxItem, what: string = item.kind): Promise<boolean> {
    return (await this.#postItem(record, item, what)).posted;
  }

  async #postItem(
    record: SessionRecord,
    item: InboxItem,
    what: string = item.kind,
  ): Promise<{ posted: boolean; record: SessionRecord }> {
    const maxPending = this.#inboxCap(record);
    const posted = await post(this.#postDeps, record.key, { kind: 'inbox', item, maxPending });
    if (!posted.ok)
      throw new TurnRefusedError(posted.reason, `${what} refused: session ${record.key.id} is ${posted.reason}`);
    return posted;
  }

  /**
   * Posts a human's decision or an operator's verdict. The inbox keeps one item per call (by id),
   * so another answer to a call whose first one still waits would be dropped while the first
   * stands: it is refused, naming the answer that waits. The same answer again is the same post.
   */
  async #postAnswer(record: SessionRecord, item: InboxItem, describe: (waiting: InboxItem) => string): Promise<void> {
    const posted = await this.#postItem(record, item);
    const waiting = posted.posted ? undefined : posted.record.inbox.find((i) => i.id === item.id);
    if (waiting !== undefined && hashJson(waiting) !== hashJson(item))
      throw new InvalidInputError(
        `session ${record.key.id}: call ${'callId' in item ? item.callId : item.id} already has a ${item.kind === 'resolve' ? 'verdict' : 'decision'} waiting (${describe(waiting)}); the first answer stands`,
      );
  }

  /**
   * How many items an inbox post may find waiting: the cap on pending inputs, plus the stops the
   * record holds. A stop of a queued turn waits in the inbox until its turn comes up; counted
   * against the cap, stops of the queued turns could fill it and refuse the approval the running
   * turn waits for, and nothing would move. Stops are bounded by the turn queue (one per turn).
   */
  #inboxCap(record: SessionRecord): number {
    const max = this.deps.maxPendingInputs ?? DEFAULT_MAX_PENDING_INPUTS;
    return max + record.inbox.filter((item) => item.kind === 'stop').length;
  }

  get #postDeps(): PostDeps {
    return { ...this.deps, sweepGraceMs: this.deps.sweepGraceMs ?? DEFAULT_SWEEP_GRACE_MS };
  }

  /** Has the session ended, as `status` reports it? The turn is read only when its outcome decides. */
  async #reportedEnded(record: SessionRecord): Promise<boolean> {
    if (TERMINAL_SESSION_STATES.includes(record.state)) return true;
    if (record.conversation || !record.activeTurnId) return false;
    const turn = await this.deps.store.getTurn(record.key, record.activeTurnId);
    return TERMINAL_SESSION_STATES.includes(reportedStatus(record, turn?.outcome));
  }

  /** Is a turn running (or waiting) that a message can land in? */
  async #turnRunning(record: SessionRecord): Promise<boolean> {
    if (!record.activeTurnId || ['idle', 'completed', 'failed', 'cancelled'].includes(record.state)) return false;
    const turn = await this.deps.store.getTurn(record.key, record.activeTurnId);
    return turn?.outcome === undefined;
  }

  /**
   * Where a stream of `turnId` from cursor `after` can start without reading the turns before it
   * (turnStartCursor: a few single-entry reads, one once `after` is inside the turn). Throws
   * NotFoundError for an unknown turn.
   */
  async turnStart(record: SessionRecord, turnId: string, after: number): Promise<number> {
    const turn = await this.deps.store.getTurn(record.key, turnId);
    if (!turn) throw new NotFoundError(`session ${record.key.id} has no turn ${turnId}`);
    return turnStartCursor(this.deps.store, record.key, turn, after);
  }

  /**
   * One page of the stream after `after`, for a caller that keeps no state between pages (the
   * API): one read of at most `limit` entries; with `turnId` only that turn's, `ended` at the
   * entry that ends its stream (start a turn's stream at turnStart). `cursor` is the last seq
   * read, shown or not: the next page starts after it.
   */
  async eventsPage(
    record: SessionRecord,
    after: number,
    options: { readonly limit: number; readonly turnId?: string | undefined },
  ): Promise<EventsPage> {
    const page = await readJournalPage(this.deps.store, record.key, after, options);
    return { events: page.entries.map(toEvent), cursor: page.cursor, full: page.full, ended: page.ended };
  }

  /** Up to `limit` journal entries after `after`, as stream events: one read of at most `limit` entries. */
  async eventsAfter(record: SessionRecord, after: number, limit: number): Promise<SessionEvent[]> {
    const entries = await this.deps.store.readJournal(record.key, after, { limit });
    return entries.map(toEvent);
  }

  /** The status view of a record already read. */
  statusOf(record: SessionRecord): Promise<SessionStatus> {
    return this.#status(record);
  }

  async #status(record: SessionRecord): Promise<SessionStatus> {
    // Independent reads, side by side: a status costs the round trips of the longest, not of all.
    const [turn, { fold, tasks }, turns] = await Promise.all([
      record.activeTurnId ? this.deps.store.getTurn(record.key, record.activeTurnId) : undefined,
      this.#fold(record).then(async (fold) => ({ fold, tasks: await this.#taskFacts(record, fold) })),
      record.conversation ? this.deps.store.listTurns(record.key) : undefined,
    ]);
    const waits = record.state === 'waiting' ? this.#waits(fold.view) : {};
    const conversation = turns
      ? {
          turns: turns.map((t) => ({
            turnId: t.turnId,
            status: turnStatus(record, t),
            ...(t.outcome ? { outcome: t.outcome.status } : {}),
          })),
        }
      : {};
    return {
      sessionId: record.key.id,
      tenant: record.key.tenant,
      agent: record.key.agent,
      ticketId: record.ticketId,
      status: reportedStatus(record, turn?.outcome),
      turnId: record.activeTurnId,
      outcome: turn?.outcome,
      legs: record.legs,
      epoch: record.epoch,
      recoveries: record.recovered,
      consecutiveRecoveries: record.recoveries,
      tokens: record.tokens,
      usage: spendOf(fold.view),
      cancelRequested: record.cancelRequested,
      traceId: record.traceId,
      createdAt: new Date(record.createdAt).toISOString(),
      updatedAt: new Date(record.updatedAt).toISOString(),
      ...conversation,
      activeTurnId: record.activeTurnId,
      pendingInputs: record.turnQueue.length + record.inbox.length,
      ...waits,
      ...(record.parent ? { parent: record.parent.id } : {}),
      ...(record.forkedFrom
        ? { forkedFrom: { session: record.forkedFrom.key.id, cursor: record.forkedFrom.cursor } }
        : {}),
      ...tasks,
    };
  }

  /** A parent's task counts by status and its release, from its ledger and its children. */
  async #taskFacts(record: SessionRecord, { ledger }: SessionFold): Promise<Pick<SessionStatus, 'tasks' | 'release'>> {
    const release = ledger.released ? 'released' : record.releaseRequested ? 'requested' : undefined;
    const lines = ledger.tasks.length ? await readTaskLines(this.deps.store, record.key, ledger.tasks) : [];
    return {
      ...(lines.length ? { tasks: countByStatus(lines) } : {}),
      ...(release ? { release } : {}),
    };
  }

  /** What a waiting session waits for: approvals (their identity and parsed input) or a parked call. */
  #waits(view: SessionView): Pick<SessionStatus, 'pendingApprovals' | 'parked' | 'wakeAt' | 'limited'> {
    const pendingApprovals = view.awaitingApproval.map((a) => ({
      ...identityOf(a),
      input: a.input,
      ...(a.ranBefore === undefined ? {} : { ranBefore: a.ranBefore }),
    }));
    const { parked } = view;
    const { limited } = view;
    // A rate wait wakes by itself when its token is due; a slot wait when a slot is handed over.
    const wakeAt = nextWakeAt(view) ?? (limited?.limit === 'model-rate' ? limited.until : undefined);
    return {
      ...(wakeAt === undefined ? {} : { wakeAt: new Date(wakeAt).toISOString() }),
      ...(limited
        ? {
            limited: {
              limit: limited.limit,
              reason: limited.reason,
              ...(limited.place === undefined ? {} : { place: limited.place }),
            },
          }
        : {}),
      ...(pendingApprovals.length > 0 ? { pendingApprovals } : {}),
      ...(parked ? { parked: { ...identityOf(parked), parkSeq: parked.seq } } : {}),
    };
  }
}

/** A call reference as an error names it: the id, and the model entry when given. */
const describeRef = (ref: CallRef): string =>
  ref.modelSeq === undefined ? ref.callId : `${ref.callId} of model entry ${ref.modelSeq}`;

/**
 * The state `status` reports, and `cancel` answers by. A one-shot session's is its turn's outcome
 * as soon as the turn has one: the outcome is on the turn before the result is on the queue, and
 * the record reaches its terminal state a write later (docs/RELIABILITY.md, the finish order). A
 * conversation goes on after a turn's outcome: its state is the record's (idle between turns).
 */
function reportedStatus(record: SessionRecord, outcome: TurnOutcome | undefined): SessionState {
  return record.conversation ? record.state : reportedState(record.state, outcome?.status);
}

/**
 * A conversation turn's status as `status` lists it: finished (it has its outcome), the record's
 * state for the active turn, queued behind it, or `accepting` — written by an intake that has not
 * queued it yet (its ticket comes back, or was dead-lettered), so no queue holds it.
 */
function turnStatus(record: SessionRecord, turn: TurnRecord): string {
  if (turn.outcome) return 'finished';
  if (turn.turnId === record.activeTurnId) return record.state;
  return record.turnQueue.includes(turn.turnId) ? 'queued' : 'accepting';
}

/** How far a follower has seen a streaming response: chunks up to `chunk` of the one at `seq`. */
export interface LivePosition {
  readonly seq: number;
  readonly chunk: number;
}

/** A live text chunk as a follower's event. */
export const toModelText = (chunk: LiveTextChunk): ModelTextEvent => ({
  kind: 'model-text',
  seq: chunk.seq,
  turnId: chunk.turnId,
  chunk: chunk.index,
  text: chunk.text,
});

const toEvent = (entry: JournalEntry): SessionEvent => ({
  cursor: entry.seq,
  kind: entry.kind,
  seq: entry.seq,
  epoch: entry.epoch,
  at: new Date(entry.at).toISOString(),
  ...(entry.turnId === undefined ? {} : { turnId: entry.turnId }),
  data: entry.data,
});

/**
 * A turn's limits as the producer gave them, checked as intake checks a ticket's: the schema, then
 * the agent's ceiling when this client loaded the agents (the leg caps them by it again anyway).
 */
function admitLimits(limits: unknown, agent: AgentDefinition | undefined): SpendLimits | undefined {
  if (limits === undefined) return undefined;
  const parsed = SpendLimitsSchema.safeParse(limits);
  if (!parsed.success) throw new InvalidInputError(`limits: ${describeIssues(parsed.error)}`);
  if (agent) turnLimits(agent.limits, parsed.data);
  return parsed.data;
}
