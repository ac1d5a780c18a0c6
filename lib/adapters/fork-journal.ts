import { CorruptStateError } from '../core/errors.ts';
import { formatSessionKey, type SessionKey } from '../core/ids.ts';
import type { JournalEntry } from '../core/journal.ts';
import type { JournalReadOptions } from '../ports/session-store.ts';

/** One read of a session's own journal items: the adapter's query, seq > afterSeq, in order. */
export type ReadOwnJournal = (
  key: SessionKey,
  afterSeq: number,
  options: JournalReadOptions | undefined,
) => Promise<JournalEntry[]>;

/**
 * A session's journal as every reader sees it. A fork's own items start at its `forked` entry
 * (seq cursor + 1); what comes before is the original's journal, read from the original's
 * partition and never copied, so a fork costs O(1) writes whatever its prefix. A session that is
 * no fork pays nothing: its own read starts at afterSeq + 1, and only a read whose first item is
 * a `forked` entry further on reads the original (at most `cursor - afterSeq` entries, or the
 * page's `limit`). Each level of a fork of a fork reads a strictly shorter prefix, so the
 * recursion ends. The `forked` entry is stored state: it must name a session of the same tenant
 * and agent, other than this one, and sit right after its cursor.
 */
export async function readForkedJournal(
  readOwn: ReadOwnJournal,
  key: SessionKey,
  afterSeq: number,
  options: JournalReadOptions | undefined,
): Promise<JournalEntry[]> {
  const own = await readOwn(key, afterSeq, options);
  const first = own[0];
  if (first === undefined || first.seq === afterSeq + 1 || first.kind !== 'forked') return own;
  const { from, cursor } = first.data;
  const where = `fork ${formatSessionKey(key)}`;
  if (cursor !== first.seq - 1 || from.agent !== key.agent || from.id === key.id)
    throw new CorruptStateError(`${where}: its forked entry at seq ${first.seq} names no valid origin`);
  const origin: SessionKey = { tenant: key.tenant, agent: from.agent, id: from.id };
  const limit = options?.limit;
  const wanted = Math.min(cursor - afterSeq, limit ?? Number.POSITIVE_INFINITY);
  const read = await readForkedJournal(readOwn, origin, afterSeq, { limit: wanted });
  const history = read.filter((e) => e.seq <= cursor);
  if (history.length !== wanted || history[0]?.seq !== afterSeq + 1)
    throw new CorruptStateError(
      `${where}: its history (seqs ${afterSeq + 1}..${cursor} of ${formatSessionKey(origin)}) is gone`,
    );
  const entries = [...history, ...own];
  return limit === undefined ? entries : entries.slice(0, limit);
}
