import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { CorruptStateError, InvalidInputError, NewerRecordFormatError } from '../core/errors.ts';
import { canonicalJson, formatSessionKey, type SessionKey } from '../core/ids.ts';
import { InboxItem } from '../core/inbox.ts';
import { assertReadableFormat, type JournalEntry, parseEntry } from '../core/journal.ts';
import { describeIssues } from '../core/messages.ts';
import type { SessionSnapshot } from '../core/snapshot.ts';
import { type SpendLimits, SpendLimitsSchema } from '../core/spend.ts';
import { OutcomeStatus, SessionState, TERMINAL_SESSION_STATES } from '../core/vocabulary.ts';
import {
  type ActiveInput,
  type AdvanceTurnRequest,
  EnqueueRefusal,
  type EnqueueTurnRequest,
  type ForkOrigin,
  type NewSession,
  type SessionRecord,
  type SessionSummary,
  type TurnOutcome,
  type TurnRecord,
} from '../ports/session-store.ts';
import { type PayloadOffload, type StoredPayload, toJson } from './payload-offload.ts';
import { sweepShardOf } from './sweep-shard.ts';

/**
 * The single-table item layout (lib/core/resources.ts), shared by the DynamoDB store and its
 * in-memory twin so both store, validate and refuse exactly the same items. Pure: no SDK here.
 *
 *   session  pk S#{tenant}#{agent}#{id}  sk META                 (sid, sweepShard/sweepAt for the indexes)
 *   turn     same pk                     sk T#{turnId}
 *   journal  same pk                     sk J#{seq, 12 digits}
 *   snapshot same pk                     sk SNAP#{seq, 12 digits}
 */

export const META_SK = 'META';
const TURN_PREFIX = 'T#';
const JOURNAL_PREFIX = 'J#';
const SEQ_DIGITS = 12;

export const pkOf = (key: SessionKey): string => `S#${key.tenant}#${key.agent}#${key.id}`;
export const turnSk = (turnId: string): string => `${TURN_PREFIX}${turnId}`;
export const journalSk = (seq: number): string => `${JOURNAL_PREFIX}${String(seq).padStart(SEQ_DIGITS, '0')}`;
/** The greatest journal sort key, the upper bound of a journal query. */
export const JOURNAL_SK_MAX = journalSk(10 ** SEQ_DIGITS - 1);

/** The session key inside a pk. Tenant and agent cannot contain `#` (NAME_PATTERN); the id may. */
export function keyOfPk(pk: string): SessionKey | undefined {
  const match = /^S#([^#]+)#([^#]+)#(.+)$/.exec(pk);
  return match?.[1] && match[2] && match[3] ? { tenant: match[1], agent: match[2], id: match[3] } : undefined;
}

/** The sweep index partition key of a session (a string attribute, per the resource definition). */
export const sweepShardAttr = (sessionId: string): string => String(sweepShardOf(sessionId));

/** Where a large payload of a session goes in the blob store; a pointer outside it is refused. */
const blobPrefix = (key: SessionKey): string =>
  `${encodeURIComponent(key.tenant)}/${encodeURIComponent(key.agent)}/${encodeURIComponent(key.id)}`;

const int = z.number().int();
const count = int.nonnegative();

// Session and turn items strip attributes they do not know, so a newer release can add one
// without breaking an older reader mid-deploy. Journal items are strict: they feed the transcript.
const SessionItemSchema = z.object({
  pk: z.string(),
  sk: z.literal(META_SK),
  sid: z.string().min(1),
  tenant: z.string().min(1),
  agent: z.string().min(1),
  ticketId: z.string(),
  state: z.enum(Object.values(SessionState) as [SessionState, ...SessionState[]]),
  owner: z.string().min(1).optional(),
  until: int.optional(),
  epoch: count,
  pendingVersion: count,
  seenVersion: count,
  activeTurnId: z.string().optional(),
  /** JSON of SessionRecord.activeInput. */
  activeInput: z.string().optional(),
  conversation: z.boolean().optional(),
  turnQueue: z.array(z.string()).optional(),
  lastTurnId: z.string().optional(),
  publishedTurnId: z.string().optional(),
  inbox: z.array(z.string()).optional(),
  inboxIds: z.array(z.string()).optional(),
  cancelRequested: z.boolean(),
  recoveries: count,
  legs: count,
  tokens: count.optional(),
  /** Every recovery the session has had (never reset, unlike `recoveries`). */
  recovered: count.optional(),
  traceId: z.string().regex(/^[0-9a-f]{32}$/),
  sweepShard: z.string().optional(),
  sweepAt: int.optional(),
  handoff: z.string().optional(),
  expiryRefreshedAt: int.optional(),
  retentionS: count.optional(),
  createdAt: int,
  updatedAt: int,
  ttl: int.optional(),
  parentAgent: z.string().min(1).optional(),
  parentId: z.string().min(1).optional(),
  releaseAt: int.optional(),
  releaseTimeoutMs: count.optional(),
  agentVersion: int.positive().optional(),
  journalFormat: int.positive().optional(),
  /** A fork's origin: its id (same tenant and agent), the cursor, and the ids of every session its history reads. */
  forkOfId: z.string().min(1).optional(),
  forkCursor: count.optional(),
  forkChain: z.array(z.string().min(1)).optional(),
});
export type SessionItem = z.infer<typeof SessionItemSchema>;

const ActiveInputSchema = z.object({ turnId: z.string().min(1), input: z.unknown() }).strict();

/** The record attribute that carries a turn's input (SessionRecord.activeInput). */
export const encodeActiveInput = (active: ActiveInput): string => JSON.stringify(active);

const TurnItemSchema = z.object({
  pk: z.string(),
  sk: z.string().startsWith(TURN_PREFIX),
  turnId: z.string(),
  ticketId: z.string(),
  input: z.string().optional(),
  inputBlob: z.string().optional(),
  inputHash: z.string(),
  createdAt: int,
  /** The ticket's spend limits, as JSON. */
  limits: z.string().optional(),
  outcome: z.string().optional(),
  outcomeBlob: z.string().optional(),
  ttl: int.optional(),
});
export type TurnItem = z.infer<typeof TurnItemSchema>;

const TurnOutcomeSchema = z
  .object({
    status: z.enum(Object.values(OutcomeStatus) as [OutcomeStatus, ...OutcomeStatus[]]),
    output: z.unknown().optional(),
    error: z.string().optional(),
    at: int,
  })
  .strict();

const JournalItemSchema = z
  .object({
    pk: z.string(),
    sk: z.string().startsWith(JOURNAL_PREFIX),
    seq: int.positive(),
    kind: z.string(),
    epoch: int.positive(),
    writeId: z.string().min(1),
    at: int,
    turnId: z.string().optional(),
    /** The entry's journal format (lib/core/journal.ts); absent: format 1. */
    v: int.positive().optional(),
    data: z.string().optional(),
    dataBlob: z.string().optional(),
    ttl: int.optional(),
  })
  .strict();
export type JournalItem = z.infer<typeof JournalItemSchema>;

function validate<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new CorruptStateError(`${what} failed validation: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** One inbox item; a kind this build has never heard of is a newer build's, not corruption. */
function inboxItemOf(text: string, what: string): InboxItem {
  const raw = parseJson(text, what);
  const kind = typeof raw === 'object' && raw !== null ? (raw as { kind?: unknown }).kind : undefined;
  if (typeof kind === 'string' && !INBOX_KINDS.has(kind)) throw new NewerRecordFormatError(`${what} (${kind})`);
  return validate(InboxItem, raw, what);
}

/** The inbox kinds this build knows, from the schema itself. */
const INBOX_KINDS: ReadonlySet<string> = new Set(InboxItem.options.map((option) => option.shape.kind.value));

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new CorruptStateError(`${what} holds invalid JSON`, { cause: error });
  }
}

const storedPayload = (inline: string | undefined, blob: string | undefined, what: string): StoredPayload => {
  if ((inline === undefined) === (blob === undefined)) {
    throw new CorruptStateError(`${what} must hold exactly one of an inline payload and a blob pointer`);
  }
  return inline !== undefined ? { inline } : { blob: blob as string };
};

const payloadAttrs = <I extends string, B extends string>(stored: StoredPayload, inline: I, blob: B) =>
  ('inline' in stored ? { [inline]: stored.inline } : { [blob]: stored.blob }) as Partial<Record<I | B, string>>;

/** The item of a new session: queued, lease free, epoch 0, watched by the sweeper from `sweepAt`. */
export function newSessionItem(session: NewSession): SessionItem {
  const { key } = session;
  return {
    pk: pkOf(key),
    sk: META_SK,
    sid: key.id,
    tenant: key.tenant,
    agent: key.agent,
    ticketId: session.ticketId,
    state: session.rejected ? SessionState.failed : SessionState.queued,
    epoch: session.fork?.epoch ?? 0,
    pendingVersion: 1,
    seenVersion: 0,
    activeTurnId: session.activeTurnId,
    ...(session.activeInput === undefined ? {} : { activeInput: encodeActiveInput(session.activeInput) }),
    ...(session.conversation ? { conversation: true } : {}),
    lastTurnId: session.activeTurnId,
    cancelRequested: false,
    recoveries: 0,
    legs: 0,
    traceId: session.traceId,
    ...(session.rejected ? {} : { sweepShard: sweepShardAttr(key.id), sweepAt: session.sweepAt }),
    createdAt: session.now,
    updatedAt: session.now,
    ...(session.ttlSeconds === undefined ? {} : { ttl: session.ttlSeconds }),
    ...(session.retentionS === undefined ? {} : { retentionS: session.retentionS }),
    ...(session.parent === undefined ? {} : { parentAgent: session.parent.agent, parentId: session.parent.id }),
    ...(session.agentVersion === undefined ? {} : { agentVersion: session.agentVersion }),
    ...(session.journalFormat === undefined ? {} : { journalFormat: session.journalFormat }),
    ...(session.expiryRefreshedAt === undefined ? {} : { expiryRefreshedAt: session.expiryRefreshedAt }),
    ...(session.fork === undefined
      ? {}
      : {
          forkOfId: session.fork.origin.key.id,
          forkCursor: session.fork.origin.cursor,
          forkChain: session.fork.origin.chain.map((k) => k.id),
        }),
  };
}

/**
 * Is `old` — the item a conditional create found in its place — the one this very create wrote
 * (a first attempt that committed before the SDK retried)? A resubmission differs in its trace
 * id (sessions) or creation time (turns); one that matches in every field is harmless either way.
 */
export function isOwnCreate(old: Record<string, unknown> | undefined, item: SessionItem | TurnItem): boolean {
  if (old === undefined) return false;
  const fields =
    'traceId' in item
      ? (['ticketId', 'traceId', 'createdAt'] as const)
      : (['ticketId', 'inputHash', 'createdAt'] as const);
  return fields.every((field) => old[field] === (item as Record<string, unknown>)[field]);
}

/** A validated session record; the key inside the item must be the key asked for. */
export function decodeSession(raw: unknown, expected?: SessionKey): SessionRecord {
  const where = expected ? `session ${formatSessionKey(expected)}` : 'session record';
  const item = validate(SessionItemSchema, raw, where);
  const key: SessionKey = { tenant: item.tenant, agent: item.agent, id: item.sid };
  if (item.pk !== pkOf(key)) throw new CorruptStateError(`${where}: item key ${item.pk} does not match its fields`);
  if (expected && pkOf(expected) !== item.pk) {
    throw new CorruptStateError(`${where}: the item holds session ${formatSessionKey(key)}`);
  }
  return {
    key,
    ticketId: item.ticketId,
    state: item.state,
    ...(item.owner === undefined ? {} : { owner: item.owner }),
    ...(item.until === undefined ? {} : { until: item.until }),
    epoch: item.epoch,
    pendingVersion: item.pendingVersion,
    seenVersion: item.seenVersion,
    ...(item.activeTurnId === undefined ? {} : { activeTurnId: item.activeTurnId }),
    ...(item.activeInput === undefined
      ? {}
      : {
          activeInput: validate(
            ActiveInputSchema,
            parseJson(item.activeInput, `${where} active input`),
            `${where} active input`,
          ),
        }),
    conversation: item.conversation ?? false,
    turnQueue: item.turnQueue ?? [],
    ...(item.lastTurnId === undefined ? {} : { lastTurnId: item.lastTurnId }),
    ...(item.publishedTurnId === undefined ? {} : { publishedTurnId: item.publishedTurnId }),
    inbox: (item.inbox ?? []).map((text, i) => inboxItemOf(text, `${where} inbox item ${i}`)),
    cancelRequested: item.cancelRequested,
    recoveries: item.recoveries,
    legs: item.legs,
    tokens: item.tokens ?? 0,
    recovered: item.recovered ?? 0,
    traceId: item.traceId,
    ...(item.sweepAt === undefined ? {} : { sweepAt: item.sweepAt }),
    ...(item.handoff === undefined ? {} : { handoff: item.handoff }),
    ...(item.expiryRefreshedAt === undefined ? {} : { expiryRefreshedAt: item.expiryRefreshedAt }),
    ...(item.retentionS === undefined ? {} : { retentionS: item.retentionS }),
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
    ...(item.ttl === undefined ? {} : { expiresAt: item.ttl * 1000 }),
    ...(item.parentAgent === undefined || item.parentId === undefined
      ? {}
      : { parent: { tenant: item.tenant, agent: item.parentAgent, id: item.parentId } }),
    ...(item.releaseAt === undefined
      ? {}
      : { releaseRequested: { at: item.releaseAt, timeoutMs: item.releaseTimeoutMs ?? 0 } }),
    ...(item.agentVersion === undefined ? {} : { agentVersion: item.agentVersion }),
    ...(item.journalFormat === undefined ? {} : { journalFormat: item.journalFormat }),
    ...(item.forkOfId === undefined ? {} : { forkedFrom: forkOriginOf(item, key, where) }),
  };
}

/** A fork's origin as stored: the same tenant and agent (a fork never reaches another's sessions). */
function forkOriginOf(item: SessionItem, key: SessionKey, where: string): ForkOrigin {
  const chain = item.forkChain ?? [];
  if (item.forkCursor === undefined || chain[0] !== item.forkOfId || chain.includes(key.id))
    throw new CorruptStateError(`${where}: its fork origin is inconsistent`);
  const same = (id: string): SessionKey => ({ tenant: key.tenant, agent: key.agent, id });
  return { key: same(item.forkOfId!), cursor: item.forkCursor, chain: chain.map(same) };
}

/**
 * Whether a further turn may be accepted, from the session record and whether the turn already has
 * an outcome: the one decision both stores make (atomically in memory; in DynamoDB the same
 * conditions are the write's, and this explains a refusal). A turn accepted before is no change.
 */
export function decideEnqueue(
  record: SessionRecord | undefined,
  turnFinished: boolean,
  request: EnqueueTurnRequest,
): 'enqueue' | 'accepted-before' | EnqueueRefusal {
  if (record === undefined) return EnqueueRefusal.notFound;
  if (turnFinished || record.activeTurnId === request.turnId || record.turnQueue.includes(request.turnId))
    return 'accepted-before';
  if (TERMINAL_SESSION_STATES.includes(record.state)) return EnqueueRefusal.finished;
  if (!record.conversation) return EnqueueRefusal.oneShot;
  if (record.releaseRequested) return EnqueueRefusal.released;
  if (request.ifLastTurn !== undefined && record.lastTurnId !== request.ifLastTurn) return EnqueueRefusal.stale;
  if (record.turnQueue.length >= request.maxPending) return EnqueueRefusal.full;
  return 'enqueue';
}

/** Why an inbox item cannot be posted, or undefined when it can (or was posted before: `posted`). */
export function decidePost(
  record: SessionRecord | undefined,
  id: string,
  maxPending: number,
): 'post' | 'posted-before' | 'not-found' | 'finished' | 'full' {
  if (record === undefined) return 'not-found';
  if (record.inbox.some((item) => item.id === id)) return 'posted-before';
  if (TERMINAL_SESSION_STATES.includes(record.state)) return 'finished';
  if (record.inbox.length >= maxPending) return 'full';
  return 'post';
}

/**
 * Is a refused `advanceTurn` this owner's own write, which committed on a first attempt whose
 * answer was lost? Only the holder moves the active turn while it holds the lease, and turn ids
 * are unique in a session: the same owner and epoch with `next` active means it landed.
 */
export function advancedBefore(record: SessionRecord | undefined, request: AdvanceTurnRequest): boolean {
  return (
    record !== undefined &&
    record.owner === request.owner &&
    record.epoch === request.epoch &&
    record.activeTurnId === request.next
  );
}

/** Does a raw turn item hold an outcome? */
export const turnItemFinished = (item: Record<string, unknown> | undefined): boolean =>
  item !== undefined && (item.outcome !== undefined || item.outcomeBlob !== undefined);

const SummaryItemSchema = SessionItemSchema.pick({
  pk: true,
  sid: true,
  tenant: true,
  agent: true,
  ticketId: true,
  state: true,
  legs: true,
  recovered: true,
  tokens: true,
  cancelRequested: true,
  createdAt: true,
});

/** A list row from a byTenant index item (or a full session item). */
export function decodeSummary(raw: unknown): SessionSummary {
  const item = validate(SummaryItemSchema, raw, 'session list item');
  const key: SessionKey = { tenant: item.tenant, agent: item.agent, id: item.sid };
  if (item.pk !== pkOf(key)) throw new CorruptStateError(`session list item ${item.pk} does not match its fields`);
  return {
    key,
    ticketId: item.ticketId,
    state: item.state,
    legs: item.legs,
    recoveries: item.recovered ?? 0,
    tokens: item.tokens ?? 0,
    cancelRequested: item.cancelRequested,
    createdAt: item.createdAt,
  };
}

const ListCursorSchema = z.object({ c: int, p: z.string().startsWith('S#') }).strict();

/** The position after a list row: its creation time and pk (opaque to callers, base64url JSON). */
export const encodeListCursor = (summary: Pick<SessionSummary, 'key' | 'createdAt'>): string =>
  Buffer.from(JSON.stringify({ c: summary.createdAt, p: pkOf(summary.key) })).toString('base64url');

/** Reads a list cursor; one that is not ours (or is for another tenant) is the caller's mistake. */
export function decodeListCursor(cursor: string, tenant: string): { createdAt: number; pk: string } {
  let parsed: z.infer<typeof ListCursorSchema> | undefined;
  try {
    parsed = ListCursorSchema.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || keyOfPk(parsed.p)?.tenant !== tenant)
    throw new InvalidInputError('cursor is not a cursor of this session list');
  return { createdAt: parsed.c, pk: parsed.p };
}

/** The item of a turn; a large input is written to the blob store first (content-addressed). */
export async function encodeTurn(
  key: SessionKey,
  turn: TurnRecord,
  offload: PayloadOffload,
  ttlSeconds?: number,
): Promise<TurnItem> {
  const what = `input of turn ${turn.turnId} of ${formatSessionKey(key)}`;
  const input = await offload.store(
    toJson(turn.input),
    () => `${blobPrefix(key)}/T${encodeURIComponent(turn.turnId)}-input-${turn.inputHash.slice(0, 32)}`,
    what,
  );
  const outcome = turn.outcome === undefined ? {} : await encodeOutcome(key, turn.turnId, turn.outcome, offload);
  return {
    pk: pkOf(key),
    sk: turnSk(turn.turnId),
    turnId: turn.turnId,
    ticketId: turn.ticketId,
    ...payloadAttrs(input, 'input', 'inputBlob'),
    inputHash: turn.inputHash,
    createdAt: turn.createdAt,
    ...(turn.limits === undefined ? {} : { limits: JSON.stringify(turn.limits) }),
    ...outcome,
    ...(ttlSeconds === undefined ? {} : { ttl: ttlSeconds }),
  };
}

/** The attributes that hold a turn outcome (inline, or a pointer to a blob with a unique key). */
export async function encodeOutcome(
  key: SessionKey,
  turnId: string,
  outcome: TurnOutcome,
  offload: PayloadOffload,
): Promise<Partial<Record<'outcome' | 'outcomeBlob', string>>> {
  const stored = await offload.store(
    toJson(outcome),
    () => `${blobPrefix(key)}/T${encodeURIComponent(turnId)}-outcome-${randomBytes(8).toString('hex')}`,
    `outcome of turn ${turnId} of ${formatSessionKey(key)}`,
  );
  return payloadAttrs(stored, 'outcome', 'outcomeBlob');
}

/** A validated turn, its input (and outcome) read back from the blob store when offloaded. */
export async function decodeTurn(raw: unknown, key: SessionKey, offload: PayloadOffload): Promise<TurnRecord> {
  const item = validate(TurnItemSchema, raw, `turn of ${formatSessionKey(key)}`);
  const where = `turn ${item.turnId} of ${formatSessionKey(key)}`;
  if (item.pk !== pkOf(key) || item.sk !== turnSk(item.turnId)) {
    throw new CorruptStateError(`${where}: item key ${item.pk}/${item.sk} does not match`);
  }
  const input = parseJson(
    await offload.load(storedPayload(item.input, item.inputBlob, `${where} input`), `${where} input`, blobPrefix(key)),
    `${where} input`,
  );
  const outcome = await decodeOutcome(item, where, offload, blobPrefix(key));
  return {
    turnId: item.turnId,
    ticketId: item.ticketId,
    input,
    inputHash: item.inputHash,
    createdAt: item.createdAt,
    ...(item.limits === undefined ? {} : { limits: decodeLimits(item.limits, where) }),
    ...(outcome === undefined ? {} : { outcome }),
  };
}

function decodeLimits(json: string, where: string): SpendLimits {
  const parsed = SpendLimitsSchema.safeParse(parseJson(json, `${where} limits`));
  if (!parsed.success) throw new CorruptStateError(`${where} limits: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

async function decodeOutcome(
  item: Pick<TurnItem, 'outcome' | 'outcomeBlob'>,
  where: string,
  offload: PayloadOffload,
  scope: string,
): Promise<TurnOutcome | undefined> {
  if (item.outcome === undefined && item.outcomeBlob === undefined) return undefined;
  const what = `${where} outcome`;
  const text = await offload.load(storedPayload(item.outcome, item.outcomeBlob, what), what, scope);
  return validate(TurnOutcomeSchema, parseJson(text, what), what) as TurnOutcome;
}

/**
 * The item of a journal entry. `data` is stored as JSON text, so the bytes written are about
 * the payload's own; a large one goes to the blob store first, under a key no other writer uses.
 */
export async function encodeEntry(
  key: SessionKey,
  entry: JournalEntry,
  offload: PayloadOffload,
  ttlSeconds?: number,
): Promise<JournalItem> {
  const data = await offload.store(
    toJson(entry.data),
    () => `${blobPrefix(key)}/J${entry.seq}-e${entry.epoch}-${encodeURIComponent(entry.writeId)}`,
    `journal entry ${entry.seq} (${entry.kind}) of ${formatSessionKey(key)}`,
  );
  return {
    pk: pkOf(key),
    sk: journalSk(entry.seq),
    seq: entry.seq,
    kind: entry.kind,
    epoch: entry.epoch,
    writeId: entry.writeId,
    at: entry.at,
    ...(entry.turnId === undefined ? {} : { turnId: entry.turnId }),
    ...(entry.v === undefined ? {} : { v: entry.v }),
    ...payloadAttrs(data, 'data', 'dataBlob'),
    ...(ttlSeconds === undefined ? {} : { ttl: ttlSeconds }),
  };
}

/**
 * A journal entry read back, validated as untrusted input: the item's attributes, its seq
 * against its sort key, and the entry schema. Fields the schema does not know are refused, not
 * dropped: an entry that does not round-trip exactly was not written by Baton.
 */
export async function decodeEntry(raw: unknown, key: SessionKey, offload: PayloadOffload): Promise<JournalEntry> {
  const head = raw as { sk?: unknown; seq?: unknown; v?: unknown } | undefined;
  const sk = head?.sk;
  // A newer worker's entry may hold attributes, a kind or fields this build does not know:
  // recognised by its format before anything else is validated, and never taken for corruption.
  assertReadableFormat(typeof head?.seq === 'number' ? head.seq : 0, head?.v);
  const where = `journal entry ${typeof sk === 'string' ? sk.slice(JOURNAL_PREFIX.length).replace(/^0+/, '') : '?'} of ${formatSessionKey(key)}`;
  const item = validate(JournalItemSchema, raw, where);
  if (item.pk !== pkOf(key) || item.sk !== journalSk(item.seq)) {
    throw new CorruptStateError(`${where}: seq ${item.seq} does not match its key ${item.pk}/${item.sk}`);
  }
  const what = `journal entry ${item.seq} of ${formatSessionKey(key)}`;
  const data = parseJson(
    await offload.load(storedPayload(item.data, item.dataBlob, what), what, blobPrefix(key)),
    what,
  );
  const candidate = {
    seq: item.seq,
    kind: item.kind,
    epoch: item.epoch,
    writeId: item.writeId,
    at: item.at,
    ...(item.turnId === undefined ? {} : { turnId: item.turnId }),
    ...(item.v === undefined ? {} : { v: item.v }),
    data,
  };
  let entry: JournalEntry;
  try {
    entry = parseEntry(candidate);
  } catch (error) {
    const detail = error instanceof z.ZodError ? describeIssues(error) : String(error);
    throw new CorruptStateError(`${what} failed validation: ${detail}`, { cause: error });
  }
  if (canonicalJson(entry.data) !== canonicalJson(data)) {
    throw new CorruptStateError(`${what} (${item.kind}) holds fields its kind does not define`);
  }
  return entry;
}

const SNAPSHOT_PREFIX = 'SNAP#';
export const snapshotSk = (seq: number): string => `${SNAPSHOT_PREFIX}${String(seq).padStart(SEQ_DIGITS, '0')}`;
export const SNAPSHOT_SK_MIN = snapshotSk(0);
export const SNAPSHOT_SK_MAX = snapshotSk(10 ** SEQ_DIGITS - 1);

/**
 * Is the item at `sk` one a live session needs besides its record: a turn, a journal entry or a
 * snapshot? refreshExpiry moves these forward, and only these (live text is transient).
 */
export const isRetainedItemSk = (sk: string): boolean =>
  sk.startsWith(TURN_PREFIX) || sk.startsWith(JOURNAL_PREFIX) || sk.startsWith(SNAPSHOT_PREFIX);

/** A snapshot is small derived state (never the transcript), so it is always stored inline. */
const SnapshotItemSchema = z
  .object({
    pk: z.string(),
    sk: z.string().startsWith(SNAPSHOT_PREFIX),
    seq: int.positive(),
    foldVersion: int.nonnegative(),
    entryHash: z.string().min(1),
    view: z.string(),
    /** The task ledger up to the same seq, as JSON; absent from snapshots written before it was kept. */
    ledger: z.string().optional(),
    ttl: int.optional(),
  })
  .strict();

export function encodeSnapshot(key: SessionKey, snapshot: SessionSnapshot, ttlSeconds?: number) {
  return {
    pk: pkOf(key),
    sk: snapshotSk(snapshot.seq),
    seq: snapshot.seq,
    foldVersion: snapshot.foldVersion,
    entryHash: snapshot.entryHash,
    view: JSON.stringify(snapshot.view),
    ...(snapshot.ledger === undefined ? {} : { ledger: JSON.stringify(snapshot.ledger) }),
    ...(ttlSeconds === undefined ? {} : { ttl: ttlSeconds }),
  };
}

export function decodeSnapshot(raw: unknown, key: SessionKey): SessionSnapshot {
  const item = validate(SnapshotItemSchema, raw, `snapshot of ${formatSessionKey(key)}`);
  if (item.pk !== pkOf(key) || item.sk !== snapshotSk(item.seq))
    throw new CorruptStateError(`snapshot ${item.sk} does not belong to ${formatSessionKey(key)}`);
  return {
    seq: item.seq,
    foldVersion: item.foldVersion,
    entryHash: item.entryHash,
    view: parseJson(item.view, `snapshot ${item.seq}`),
    ...(item.ledger === undefined ? {} : { ledger: parseJson(item.ledger, `snapshot ${item.seq}'s ledger`) }),
  };
}
