import { z } from 'zod';
import { callIdentityFields } from './call-identity.ts';
import { type EntryKind, ForkEffects, KickReason, OutcomeStatus } from './vocabulary.ts';

/**
 * The journal: the append-only, seq-numbered record of a session. It is the checkpoint, the
 * transcript and the event stream at once. Every entry read back is validated here.
 */

export const ToolCall = z.object({ id: z.string().min(1), name: z.string().min(1), input: z.unknown() });
export type ToolCall = z.infer<typeof ToolCall>;

const usage = z.object({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() });

/** A leg's marker: who owns the journal from here, why the leg runs, and its trace context. */
const LegMarker = z.object({
  owner: z.string(),
  reason: z.enum(Object.values(KickReason) as [KickReason, ...KickReason[]]),
  traceparent: z.string(),
});

/** What a once-only call returned, as its `tool` result (or a `done` verdict) journaled it. */
const CallResult = z.object({ ok: z.boolean(), output: z.unknown().optional(), error: z.string().optional() });

/**
 * A once-only call the original session made after a fork point: its watermark's seq there, its
 * tool, the digest of the parsed input it ran with, its key, and its result when one was journaled.
 */
export const OriginalEffect = z.object({
  seq: z.number().int().positive(),
  tool: z.string().min(1),
  digest: z.string().min(1).optional(),
  idempotencyKey: z.string().min(1),
  result: CallResult.optional(),
});
export type OriginalEffect = z.infer<typeof OriginalEffect>;

export const EntryData = {
  leg: LegMarker,
  /**
   * A turn's start. `leg`: the input is its leg's first write and carries the leg's marker (it
   * fences stale owners exactly as a `leg` entry would: nothing of the leg comes before it).
   */
  input: z.object({ input: z.unknown(), leg: LegMarker.optional() }),
  model: z.object({
    text: z.string().optional(),
    toolCalls: z.array(ToolCall),
    stopReason: z.string(),
    usage,
  }),
  /** `digest`: of the parsed input the call runs with (what an operator's `resolve` names). */
  intent: z.object({
    callId: z.string(),
    tool: z.string(),
    idempotencyKey: z.string(),
    digest: callIdentityFields.digest,
  }),
  tool: z.object({
    callId: z.string(),
    tool: z.string(),
    ok: z.boolean(),
    output: z.unknown().optional(),
    error: z.string().optional(),
    /**
     * In a fork: the result is the original's call at this seq, reused or denied under the fork's
     * effects; nothing ran.
     */
    forkOf: z.object({ seq: z.number().int().positive(), effect: z.enum(['reuse', 'deny']) }).optional(),
  }),
  /** A retryable model or tool error; the attempt history of the retry policy. */
  error: z.object({
    source: z.string(),
    message: z.string(),
    attempt: z.number().int().positive(),
    retryAt: z.number().int().optional(),
  }),
  /** Text told to the running turn; `id` is the inbox item it came from (delivered once). */
  message: z.object({ text: z.string(), id: z.string().optional() }),
  /**
   * A call waits for a human. `input` is the parsed input the tool would run with (what the rule
   * judged and the approver reads), `digest` its digest, `modelSeq` the model entry that asked for
   * the call (older entries lack both). `expiresAt`: when an undecided request is denied by
   * default (the tool's approval timeout).
   */
  approval: z.object({
    callId: z.string(),
    tool: z.string(),
    input: z.unknown(),
    expiresAt: z.number().int().optional(),
    modelSeq: callIdentityFields.modelSeq,
    digest: callIdentityFields.digest,
    /** In a fork: the original session already ran this call (its watermark's seq there, its key, its result). */
    ranBefore: z
      .object({
        session: z.string().min(1),
        seq: z.number().int().positive(),
        idempotencyKey: z.string(),
        result: CallResult.optional(),
      })
      .optional(),
  }),
  /** A call parked on a durable timer: at `wakeAt` its result is journaled (`output`, or when it woke). */
  timer: z.object({ callId: z.string(), wakeAt: z.number().int(), output: z.unknown().optional() }),
  /** A decision on the call it names (lib/core/call-identity.ts); older entries name the call id alone. */
  decision: z.object({
    callId: z.string(),
    approved: z.boolean(),
    reason: z.string().optional(),
    /** The inbox item it came from; absent when a timeout decided. */
    id: z.string().optional(),
    ...callIdentityFields,
  }),
  reconciled: z.object({
    callId: z.string(),
    verdict: z.enum(['done', 'notDone', 'unknown']),
    output: z.unknown().optional(),
    /** The inbox item of an operator's `resolve`; absent when the tool's reconcile answered. */
    id: z.string().optional(),
  }),
  /** A release carried out by the lease holder: tasks still running at its deadline are stragglers. */
  released: z.object({ cancelled: z.array(z.string()), stragglers: z.array(z.string()) }),
  outcome: z.object({
    status: z.enum(Object.values(OutcomeStatus) as [OutcomeStatus, ...OutcomeStatus[]]),
    output: z.unknown().optional(),
    error: z.string().optional(),
  }),
  /** The result was sent; or, with `undelivered`, given up after it kept failing (the turn keeps the outcome). */
  published: z.object({ undelivered: z.string().optional() }),
  /**
   * A fork's first entry, at `cursor + 1`: every entry before it is the session `from`'s (same
   * tenant), read from there, never copied. `effects` and `ledger` (the once-only calls `from`
   * made after the cursor, when the fork was made) decide what the fork's repeated calls do.
   */
  forked: z.object({
    from: z.object({ agent: z.string().min(1), id: z.string().min(1) }),
    cursor: z.number().int().nonnegative(),
    effects: z.enum(Object.values(ForkEffects) as [ForkEffects, ...ForkEffects[]]),
    ledger: z.array(OriginalEffect),
  }),
} satisfies Record<EntryKind, z.ZodType>;

export type EntryDataOf<K extends EntryKind> = z.infer<(typeof EntryData)[K]>;

interface EntryBase {
  readonly seq: number;
  readonly epoch: number;
  readonly writeId: string;
  readonly at: number;
  readonly turnId?: string | undefined;
}

/** A journal entry, discriminated by kind. */
export type JournalEntry = {
  [K in EntryKind]: EntryBase & { readonly kind: K; readonly data: EntryDataOf<K> };
}[EntryKind];

/** An entry before the store assigns nothing: the writer picks the seq (next after what it read). */
export type NewEntry = JournalEntry;

const entryBase = {
  seq: z.number().int().positive(),
  epoch: z.number().int().positive(),
  writeId: z.string().min(1),
  at: z.number().int(),
  turnId: z.string().optional(),
};

export const JournalEntrySchema = z.discriminatedUnion(
  'kind',
  (Object.keys(EntryData) as EntryKind[]).map((kind) =>
    z.object({ ...entryBase, kind: z.literal(kind), data: EntryData[kind] }),
  ) as unknown as [z.ZodObject, ...z.ZodObject[]],
);

/** The leg marker an entry carries: a `leg` entry's, or the one on the input that started its leg. */
export function legMarkerOf(entry: JournalEntry): EntryDataOf<'leg'> | undefined {
  if (entry.kind === 'leg') return entry.data;
  if (entry.kind === 'input') return entry.data.leg;
  return undefined;
}

/** Validates an entry read back from storage: stored state is untrusted input. */
export function parseEntry(raw: unknown): JournalEntry {
  return JournalEntrySchema.parse(raw) as unknown as JournalEntry;
}
