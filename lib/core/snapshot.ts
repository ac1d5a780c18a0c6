import { createHash } from 'node:crypto';
import { z } from 'zod';
import { foldJournal, type SessionView } from './fold.ts';
import { type JournalEntry, ToolCall } from './journal.ts';
import { OutcomeStatus } from './vocabulary.ts';

/**
 * Snapshots of derived state: the fold up to seq N, never the transcript. A snapshot is trusted
 * only when its fold version is this code's and its entry hash matches the journal's entry N, so
 * a redeploy that changes the fold, or a journal that changed under it, silently falls back to a
 * full fold.
 */

/** Bump whenever applyEntry changes what it derives. */
export const FOLD_VERSION = 4;

export interface SessionSnapshot {
  readonly seq: number;
  readonly foldVersion: number;
  readonly entryHash: string;
  readonly view: unknown;
}

/** Identifies the entry a snapshot was folded up to. */
export const entryHash = (entry: JournalEntry): string =>
  createHash('sha256').update(`${entry.seq}|${entry.kind}|${entry.epoch}|${entry.writeId}`).digest('hex').slice(0, 32);

const usage = z.object({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() });
const SessionViewSchema = z
  .object({
    lastSeq: z.number().int().nonnegative(),
    legEpoch: z.number().int().nonnegative(),
    legs: z.number().int().nonnegative(),
    steps: z.number().int().nonnegative(),
    turnSteps: z.number().int().nonnegative(),
    usage,
    turnId: z.string().optional(),
    pendingCalls: z.array(
      z.object({
        call: ToolCall,
        modelSeq: z.number().int(),
        intentSeq: z.number().int().optional(),
        reconciledSeq: z.number().int().optional(),
        timer: z.object({ wakeAt: z.number().int(), output: z.unknown().optional() }).optional(),
      }),
    ),
    finalText: z.string().optional(),
    failedAttempts: z.number().int().nonnegative(),
    retryAt: z.number().int().optional(),
    lastError: z.string().optional(),
    outcome: z
      .object({
        status: z.enum(Object.values(OutcomeStatus) as [OutcomeStatus, ...OutcomeStatus[]]),
        output: z.unknown().optional(),
        error: z.string().optional(),
      })
      .optional(),
    published: z.boolean(),
    parkedCallId: z.string().optional(),
    awaitingApproval: z.array(z.string()),
    approvalDeadlines: z.record(z.string(), z.number().int()),
    decisions: z.record(
      z.string(),
      z.object({ approved: z.boolean(), reason: z.string().optional(), byDefault: z.boolean().optional() }),
    ),
    deliveredIds: z.array(z.string()),
  })
  .strict();

/**
 * A snapshot is stored inline in one item: a view larger than this (large pending tool inputs, a
 * large final answer) is not snapshotted, and the next leg folds the journal instead.
 */
export const MAX_SNAPSHOT_VIEW_BYTES = 100_000;

/** The snapshot of a view, or undefined when the journal does not end at it or it is too large to store. */
export function takeSnapshot(view: SessionView, entries: readonly JournalEntry[]): SessionSnapshot | undefined {
  const last = entries[view.lastSeq - 1];
  if (!last || last.seq !== view.lastSeq) return undefined;
  const json = JSON.stringify(view);
  if (Buffer.byteLength(json) > MAX_SNAPSHOT_VIEW_BYTES) return undefined;
  return { seq: view.lastSeq, foldVersion: FOLD_VERSION, entryHash: entryHash(last), view: JSON.parse(json) };
}

/**
 * The view of the whole journal, starting from the snapshot when it can be trusted. Returns
 * whether the snapshot was used, for the log.
 */
export function restoreView(
  snapshot: SessionSnapshot | undefined,
  entries: readonly JournalEntry[],
): { view: SessionView; fromSnapshot: boolean } {
  const usable =
    snapshot !== undefined &&
    snapshot.foldVersion === FOLD_VERSION &&
    snapshot.seq <= entries.length &&
    entries[snapshot.seq - 1] !== undefined &&
    entryHash(entries[snapshot.seq - 1] as JournalEntry) === snapshot.entryHash;
  const parsed = usable ? SessionViewSchema.safeParse(snapshot.view) : undefined;
  if (!parsed?.success || parsed.data.lastSeq !== snapshot?.seq)
    return { view: foldJournal(entries), fromSnapshot: false };
  return { view: foldJournal(entries.slice(snapshot.seq), parsed.data as SessionView), fromSnapshot: true };
}
