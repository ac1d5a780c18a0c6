import * as z from 'zod';
import { callIdentityFields } from './call-identity-fields.ts';
import { NewerJournalFormatError } from './errors.ts';
import { SpendLimitsSchema } from './spend.ts';
import { type EntryKind, ForkEffects, KickReason, OutcomeStatus } from './vocabulary.ts';

/**
 * The journal: the append-only, seq-numbered record of a session. It is the checkpoint, the
 * transcript and the event stream at once. Every entry read back is validated here.
 */

/**
 * The journal format this build writes and the newest it reads. Format 1 entries carry no `v`
 * (everything written before formats were numbered); format 2 adds `v`, the `upgraded` kind,
 * `agentVersion` on `input` and the `forked` kind (with its `version`); format 3 the `limited`
 * kind (a session waiting on a tenant limit); format 4 `stopped` on `outcome` (one turn stopped,
 * the conversation going on, which an older reader would take for a cancel of the session). A change an older reader would refuse (a new kind,
 * a new field) bumps it, so an older worker meeting such an entry leaves the session to a newer one.
 */
export const JOURNAL_FORMAT_VERSION = 4;

const agentVersion = z.number().int().positive();

export const ToolCall = z.object({ id: z.string().min(1), name: z.string().min(1), input: z.unknown() });
export type ToolCall = z.infer<typeof ToolCall>;

const usage = z.object({ inputTokens: z.number().int().nonnegative(), outputTokens: z.number().int().nonnegative() });
/** What a model call cost in US dollars, from the agent's price table; absent when its model has no price. */
const costUsd = z.number().nonnegative().finite().optional();

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
   * `limits`: the ticket's spend limits for the turn (lib/core/spend.ts).
   */
  input: z.object({
    input: z.unknown(),
    leg: LegMarker.optional(),
    /** The agent version the turn runs on (format 2); older inputs ran on the session's first. */
    agentVersion: agentVersion.optional(),
    limits: SpendLimitsSchema.optional(),
  }),
  model: z.object({
    text: z.string().optional(),
    toolCalls: z.array(ToolCall),
    stopReason: z.string(),
    usage,
    costUsd,
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
  /**
   * The transcript through `throughSeq` condensed by `model` into `summary` (which folds in the
   * previous compaction's summary): the model's transcript starts from here. The entries it
   * replaces stay in the journal for events, audit and fork. `throughSeq` never splits a tool call
   * from its result.
   */
  compaction: z
    .object({
      summary: z.string(),
      fromSeq: z.number().int().positive(),
      throughSeq: z.number().int().positive(),
      model: z.string(),
      usage,
      costUsd,
    })
    .refine((d) => d.fromSeq <= d.throughSeq, 'compaction fromSeq must not pass throughSeq'),
  /** A release carried out by the lease holder: tasks still running at its deadline are stragglers. */
  released: z.object({ cancelled: z.array(z.string()), stragglers: z.array(z.string()) }),
  /** The session runs on agent version `to` from here on (its agent's upgrade policy). */
  upgraded: z.object({ from: agentVersion, to: agentVersion }),
  /**
   * A turn's end. `stopped`: a `cancelled` turn that was stopped alone (a `stop` inbox item): the
   * conversation goes on, where any other `cancelled` outcome ends the session.
   */
  outcome: z.object({
    status: z.enum(Object.values(OutcomeStatus) as [OutcomeStatus, ...OutcomeStatus[]]),
    output: z.unknown().optional(),
    error: z.string().optional(),
    stopped: z.literal(true).optional(),
  }),
  /** The result was sent; or, with `undelivered`, given up after it kept failing (the turn keeps the outcome). */
  published: z.object({ undelivered: z.string().optional() }),
  /**
   * A fork's first entry, at `cursor + 1`: every entry before it is the session `from`'s (same
   * tenant), read from there, never copied. `effects` and `ledger` (the once-only calls `from`
   * made after the cursor, when the fork was made) decide what the fork's repeated calls do.
   * `version`: the agent version the fork was asked to run on; it stays there (a pin of its own).
   */
  forked: z.object({
    from: z.object({ agent: z.string().min(1), id: z.string().min(1) }),
    cursor: z.number().int().nonnegative(),
    effects: z.enum(Object.values(ForkEffects) as [ForkEffects, ...ForkEffects[]]),
    ledger: z.array(OriginalEffect),
    version: agentVersion.optional(),
  }),
  /**
   * A tenant limit held the session back (fair sharing, lib/core/tenant-limits.ts): it waits,
   * holding no lease, for one of its tenant's slots (`tenant-concurrency`, with its place in line
   * when it has one) or for a model call's rate (`model-rate`, until `until`). Not a step and no
   * failure: the turn goes on when the limit lets it.
   */
  limited: z.object({
    limit: z.enum(['tenant-concurrency', 'model-rate']),
    reason: z.string(),
    max: z.number().positive().optional(),
    place: z.number().int().positive().optional(),
    until: z.number().int().optional(),
  }),
} satisfies Record<EntryKind, z.ZodType>;

export type EntryDataOf<K extends EntryKind> = z.infer<(typeof EntryData)[K]>;

interface EntryBase {
  readonly seq: number;
  readonly epoch: number;
  readonly writeId: string;
  readonly at: number;
  readonly turnId?: string | undefined;
  /** The entry's journal format; absent: format 1. */
  readonly v?: number | undefined;
}

/** A journal entry, discriminated by kind. */
export type JournalEntry = {
  [K in EntryKind]: EntryBase & { readonly kind: K; readonly data: EntryDataOf<K> };
}[EntryKind];

/** A journal entry of one kind. */
export type JournalEntryOf<K extends EntryKind> = Extract<JournalEntry, { readonly kind: K }>;

/** An entry before the store assigns nothing: the writer picks the seq (next after what it read). */
export type NewEntry = JournalEntry;

const entryBase = {
  seq: z.number().int().positive(),
  epoch: z.number().int().positive(),
  writeId: z.string().min(1),
  at: z.number().int(),
  turnId: z.string().optional(),
  v: z.number().int().positive().optional(),
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

/** An entry's journal format (format 1 entries carry none). */
export const entryFormat = (entry: { readonly v?: number | undefined }): number => entry.v ?? 1;

/**
 * Refuses, before anything else is read of it, an entry of a format newer than `understood`:
 * its kind or fields may be ones this build does not know, and that is not corruption.
 */
export function assertReadableFormat(seq: number, format: unknown, understood = JOURNAL_FORMAT_VERSION): void {
  if (typeof format === 'number' && Number.isInteger(format) && format > understood)
    throw new NewerJournalFormatError(seq, format, understood);
}

/** Validates an entry read back from storage: stored state is untrusted input. */
export function parseEntry(raw: unknown): JournalEntry {
  const head = raw as { seq?: unknown; v?: unknown } | undefined;
  assertReadableFormat(typeof head?.seq === 'number' ? head.seq : 0, head?.v);
  return JournalEntrySchema.parse(raw) as unknown as JournalEntry;
}
