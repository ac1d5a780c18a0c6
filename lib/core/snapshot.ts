import { createHash } from 'node:crypto';
import * as z from 'zod';
import { foldJournal, type SessionView } from './fold.ts';
import { EntryData, type JournalEntry, OriginalEffect, ToolCall } from './journal.ts';
import { SpendLimitsSchema } from './spend.ts';
import { EMPTY_LEDGER, type TaskLedger, taskLedger } from './tasks.ts';
import { ForkEffects, OutcomeStatus } from './vocabulary.ts';

/**
 * Snapshots of derived state: the fold up to seq N, never the transcript. A snapshot is trusted
 * only when its fold version is this code's and its entry hash matches the journal's entry N, so
 * a redeploy that changes the fold, or a journal that changed under it, silently falls back to a
 * full fold.
 */

/** Bump whenever applyEntry changes what it derives. */
export const FOLD_VERSION = 7;

export interface SessionSnapshot {
  readonly seq: number;
  readonly foldVersion: number;
  readonly entryHash: string;
  readonly view: unknown;
  /**
   * The task ledger up to the same seq (lib/core/tasks.ts), for readers (status, tasks) that
   * start from the snapshot and read only the journal after it. Absent from older snapshots.
   */
  readonly ledger?: unknown;
}

/** Bump whenever taskLedger changes what it derives: a snapshot's ledger of another version is not trusted. */
export const LEDGER_VERSION = 1;

/** Identifies the entry a snapshot was folded up to. */
export const entryHash = (entry: JournalEntry): string =>
  createHash('sha256').update(`${entry.seq}|${entry.kind}|${entry.epoch}|${entry.writeId}`).digest('hex').slice(0, 32);

const usage = z.object({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() });
const callIdentity = z.object({
  modelSeq: z.number().int(),
  callId: z.string(),
  tool: z.string(),
  digest: z.string().optional(),
});
const SessionViewSchema = z
  .object({
    lastSeq: z.number().int().nonnegative(),
    legEpoch: z.number().int().nonnegative(),
    legs: z.number().int().nonnegative(),
    steps: z.number().int().nonnegative(),
    turnSteps: z.number().int().nonnegative(),
    usage,
    modelCalls: z.number().int().nonnegative(),
    costUsd: z.number().nonnegative(),
    turnUsage: usage,
    turnModelCalls: z.number().int().nonnegative(),
    turnCostUsd: z.number().nonnegative(),
    spendBase: z.object({
      turnTokens: z.number().int().nonnegative(),
      turnModelCalls: z.number().int().nonnegative(),
      sessionCostUsd: z.number().nonnegative(),
    }),
    budgetDenied: z.string().optional(),
    ticketLimits: SpendLimitsSchema.optional(),
    compactedThrough: z.number().int().nonnegative(),
    turnId: z.string().optional(),
    pendingCalls: z.array(
      z.object({
        call: ToolCall,
        modelSeq: z.number().int(),
        intentSeq: z.number().int().optional(),
        digest: z.string().optional(),
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
    parked: callIdentity.extend({ seq: z.number().int() }).optional(),
    awaitingApproval: z.array(
      callIdentity.extend({
        seq: z.number().int(),
        input: z.unknown(),
        expiresAt: z.number().int().optional(),
        ranBefore: z
          .object({ session: z.string(), seq: z.number().int(), idempotencyKey: z.string(), result: z.unknown() })
          .optional(),
      }),
    ),
    decisions: z.record(
      z.string(),
      z.object({
        approved: z.boolean(),
        reason: z.string().optional(),
        byDefault: z.boolean().optional(),
        digest: z.string().optional(),
      }),
    ),
    deliveredIds: z.array(z.string()),
    agentVersion: z.number().int().positive().optional(),
    fork: z
      .object({
        from: z.object({ agent: z.string(), id: z.string() }),
        cursor: z.number().int().nonnegative(),
        effects: z.enum(Object.values(ForkEffects) as [ForkEffects, ...ForkEffects[]]),
        ledger: z.array(OriginalEffect),
        version: z.number().int().positive().optional(),
        used: z.record(z.string(), z.string()),
      })
      .optional(),
    limited: EntryData.limited.optional(),
  })
  .strict();

const LedgerSchema = z
  .object({
    version: z.literal(LEDGER_VERSION),
    tasks: z.array(
      z
        .object({
          taskId: z.string().min(1),
          agent: z.string().min(1),
          description: z.string(),
          turnId: z.string().min(1),
          releasedAsStraggler: z.boolean(),
        })
        .strict(),
    ),
    released: z.boolean(),
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
  return snapshotAt(view, taskLedger(entries.slice(0, view.lastSeq)), last);
}

/** The snapshot of a view and ledger folded up to `last`, or undefined when too large to store. */
export function snapshotAt(view: SessionView, ledger: TaskLedger, last: JournalEntry): SessionSnapshot | undefined {
  if (last.seq !== view.lastSeq) return undefined;
  const json = JSON.stringify(view);
  const ledgerJson = JSON.stringify({ version: LEDGER_VERSION, ...ledger });
  if (Buffer.byteLength(json) + Buffer.byteLength(ledgerJson) > MAX_SNAPSHOT_VIEW_BYTES) return undefined;
  return {
    seq: view.lastSeq,
    foldVersion: FOLD_VERSION,
    entryHash: entryHash(last),
    view: JSON.parse(json),
    ledger: JSON.parse(ledgerJson),
  };
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

/** The fold and the task ledger of a whole journal: what status and the task list read. */
export interface SessionFold {
  readonly view: SessionView;
  readonly ledger: TaskLedger;
}

/**
 * The fold and ledger of the whole journal from a snapshot and the journal from the snapshot's
 * own entry on (`tail[0]` is entry `snapshot.seq`, which proves the snapshot belongs to this
 * journal): the reader reads the tail, not the journal. Undefined when the snapshot cannot be
 * trusted (another fold or ledger version, no ledger, a foreign entry, a failed validation):
 * the caller folds the whole journal.
 */
export function foldFromSnapshot(
  snapshot: SessionSnapshot | undefined,
  tail: readonly JournalEntry[],
): SessionFold | undefined {
  const first = tail[0];
  if (snapshot === undefined || snapshot.foldVersion !== FOLD_VERSION || first === undefined) return undefined;
  if (first.seq !== snapshot.seq || entryHash(first) !== snapshot.entryHash) return undefined;
  const view = SessionViewSchema.safeParse(snapshot.view);
  const ledger = LedgerSchema.safeParse(snapshot.ledger);
  if (!view.success || !ledger.success || view.data.lastSeq !== snapshot.seq) return undefined;
  const rest = tail.slice(1);
  const { tasks, released } = ledger.data;
  return { view: foldJournal(rest, view.data as SessionView), ledger: taskLedger(rest, { tasks, released }) };
}

/** The fold and ledger of a whole journal read from its start. */
export const foldWhole = (entries: readonly JournalEntry[]): SessionFold => ({
  view: foldJournal(entries),
  ledger: taskLedger(entries, EMPTY_LEDGER),
});
