import { DEFAULT_TENANT, deriveSessionId, type SessionKey } from '../core/ids.ts';
import { type JournalEntry, legMarkerOf } from '../core/journal.ts';
import type { SessionState } from '../core/vocabulary.ts';
import type { SessionStore } from '../ports/session-store.ts';
import type { DemoTicket } from './demo-batch.ts';

/** What the view shows of one ticket, derived from its session record and journal. */
export interface TicketProgress {
  readonly ticket: DemoTicket;
  readonly key: SessionKey;
  readonly submittedAt: number;
  /** Undefined until intake created the session. */
  state?: SessionState | undefined;
  /** Leg markers journaled. */
  legs: number;
  /** Legs that started by taking over an expired lease. */
  recoveries: number;
  /** Model calls and tool results journaled. */
  steps: number;
  /** Journaled retryable errors (transient service failures). */
  retries: number;
  /** The kind of the last journal entry, or the tool it ran. */
  last?: string | undefined;
  finishedAt?: number | undefined;
  cursor: number;
}

/**
 * Follows the demo's sessions in the store, as any client could: one GetItem and one journal
 * query from a cursor per session and poll. Nothing here talks to the workers.
 */
export class ProgressTracker {
  readonly tickets: TicketProgress[] = [];

  constructor(private readonly store: SessionStore) {}

  /** Starts following a ticket just submitted. */
  add(ticket: DemoTicket, submittedAt: number): TicketProgress {
    const key = {
      tenant: DEFAULT_TENANT,
      agent: ticket.agent,
      id: deriveSessionId(DEFAULT_TENANT, ticket.agent, ticket.ticketId),
    };
    const progress: TicketProgress = {
      ticket,
      key,
      submittedAt,
      legs: 0,
      recoveries: 0,
      steps: 0,
      retries: 0,
      cursor: 0,
    };
    this.tickets.push(progress);
    return progress;
  }

  /** Reads every unfinished session once; returns the tickets whose line changed. */
  async poll(): Promise<TicketProgress[]> {
    const changed: TicketProgress[] = [];
    await Promise.all(
      this.tickets
        .filter((t) => t.finishedAt === undefined)
        .map(async (t) => {
          const before = line(t);
          const record = await this.store.getSession(t.key);
          if (record === undefined) return;
          const entries = await this.store.readJournal(t.key, t.cursor);
          for (const entry of entries) apply(t, entry);
          t.state = record.state;
          // A conversation (the dispatcher) goes idle when its turn is over.
          const over =
            ['completed', 'failed', 'cancelled'].includes(record.state) ||
            (record.conversation && record.state === 'idle');
          if (over) t.finishedAt ??= record.updatedAt;
          if (line(t) !== before) changed.push(t);
        }),
    );
    return changed;
  }
}

const line = (t: TicketProgress) => `${t.state}|${t.legs}|${t.recoveries}|${t.steps}|${t.retries}|${t.last}`;

function apply(t: TicketProgress, entry: JournalEntry): void {
  t.cursor = entry.seq;
  // A leg that starts a turn carries its marker on the input.
  const marker = legMarkerOf(entry);
  if (marker) {
    t.legs++;
    if (marker.reason === 'recovery') t.recoveries++;
  }
  switch (entry.kind) {
    case 'leg':
      t.last = `leg ${entry.data.reason}`;
      break;
    case 'model':
      t.steps++;
      t.last =
        entry.data.toolCalls.length > 0
          ? `model → ${entry.data.toolCalls.map((c) => c.name).join(', ')}`
          : 'model → answer';
      break;
    case 'tool':
      t.steps++;
      t.last = `${entry.data.tool} ${entry.data.ok ? 'ok' : 'failed'}`;
      break;
    case 'error':
      t.retries++;
      t.last = `retry: ${entry.data.message.slice(0, 40)}`;
      break;
    case 'intent':
      t.last = `intent ${entry.data.tool}`;
      break;
    case 'reconciled':
      t.steps++;
      t.last = `reconciled ${entry.data.verdict}`;
      break;
    default:
      t.last = entry.kind;
  }
}
