import type { SessionKey } from '../core/ids.ts';
import type { JournalEntry } from '../core/journal.ts';
import type { SessionStore, TurnRecord } from '../ports/session-store.ts';

/**
 * Pages of the journal for the events stream: each read is bounded, so a page costs about what it
 * shows, however long the journal is. A per-turn stream starts near the turn's first entry (found
 * by a short search, below) rather than reading every turn before it.
 */

/** Entries one page reads at most. */
export const EVENTS_PAGE_ENTRIES = 200;

/**
 * How far ahead of the workers' clocks the clock that accepted a turn may run (it is the caller's
 * own for a store-backed `send`). An entry written this long before the turn's `createdAt` was
 * written before the turn existed. Five minutes: AWS refuses a request signed with a clock more
 * than five minutes off, so no clock further off can have written the turn or an entry.
 */
export const TURN_CLOCK_ALLOWANCE_MS = 5 * 60_000;

/**
 * Does a turn's stream end at this entry? At its outcome: a turn has one, and after it the turn
 * only sends its result (recorded on the session record, not journaled, unless given up).
 */
export const endsTurnStream = (entry: JournalEntry): boolean => entry.kind === 'outcome';

/** A page of the stream: the entries to show, and the cursor the next page reads after. */
export interface JournalPage {
  readonly entries: JournalEntry[];
  /** The last seq read (shown or skipped); the next page starts after it. */
  readonly cursor: number;
  /** The read came back full: more may follow at once. */
  readonly full: boolean;
  /** The turn's stream ended (endsTurnStream) within this page. */
  readonly ended: boolean;
}

/**
 * Up to `limit` entries after `after` (one bounded read); with `turnId`, only that turn's, up to
 * and including the entry that ends its stream.
 */
export async function readJournalPage(
  store: SessionStore,
  key: SessionKey,
  after: number,
  options: { readonly limit: number; readonly turnId?: string | undefined },
): Promise<JournalPage> {
  const read = await store.readJournal(key, after, { limit: options.limit });
  const entries: JournalEntry[] = [];
  let cursor = after;
  let ended = false;
  for (const entry of read) {
    cursor = entry.seq;
    if (options.turnId !== undefined && entry.turnId !== options.turnId) continue;
    entries.push(entry);
    if (options.turnId !== undefined && endsTurnStream(entry)) {
      ended = true;
      break;
    }
  }
  return { entries, cursor, full: read.length === options.limit, ended };
}

/**
 * A cursor at or after `after` with no entry of `turn` at or before it: where the turn's stream
 * can start without reading the turns before it.
 *
 * Why it is sound: the journal is appended in seq order, each entry after the one before was
 * written, and a turn's entries are written after the turn was accepted. So an entry whose `at`
 * is earlier than the turn's `createdAt` by more than TURN_CLOCK_ALLOWANCE_MS (and that is not
 * the turn's own) was written before the turn existed, and every entry of the turn comes after
 * it. The search only ever moves the start onto such an entry, so its answer is safe even where
 * `at` is not monotonic across workers' clocks; it is merely less tight there. What it assumes:
 * the clock that accepted the turn (intake's, the API's, or a store-backed sender's) runs no more
 * than the allowance ahead of the workers'; one further ahead could start the stream late.
 *
 * Cost: single-entry reads, galloping forward from `after` (1, 2, 4 … entries on) to the first
 * entry not proven earlier, then halving the gap: about 2·log2(n) reads for n entries between
 * the cursor and the turn (24 for 4,000), instead of the n entries themselves. A turn accepted
 * while others ran still reads their entries written after it was accepted (they lie between).
 */
export async function turnStartCursor(
  store: SessionStore,
  key: SessionKey,
  turn: Pick<TurnRecord, 'turnId' | 'createdAt'>,
  after: number,
): Promise<number> {
  const before = (entry: JournalEntry) =>
    entry.turnId !== turn.turnId && entry.at < turn.createdAt - TURN_CLOCK_ALLOWANCE_MS;
  /** The first entry at or after `seq`. */
  const probe = async (seq: number) => (await store.readJournal(key, seq - 1, { limit: 1 }))[0];
  let start = after;
  // Gallop: `start` is always at or before the turn; `bound`, once found, is a seq not proven so.
  let bound: number | undefined;
  for (let step = 1; bound === undefined; step *= 2) {
    const entry = await probe(start + step);
    if (entry === undefined) {
      if (step === 1) return start;
      bound = start + step;
    } else if (before(entry)) start = entry.seq;
    else bound = entry.seq;
  }
  // Halve the gap between them.
  while (bound - start > 1) {
    const middle = Math.floor((start + bound) / 2);
    const entry = await probe(middle);
    if (entry === undefined || entry.seq >= bound) bound = middle;
    else if (before(entry)) start = entry.seq;
    else bound = entry.seq;
  }
  return start;
}
