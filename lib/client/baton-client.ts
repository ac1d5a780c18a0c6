import { randomUUID } from 'node:crypto';
import { InvalidInputError } from '../core/errors.ts';
import { DEFAULT_TENANT, deriveSessionId } from '../core/ids.ts';
import type { JournalEntry } from '../core/journal.ts';
import { childContext, newTraceId } from '../core/trace-context.ts';
import type { SessionState } from '../core/vocabulary.ts';
import type { BlobStore } from '../ports/blob-store.ts';
import type { Clock } from '../ports/clock.ts';
import type { TicketQueue, WorkQueue } from '../ports/queues.ts';
import type { SessionRecord, SessionStore, TurnOutcome } from '../ports/session-store.ts';

/** Ticket bodies above this go to the payload bucket (SQS allows 256 KiB per message, attributes included). */
export const INLINE_TICKET_LIMIT_BYTES = 200 * 1024;

export interface BatonClientDeps {
  readonly store: SessionStore;
  readonly tickets: TicketQueue;
  readonly workQueue: WorkQueue;
  readonly blobs?: BlobStore | undefined;
  readonly clock: Clock;
}

export interface SubmitRequest {
  readonly agent: string;
  readonly input: unknown;
  readonly ticketId?: string | undefined;
  readonly tenant?: string | undefined;
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
  readonly cancelRequested: boolean;
  readonly traceId: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

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

export type CancelResult = 'requested' | 'already-finished' | 'not-found';

/**
 * The typed client the CLI, the demo and the tests use: submit tickets, read status, follow
 * events from a cursor, cancel.
 */
export class BatonClient {
  constructor(private readonly deps: BatonClientDeps) {}

  /** Sends a ticket through the tickets queue; the session id is known before intake runs. */
  async submit(request: SubmitRequest): Promise<Submitted> {
    const tenant = request.tenant ?? DEFAULT_TENANT;
    const ticketId = request.ticketId ?? randomUUID();
    if (request.input === undefined) throw new InvalidInputError('input is required');
    let input = request.input;
    const bytes = Buffer.byteLength(JSON.stringify(input));
    if (bytes > INLINE_TICKET_LIMIT_BYTES) {
      if (!this.deps.blobs)
        throw new InvalidInputError(`input is ${bytes} bytes, over the SQS limit, and no payload bucket is configured`);
      const key = `tickets/${tenant}/${request.agent}/${encodeURIComponent(ticketId)}.json`;
      await this.deps.blobs.put(key, JSON.stringify(input));
      input = { $blob: key };
    }
    const traceId = newTraceId();
    await this.deps.tickets.submit(
      { v: 1, ticketId, agent: request.agent, tenant, input },
      { trace: childContext(traceId) },
    );
    return {
      ticketId,
      sessionId: deriveSessionId(tenant, request.agent, ticketId),
      tenant,
      agent: request.agent,
      traceId,
    };
  }

  async status(sessionId: string): Promise<SessionStatus | undefined> {
    const record = await this.deps.store.findSession(sessionId);
    if (!record) return undefined;
    return this.#status(record);
  }

  async list(
    options: { status?: SessionState | undefined; limit?: number | undefined } = {},
  ): Promise<SessionStatus[]> {
    const records = await this.deps.store.listSessions({ state: options.status, limit: options.limit });
    return Promise.all(records.map((r) => this.#status(r)));
  }

  /** The journal as a stream from a cursor; with `follow`, polls until the session finishes or the signal aborts. */
  async *events(
    sessionId: string,
    options: { after?: number; follow?: boolean; pollMs?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<SessionEvent> {
    const record = await this.deps.store.findSession(sessionId);
    if (!record) throw new InvalidInputError(`session ${sessionId} not found`);
    let cursor = options.after ?? 0;
    for (;;) {
      const entries = await this.deps.store.readJournal(record.key, cursor);
      for (const entry of entries) {
        cursor = entry.seq;
        yield toEvent(entry);
      }
      if (!options.follow || options.signal?.aborted) return;
      const fresh = await this.deps.store.getSession(record.key);
      if (fresh && ['completed', 'failed', 'cancelled'].includes(fresh.state) && entries.length === 0) return;
      await this.deps.clock.sleep(options.pollMs ?? 500, options.signal).catch(() => undefined);
    }
  }

  /** One update (cancelRequested, version bump) plus a cancel kick. Idempotent. */
  async cancel(sessionId: string): Promise<CancelResult> {
    const record = await this.deps.store.findSession(sessionId);
    if (!record) return 'not-found';
    const now = this.deps.clock.now();
    const bumped = await this.deps.store.bump(record.key, { now, cancel: true, sweepAt: now + 1_000 });
    if (!bumped.ok) return bumped.reason === 'finished' ? 'already-finished' : 'not-found';
    await this.deps.workQueue.sendKick(
      { v: 1, session: record.key, reason: 'cancel' },
      { trace: childContext(record.traceId) },
    );
    return 'requested';
  }

  /** Up to `limit` journal entries after `after`, as stream events. */
  async eventsAfter(record: SessionRecord, after: number, limit: number): Promise<SessionEvent[]> {
    const entries = await this.deps.store.readJournal(record.key, after);
    return entries.slice(0, limit).map(toEvent);
  }

  /** The status view of a record already read. */
  statusOf(record: SessionRecord): Promise<SessionStatus> {
    return this.#status(record);
  }

  async #status(record: SessionRecord): Promise<SessionStatus> {
    const turn = record.activeTurnId ? await this.deps.store.getTurn(record.key, record.activeTurnId) : undefined;
    return {
      sessionId: record.key.id,
      tenant: record.key.tenant,
      agent: record.key.agent,
      ticketId: record.ticketId,
      status: record.state,
      turnId: record.activeTurnId,
      outcome: turn?.outcome,
      legs: record.legs,
      epoch: record.epoch,
      recoveries: record.recovered,
      consecutiveRecoveries: record.recoveries,
      tokens: record.tokens,
      cancelRequested: record.cancelRequested,
      traceId: record.traceId,
      createdAt: new Date(record.createdAt).toISOString(),
      updatedAt: new Date(record.updatedAt).toISOString(),
    };
  }
}

const toEvent = (entry: JournalEntry): SessionEvent => ({
  cursor: entry.seq,
  kind: entry.kind,
  seq: entry.seq,
  epoch: entry.epoch,
  at: new Date(entry.at).toISOString(),
  ...(entry.turnId === undefined ? {} : { turnId: entry.turnId }),
  data: entry.data,
});
