import { setTimeout as sleep } from 'node:timers/promises';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { CorruptStateError, LeaseLostError, SeqTakenError } from '../../core/errors.ts';
import { formatSessionKey, type SessionKey } from '../../core/ids.ts';
import { steerItem } from '../../core/inbox.ts';
import type { JournalEntry } from '../../core/journal.ts';
import { SESSION_TABLE } from '../../core/resources.ts';
import type { SessionSnapshot } from '../../core/snapshot.ts';
import { SessionState, TERMINAL_SESSION_STATES } from '../../core/vocabulary.ts';
import type { BlobStore } from '../../ports/blob-store.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type {
  AcquireRequest,
  AcquireResult,
  AdvanceTurnRequest,
  AdvanceTurnResult,
  BumpRequest,
  BumpResult,
  DueSession,
  EndTurnRequest,
  EnqueueTurnRequest,
  EnqueueTurnResult,
  NewSession,
  PostInboxRequest,
  PostInboxResult,
  RefreshExpiryRequest,
  ReleaseRequest,
  ReleaseResult,
  RenewRequest,
  SessionPage,
  SessionQuery,
  SessionRecord,
  SessionStore,
  SessionSummary,
  TakeInboxRequest,
  TurnOutcome,
  TurnRead,
  TurnRecord,
} from '../../ports/session-store.ts';
import { type JournalReadOptions, journalReadLimit } from '../../ports/session-store.ts';
import { readForkedJournal } from '../fork-journal.ts';
import { PayloadOffload } from '../payload-offload.ts';
import {
  advancedBefore,
  decideEnqueue,
  decidePost,
  decodeEntry,
  decodeListCursor,
  decodeSession,
  decodeSnapshot,
  decodeSummary,
  decodeTurn,
  encodeActiveInput,
  encodeEntry,
  encodeListCursor,
  encodeOutcome,
  encodeSnapshot,
  encodeTurn,
  isOwnCreate,
  isRetainedItemSk,
  JOURNAL_SK_MAX,
  journalSk,
  keyOfPk,
  META_SK,
  newSessionItem,
  pkOf,
  SNAPSHOT_SK_MAX,
  SNAPSHOT_SK_MIN,
  sweepShardAttr,
  turnItemFinished,
  turnSk,
} from '../session-item-codec.ts';
import { allOf, Expression } from './expression.ts';

export interface DynamoDbSessionStoreOptions {
  readonly client: DynamoDBDocumentClient;
  readonly table: string;
  /** Where payloads over `offloadThresholdBytes` go; without one, such a payload is refused. */
  readonly blobs?: BlobStore | undefined;
  readonly offloadThresholdBytes?: number | undefined;
  /** Stamps `updatedAt` on writes whose request carries no time. */
  readonly clock?: Clock | undefined;
}

/** How many times enqueueTurn reads again when the session moved between its read and its write. */
const ENQUEUE_ATTEMPTS = 10;
/**
 * The longest pause before an enqueue reads again. Senders that met each other pause a random
 * part of a doubling window, so a dozen sending at once spread out instead of colliding every round.
 */
const ENQUEUE_BACKOFF_CAP_MS = 500;

/** Item expiries refreshExpiry moves at once: a long session's thousands of items in seconds. */
const REFRESH_CONCURRENCY = 16;

/** What listSessions returns when the caller names no limit. */
const DEFAULT_LIST_LIMIT = 100;
/** Index pages one querySessions call reads at most (a filtered list may match few rows per page). */
const LIST_QUERY_ROUNDS = 4;
/** Index items read per round when filtering: about 100 KB of projected rows. */
const FILTERED_QUERY_LIMIT = 500;

type Item = Record<string, unknown>;
type Conditional<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly old: Item | undefined };

/**
 * Runs a conditional write. A failed condition is an answer, not an error: it comes back with
 * the item as it was (`ReturnValuesOnConditionCheckFailure: 'ALL_OLD'`), so the caller can tell
 * its own retried write from someone else's without a second read.
 */
async function conditional<T>(write: () => Promise<T>): Promise<Conditional<T>> {
  try {
    return { ok: true, value: await write() };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return { ok: false, old: error.Item ? unmarshall(error.Item as Parameters<typeof unmarshall>[0]) : undefined };
  }
}

/** BatchGetItem's limit of keys per request. */
const BATCH_GET_MAX_KEYS = 100;
const BATCH_GET_ATTEMPTS = 8;
const BATCH_GET_FIRST_PAUSE_MS = 25;
const BATCH_GET_MAX_PAUSE_MS = 1_000;

interface ItemKey {
  readonly pk: string;
  readonly sk: string;
}

const itemId = (key: ItemKey) => `${key.pk}\u0000${key.sk}`;

/**
 * The session store on DynamoDB, one table (lib/core/resources.ts). Every write an owner makes is
 * a single-item conditional write fenced by epoch and owner (records) or by seq (journal), and
 * recognises its own write when an SDK retry of a committed attempt fails its condition.
 * @example new DynamoDbSessionStore({ client: createDocumentClient({ region }), table, blobs })
 */
export class DynamoDbSessionStore implements SessionStore {
  readonly #db: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #offload: PayloadOffload;
  readonly #clock: Clock;

  constructor(options: DynamoDbSessionStoreOptions) {
    this.#db = options.client;
    this.#table = options.table;
    this.#offload = new PayloadOffload({ blobs: options.blobs, thresholdBytes: options.offloadThresholdBytes });
    this.#clock = options.clock ?? systemClock;
  }

  async createSession(session: NewSession): Promise<{ created: boolean; record: SessionRecord }> {
    const item = newSessionItem(session);
    const result = await this.#create(item);
    if (result.ok) return { created: true, record: decodeSession(item, session.key) };
    return { created: isOwnCreate(result.old, item), record: decodeSession(result.old, session.key) };
  }

  async getSession(key: SessionKey): Promise<SessionRecord | undefined> {
    const { Item } = await this.#db.send(
      new GetCommand({ TableName: this.#table, Key: { pk: pkOf(key), sk: META_SK }, ConsistentRead: true }),
    );
    return Item === undefined ? undefined : decodeSession(Item, key);
  }

  async getSessions(keys: readonly SessionKey[]): Promise<(SessionRecord | undefined)[]> {
    const items = await this.#batchGet(keys.map((key) => ({ pk: pkOf(key), sk: META_SK })));
    return items.map((item, i) => (item === undefined ? undefined : decodeSession(item, keys[i]!)));
  }

  async getTurns(reads: readonly TurnRead[]): Promise<(TurnRecord | undefined)[]> {
    const items = await this.#batchGet(reads.map(({ key, turnId }) => ({ pk: pkOf(key), sk: turnSk(turnId) })));
    return Promise.all(
      items.map((item, i) => (item === undefined ? undefined : decodeTurn(item, reads[i]!.key, this.#offload))),
    );
  }

  /**
   * Consistent reads of many items in BatchGetItem's requests of up to 100 keys, in the order
   * asked. Keys DynamoDB leaves unprocessed (throttling) are asked again after a growing pause,
   * as AWS advises; a batch still unprocessed after BATCH_GET_ATTEMPTS throws, as a throttled
   * GetItem past its retries would.
   */
  async #batchGet(keys: readonly ItemKey[]): Promise<(Record<string, unknown> | undefined)[]> {
    const found = new Map<string, Record<string, unknown>>();
    const unique = [...new Map(keys.map((key) => [itemId(key), key])).values()];
    for (let start = 0; start < unique.length; start += BATCH_GET_MAX_KEYS) {
      let pending: ItemKey[] = unique.slice(start, start + BATCH_GET_MAX_KEYS);
      for (let attempt = 1; pending.length > 0; attempt++) {
        if (attempt > BATCH_GET_ATTEMPTS)
          throw new Error(`BatchGetItem left ${pending.length} keys unprocessed after ${BATCH_GET_ATTEMPTS} attempts`);
        if (attempt > 1) await sleep(Math.min(BATCH_GET_MAX_PAUSE_MS, BATCH_GET_FIRST_PAUSE_MS * 2 ** (attempt - 2)));
        const { Responses, UnprocessedKeys } = await this.#db.send(
          new BatchGetCommand({ RequestItems: { [this.#table]: { Keys: pending, ConsistentRead: true } } }),
        );
        for (const item of Responses?.[this.#table] ?? []) found.set(itemId(item as ItemKey), item);
        pending = (UnprocessedKeys?.[this.#table]?.Keys ?? []) as ItemKey[];
      }
    }
    return keys.map((key) => found.get(itemId(key)));
  }

  async putTurn(
    key: SessionKey,
    turn: TurnRecord,
    ttlSeconds?: number,
  ): Promise<{ created: boolean; turn: TurnRecord }> {
    const item = await encodeTurn(key, turn, this.#offload, ttlSeconds);
    const result = await this.#create(item);
    if (result.ok) return { created: true, turn: await decodeTurn(item, key, this.#offload) };
    return { created: isOwnCreate(result.old, item), turn: await decodeTurn(result.old, key, this.#offload) };
  }

  async getTurn(key: SessionKey, turnId: string): Promise<TurnRecord | undefined> {
    const { Item } = await this.#db.send(
      new GetCommand({ TableName: this.#table, Key: { pk: pkOf(key), sk: turnSk(turnId) }, ConsistentRead: true }),
    );
    return Item === undefined ? undefined : decodeTurn(Item, key, this.#offload);
  }

  async setTurnOutcome(key: SessionKey, turnId: string, outcome: TurnOutcome): Promise<TurnOutcome> {
    const attributes = await encodeOutcome(key, turnId, outcome, this.#offload);
    const x = new Expression();
    const turnExists = `attribute_exists(${x.name('pk')})`;
    const noOutcomeYet = `attribute_not_exists(${x.name('outcome')}) AND attribute_not_exists(${x.name('outcomeBlob')})`;
    const sets = Object.entries(attributes).map(([attribute, value]) => `${x.name(attribute)} = ${x.value(value)}`);
    const result = await this.#update(key, turnSk(turnId), x, {
      update: `SET ${sets.join(', ')}`,
      condition: allOf(turnExists, noOutcomeYet),
    });
    if (result.ok) return outcome;
    if (result.old === undefined) {
      throw new CorruptStateError(`outcome for turn ${turnId} of ${formatSessionKey(key)}, which does not exist`);
    }
    // Write-once: the first outcome stands (our own retried write lands here too, and returns itself).
    const first = (await decodeTurn(result.old, key, this.#offload)).outcome;
    if (first === undefined)
      throw new CorruptStateError(`turn ${turnId} of ${formatSessionKey(key)} refused an outcome`);
    return first;
  }

  async listTurns(key: SessionKey): Promise<TurnRecord[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const x = new Expression();
      const page = await this.#db.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: `${x.name('pk')} = ${x.value(pkOf(key))} AND begins_with(${x.name('sk')}, ${x.value(turnSk(''))})`,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          ...x.attributes(),
        }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    const turns = await Promise.all(items.map((item) => decodeTurn(item, key, this.#offload)));
    return turns.sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Reads the record, then the turn, decides with the shared `decideEnqueue`, then updates the
   * record conditioned on it being still as read in every field the decision used; a session
   * that moved in between is read again. One UpdateItem, not a transaction with a check of the
   * turn: a turn gets its outcome only while it is the record's active turn, and the record moves
   * past it only after that outcome is written. So when the record, read first, neither runs nor
   * queues the turn, and the turn, read after it, has no outcome, the turn can only get one by
   * being accepted — which changes the active turn or the queue, and fails this condition.
   */
  async enqueueTurn(key: SessionKey, request: EnqueueTurnRequest): Promise<EnqueueTurnResult> {
    for (let attempt = 1; ; attempt++) {
      // In this order: the turn read after the record sees any outcome written before the record moved on.
      const meta = await this.#get(key, META_SK);
      const turn = meta === undefined ? undefined : await this.#get(key, turnSk(request.turnId));
      const record = meta === undefined ? undefined : decodeSession(meta, key);
      if (record !== undefined && turn === undefined)
        throw new CorruptStateError(
          `turn ${request.turnId} of ${formatSessionKey(key)} was not put before its enqueue`,
        );
      const decision = decideEnqueue(record, turnItemFinished(turn), request);
      if (decision === 'accepted-before') return { ok: true, record: record!, queued: false };
      if (decision !== 'enqueue') return { ok: false, reason: decision, current: record };
      const current = record!;
      const idle = current.owner === undefined && current.state === SessionState.idle;
      const x = new Expression();
      const queue = x.name('turnQueue');
      const asRead = allOf(
        `${x.name('state')} = ${x.value(current.state)}`,
        current.owner === undefined
          ? `attribute_not_exists(${x.name('owner')})`
          : `${x.name('owner')} = ${x.value(current.owner)}`,
        current.activeTurnId === undefined
          ? `attribute_not_exists(${x.name('activeTurnId')})`
          : `${x.name('activeTurnId')} = ${x.value(current.activeTurnId)}`,
        current.turnQueue.length === 0
          ? `(attribute_not_exists(${queue}) OR size(${queue}) = ${x.value(0)})`
          : `size(${queue}) = ${x.value(current.turnQueue.length)}`,
        `attribute_not_exists(${x.name('releaseAt')})`,
      );
      const sweepAt = x.name('sweepAt');
      // An idle session's previous turn has ended and published: the new turn becomes active in
      // this write, so the leg its kick starts runs it at once (no leg only to hand it over).
      const activate = idle && current.turnQueue.length === 0;
      // A steering turn heads the queue, and its inbox item (same write) tells the owner to wind down.
      const steered = request.steer === true && !idle && current.activeTurnId !== undefined;
      const steer = steerItem(request.turnId);
      // Named only where used: an expression value no clause uses is refused.
      const empty = () => x.value([]);
      const sets = [
        activate
          ? `${x.name('activeTurnId')} = ${x.value(request.turnId)}`
          : steered
            ? `${queue} = list_append(${x.value([request.turnId])}, if_not_exists(${queue}, ${empty()}))`
            : `${queue} = list_append(if_not_exists(${queue}, ${empty()}), ${x.value([request.turnId])})`,
        `${x.name('lastTurnId')} = ${x.value(request.turnId)}`,
        `${x.name('pendingVersion')} = ${x.name('pendingVersion')} + ${x.value(1)}`,
        `${x.name('updatedAt')} = ${x.value(request.now)}`,
        `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
        idle
          ? `${sweepAt} = ${x.value(request.sweepAt)}`
          : `${sweepAt} = if_not_exists(${sweepAt}, ${x.value(request.sweepAt)})`,
      ];
      if (idle) sets.push(`${x.name('state')} = ${x.value(SessionState.queued)}`);
      if (activate && request.activeInput !== undefined)
        sets.push(`${x.name('activeInput')} = ${x.value(encodeActiveInput(request.activeInput))}`);
      if (steered) {
        const inbox = x.name('inbox');
        const ids = x.name('inboxIds');
        sets.push(
          `${inbox} = list_append(if_not_exists(${inbox}, ${empty()}), ${x.value([JSON.stringify(steer)])})`,
          `${ids} = list_append(if_not_exists(${ids}, ${empty()}), ${x.value([steer.id])})`,
        );
      }
      const result = await this.#update(key, META_SK, x, {
        update: `SET ${sets.join(', ')}`,
        condition: asRead,
        returnNew: true,
      });
      if (result.ok) return { ok: true, record: decodeSession(result.value, key), queued: true, steered };
      // The session moved (another sender, the owner): decide again from what it is now.
      if (attempt >= ENQUEUE_ATTEMPTS)
        throw new Error(
          `enqueue of turn ${request.turnId} on ${formatSessionKey(key)} kept meeting changes; try again`,
        );
      await sleep(Math.random() * Math.min(ENQUEUE_BACKOFF_CAP_MS, 10 * 2 ** attempt));
    }
  }

  async endTurn(key: SessionKey, request: EndTurnRequest): Promise<ReleaseResult> {
    const x = new Expression();
    const queue = x.name('turnQueue');
    const holdsLease = allOf(
      `${x.name('epoch')} = ${x.value(request.epoch)}`,
      `${x.name('owner')} = ${x.value(request.owner)}`,
    );
    const headMatches =
      request.next === undefined
        ? `(attribute_not_exists(${queue}) OR size(${queue}) = ${x.value(0)})`
        : `${queue}[0] = ${x.value(request.next)}`;
    const noNewEvent = `${x.name('pendingVersion')} = ${x.value(request.expectPendingVersion)}`;
    const sets = [
      `${x.name('seenVersion')} = ${x.value(request.expectPendingVersion)}`,
      `${x.name('updatedAt')} = ${x.value(request.now)}`,
    ];
    // The ended turn's input goes with it; the next turn's leg reads its turn item.
    const removes = [x.name('owner'), x.name('until'), x.name('activeInput')];
    if (request.next === undefined) {
      sets.push(`${x.name('state')} = ${x.value(SessionState.idle)}`);
      removes.push(x.name('sweepAt'), x.name('sweepShard'));
    } else {
      sets.push(
        `${x.name('state')} = ${x.value(SessionState.queued)}`,
        `${x.name('activeTurnId')} = ${x.value(request.next)}`,
        `${x.name('sweepAt')} = ${x.value(request.sweepAt)}`,
        `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
      );
      removes.push(`${queue}[0]`);
    }
    if (request.progressed) sets.push(`${x.name('recoveries')} = ${x.value(0)}`);
    if (request.ttlSeconds !== undefined) sets.push(`${x.name('ttl')} = ${x.value(request.ttlSeconds)}`);
    if (request.publishedTurnId !== undefined)
      sets.push(`${x.name('publishedTurnId')} = ${x.value(request.publishedTurnId)}`);
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
      condition: allOf(holdsLease, headMatches, noNewEvent),
    });
    if (result.ok) return { ok: true };
    const current = result.old === undefined ? undefined : decodeSession(result.old, key);
    const ownWrite =
      current !== undefined &&
      current.owner === undefined &&
      current.epoch === request.epoch &&
      (request.next === undefined ? current.state === SessionState.idle : current.activeTurnId === request.next);
    return ownWrite ? { ok: true } : { ok: false, current };
  }

  async advanceTurn(key: SessionKey, request: AdvanceTurnRequest): Promise<AdvanceTurnResult> {
    const x = new Expression();
    const queue = x.name('turnQueue');
    const holdsLease = allOf(
      `${x.name('epoch')} = ${x.value(request.epoch)}`,
      `${x.name('owner')} = ${x.value(request.owner)}`,
      `${x.name('state')} = ${x.value(SessionState.running)}`,
    );
    const headMatches = `${queue}[0] = ${x.value(request.next)}`;
    const noNewEvent = `${x.name('pendingVersion')} = ${x.value(request.expectPendingVersion)}`;
    const until = x.value(request.until);
    const sets = [
      `${x.name('activeTurnId')} = ${x.value(request.next)}`,
      `${x.name('seenVersion')} = ${x.value(request.expectPendingVersion)}`,
      `${x.name('until')} = ${until}`,
      `${x.name('sweepAt')} = ${until}`,
      `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
      `${x.name('updatedAt')} = ${x.value(request.now)}`,
    ];
    if (request.progressed) sets.push(`${x.name('recoveries')} = ${x.value(0)}`);
    if (request.ttlSeconds !== undefined) sets.push(`${x.name('ttl')} = ${x.value(request.ttlSeconds)}`);
    if (request.publishedTurnId !== undefined)
      sets.push(`${x.name('publishedTurnId')} = ${x.value(request.publishedTurnId)}`);
    // The ended turn's input goes with it; the next turn's input is read from its turn item.
    const removes = [`${queue}[0]`, x.name('activeInput')];
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
      condition: allOf(holdsLease, headMatches, noNewEvent),
      returnNew: true,
    });
    if (result.ok) return { ok: true, record: decodeSession(result.value, key) };
    const current = result.old === undefined ? undefined : decodeSession(result.old, key);
    return advancedBefore(current, request) ? { ok: true, record: current! } : { ok: false, current };
  }

  async postInbox(key: SessionKey, request: PostInboxRequest): Promise<PostInboxResult> {
    const x = new Expression();
    const ids = x.name('inboxIds');
    const inbox = x.name('inbox');
    const empty = x.value([]);
    const exists = `attribute_exists(${x.name('pk')})`;
    const notFinished = `NOT ${x.name('state')} IN (${TERMINAL_SESSION_STATES.map((s) => x.value(s)).join(', ')})`;
    const fresh = `NOT contains(${ids}, ${x.value(request.item.id)})`;
    const room = `(attribute_not_exists(${ids}) OR size(${ids}) < ${x.value(request.maxPending)})`;
    const sweepAt = x.name('sweepAt');
    const sets = [
      `${inbox} = list_append(if_not_exists(${inbox}, ${empty}), ${x.value([JSON.stringify(request.item)])})`,
      `${ids} = list_append(if_not_exists(${ids}, ${empty}), ${x.value([request.item.id])})`,
      `${x.name('pendingVersion')} = ${x.name('pendingVersion')} + ${x.value(1)}`,
      `${sweepAt} = if_not_exists(${sweepAt}, ${x.value(request.sweepAt)})`,
      `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
      `${x.name('updatedAt')} = ${x.value(request.now)}`,
    ];
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')}`,
      condition: allOf(exists, notFinished, fresh, room),
      returnNew: true,
    });
    if (result.ok) return { ok: true, record: decodeSession(result.value, key), posted: true };
    const current = result.old === undefined ? undefined : decodeSession(result.old, key);
    const decision = decidePost(current, request.item.id, request.maxPending);
    if (decision === 'posted-before') return { ok: true, record: current!, posted: false };
    if (decision === 'post')
      throw new CorruptStateError(`inbox post to ${formatSessionKey(key)} refused without a reason`);
    return { ok: false, reason: decision, current };
  }

  async takeInbox(key: SessionKey, request: TakeInboxRequest): Promise<void> {
    if (request.taken.length === 0) return;
    const x = new Expression();
    const ids = x.name('inboxIds');
    const inbox = x.name('inbox');
    const conditions = [
      `${x.name('epoch')} = ${x.value(request.epoch)}`,
      `${x.name('owner')} = ${x.value(request.owner)}`,
      ...request.taken.map((t) => `${ids}[${t.index}] = ${x.value(t.id)}`),
    ];
    const removes = request.taken.flatMap((t) => [`${inbox}[${t.index}]`, `${ids}[${t.index}]`]);
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${x.name('updatedAt')} = ${x.value(this.#clock.now())} REMOVE ${removes.join(', ')}`,
      condition: allOf(...conditions),
    });
    if (result.ok) return;
    const current = result.old === undefined ? undefined : decodeSession(result.old, key);
    const ours = current?.owner === request.owner && current.epoch === request.epoch;
    // Our own retried write: the lease is still ours and none of the items is left.
    if (ours && !request.taken.some((t) => current.inbox.some((item) => item.id === t.id))) return;
    throw leaseLost(`inbox take by epoch ${request.epoch} refused`, result.old, key);
  }

  async acquire(key: SessionKey, request: AcquireRequest): Promise<AcquireResult> {
    const x = new Expression();
    const epoch = x.name('epoch');
    const owner = x.name('owner');
    const until = x.name('until');
    const state = x.name('state');
    const now = x.value(request.now);
    const epochMatches = `${epoch} = ${x.value(request.expectEpoch)}`;
    const ownerMatches =
      request.expectOwner === undefined
        ? `attribute_not_exists(${owner})`
        : `${owner} = ${x.value(request.expectOwner)}`;
    const leaseExpired = request.recovery && `${until} < ${now}`;
    const notFinished = `NOT ${state} IN (${TERMINAL_SESSION_STATES.map((s) => x.value(s)).join(', ')})`;
    const one = x.value(1);
    const newUntil = x.value(request.until);
    const sets = [
      `${owner} = ${x.value(request.owner)}`,
      `${until} = ${newUntil}`,
      `${epoch} = ${x.value(request.expectEpoch + 1)}`,
      `${state} = ${x.value(SessionState.running)}`,
      `${x.name('legs')} = ${x.name('legs')} + ${one}`,
      `${x.name('sweepAt')} = ${newUntil}`,
      `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
      `${x.name('updatedAt')} = ${now}`,
    ];
    if (request.recovery) {
      sets.push(`${x.name('recoveries')} = ${x.name('recoveries')} + ${one}`);
      const recovered = x.name('recovered');
      sets.push(`${recovered} = if_not_exists(${recovered}, ${x.value(0)}) + ${one}`);
    }
    if (request.ttlSeconds !== undefined) sets.push(`${x.name('ttl')} = ${x.value(request.ttlSeconds)}`);
    // A new holder starts without its predecessor's hand-off nonce.
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')} REMOVE ${x.name('handoff')}`,
      condition: allOf(epochMatches, ownerMatches, leaseExpired, notFinished),
      returnNew: true,
    });
    if (result.ok) return { ok: true, record: decodeSession(result.value, key) };
    const current = result.old === undefined ? undefined : decodeSession(result.old, key);
    const ownWrite = current?.owner === request.owner && current.epoch === request.expectEpoch + 1;
    return ownWrite && current ? { ok: true, record: current } : { ok: false, current };
  }

  async renew(key: SessionKey, request: RenewRequest): Promise<SessionRecord> {
    const x = new Expression();
    const holdsLease = allOf(
      `${x.name('epoch')} = ${x.value(request.epoch)}`,
      `${x.name('owner')} = ${x.value(request.owner)}`,
      `${x.name('state')} = ${x.value(SessionState.running)}`,
    );
    const until = x.value(request.until);
    const sets = [
      `${x.name('until')} = ${until}`,
      `${x.name('sweepAt')} = ${until}`,
      `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
      `${x.name('updatedAt')} = ${x.value(this.#clock.now())}`,
    ];
    if (request.progressed) sets.push(`${x.name('recoveries')} = ${x.value(0)}`);
    if (request.handoff !== undefined) sets.push(`${x.name('handoff')} = ${x.value(request.handoff)}`);
    if (request.agentVersion !== undefined) sets.push(`${x.name('agentVersion')} = ${x.value(request.agentVersion)}`);
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')}`,
      condition: holdsLease,
      returnNew: true,
    });
    if (result.ok) return decodeSession(result.value, key);
    throw leaseLost(`renew of epoch ${request.epoch} by ${request.owner} refused`, result.old, key);
  }

  async release(key: SessionKey, request: ReleaseRequest): Promise<ReleaseResult> {
    const x = new Expression();
    const holdsLease = allOf(
      `${x.name('epoch')} = ${x.value(request.epoch)}`,
      `${x.name('owner')} = ${x.value(request.owner)}`,
    );
    const noNewEvent =
      request.expectPendingVersion !== undefined &&
      `${x.name('pendingVersion')} = ${x.value(request.expectPendingVersion)}`;
    const sets = [
      `${x.name('state')} = ${x.value(request.state)}`,
      `${x.name('seenVersion')} = ${x.value(request.seenVersion)}`,
      `${x.name('updatedAt')} = ${x.value(this.#clock.now())}`,
    ];
    const removes = [x.name('owner'), x.name('until')];
    if (request.sweepAt === undefined) {
      removes.push(x.name('sweepAt'), x.name('sweepShard'));
    } else {
      sets.push(`${x.name('sweepAt')} = ${x.value(request.sweepAt)}`);
      sets.push(`${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`);
    }
    if (request.progressed) sets.push(`${x.name('recoveries')} = ${x.value(0)}`);
    if (request.ttlSeconds !== undefined) sets.push(`${x.name('ttl')} = ${x.value(request.ttlSeconds)}`);
    if (request.publishedTurnId !== undefined)
      sets.push(`${x.name('publishedTurnId')} = ${x.value(request.publishedTurnId)}`);
    // ADD inside a conditional write: an SDK retry of a committed release fails its condition, so it never counts twice.
    const add = request.tokens ? ` ADD ${x.name('tokens')} ${x.value(request.tokens)}` : '';
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}${add}`,
      condition: allOf(holdsLease, noNewEvent),
    });
    if (result.ok) return { ok: true };
    const current = result.old === undefined ? undefined : decodeSession(result.old, key);
    const ownWrite =
      current !== undefined &&
      current.owner === undefined &&
      current.epoch === request.epoch &&
      current.state === request.state &&
      current.seenVersion === request.seenVersion;
    return ownWrite ? { ok: true } : { ok: false, current };
  }

  async bump(key: SessionKey, request: BumpRequest): Promise<BumpResult> {
    const x = new Expression();
    const exists = `attribute_exists(${x.name('pk')})`;
    const notFinished = `NOT ${x.name('state')} IN (${TERMINAL_SESSION_STATES.map((s) => x.value(s)).join(', ')})`;
    const sweepAt = x.name('sweepAt');
    const sets = [
      `${x.name('pendingVersion')} = ${x.name('pendingVersion')} + ${x.value(1)}`,
      // Brought forward (a later timer is only a backstop; an early look finds the new version).
      request.sweepSoon
        ? `${sweepAt} = ${x.value(request.sweepAt)}`
        : `${sweepAt} = if_not_exists(${sweepAt}, ${x.value(request.sweepAt)})`,
      `${x.name('sweepShard')} = ${x.value(sweepShardAttr(key.id))}`,
      `${x.name('updatedAt')} = ${x.value(request.now)}`,
    ];
    if (request.cancel) sets.push(`${x.name('cancelRequested')} = ${x.value(true)}`);
    if (request.release) {
      // The first release's mark stands: a second release waits for the same one.
      const at = x.name('releaseAt');
      const timeout = x.name('releaseTimeoutMs');
      sets.push(`${at} = if_not_exists(${at}, ${x.value(request.now)})`);
      sets.push(`${timeout} = if_not_exists(${timeout}, ${x.value(request.release.timeoutMs)})`);
    }
    const result = await this.#update(key, META_SK, x, {
      update: `SET ${sets.join(', ')}`,
      condition: allOf(exists, notFinished),
      returnNew: true,
    });
    if (result.ok) return { ok: true, record: decodeSession(result.value, key) };
    if (result.old === undefined) return { ok: false, reason: 'not-found' };
    return { ok: false, reason: 'finished', current: decodeSession(result.old, key) };
  }

  /**
   * Reads the partition's keys and expiries (a projection: no payloads), then moves each item
   * expiring earlier forward, and stamps the record last. Each update is conditioned on the item still being
   * there and still expiring earlier, so nothing deleted in between comes back.
   */
  async refreshExpiry(key: SessionKey, request: RefreshExpiryRequest): Promise<number> {
    const due: string[] = [];
    let startKey: Item | undefined;
    do {
      const x = new Expression();
      const page = await this.#db.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: `${x.name('pk')} = ${x.value(pkOf(key))}`,
          ProjectionExpression: `${x.name('sk')}, ${x.name('ttl')}`,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          ...x.attributes(),
        }),
      );
      for (const item of page.Items ?? [])
        if (typeof item.ttl === 'number' && item.ttl < request.ttlSeconds && isRetainedItemSk(String(item.sk)))
          due.push(String(item.sk));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    const moveForward = (sk: string) => {
      const x = new Expression();
      const ttl = x.name('ttl');
      const newTtl = x.value(request.ttlSeconds);
      return this.#update(key, sk, x, {
        update: `SET ${ttl} = ${newTtl}`,
        condition: allOf(`attribute_exists(${x.name('pk')})`, `${ttl} < ${newTtl}`),
      });
    };
    for (let i = 0; i < due.length; i += REFRESH_CONCURRENCY)
      await Promise.all(due.slice(i, i + REFRESH_CONCURRENCY).map(moveForward));
    // The record's own expiry moves at every acquire and release; here it learns its items'.
    const x = new Expression();
    await this.#update(key, META_SK, x, {
      update: `SET ${x.name('expiryRefreshedAt')} = ${x.value(request.now)}, ${x.name('retentionS')} = ${x.value(request.retentionS)}`,
      condition: `attribute_exists(${x.name('pk')})`,
    });
    return due.length;
  }

  async append(key: SessionKey, entry: JournalEntry, ttlSeconds?: number): Promise<void> {
    const item = await encodeEntry(key, entry, this.#offload, ttlSeconds);
    const result = await this.#create(item);
    // The same writeId at this seq is our own first attempt, committed before the SDK retried.
    if (!result.ok && result.old?.writeId !== entry.writeId) throw new SeqTakenError(entry.seq);
  }

  /** The session's journal, a fork's history included (lib/adapters/fork-journal.ts). */
  async readJournal(key: SessionKey, afterSeq = 0, options?: JournalReadOptions): Promise<JournalEntry[]> {
    // Checked here as well as per page: a bad limit is a rejected read, not a throw at the call.
    journalReadLimit(options);
    return readForkedJournal((k, after, o) => this.#readOwnJournal(k, after, o), key, afterSeq, options);
  }

  /**
   * With a limit, each Query asks for what is still missing (`Limit`, which DynamoDB counts before
   * its 1 MB page cap): a page stopped by the cap goes on from its LastEvaluatedKey for the rest,
   * and no Query reads past the limit.
   */
  async #readOwnJournal(key: SessionKey, afterSeq: number, options?: JournalReadOptions): Promise<JournalEntry[]> {
    const limit = journalReadLimit(options);
    const entries: JournalEntry[] = [];
    let startKey: Item | undefined;
    do {
      const x = new Expression();
      const page = await this.#db.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: `${x.name('pk')} = ${x.value(pkOf(key))} AND ${x.name('sk')} BETWEEN ${x.value(journalSk(afterSeq + 1))} AND ${x.value(JOURNAL_SK_MAX)}`,
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
          ...(limit === undefined ? {} : { Limit: limit - entries.length }),
          ...x.attributes(),
        }),
      );
      entries.push(...(await Promise.all((page.Items ?? []).map((raw) => decodeEntry(raw, key, this.#offload)))));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined && (limit === undefined || entries.length < limit));
    return entries;
  }

  async putSnapshot(key: SessionKey, snapshot: SessionSnapshot, ttlSeconds?: number): Promise<void> {
    // Write-once: two owners folding to the same seq derive the same state; the first one stays.
    await this.#create(encodeSnapshot(key, snapshot, ttlSeconds));
  }

  async getLatestSnapshot(key: SessionKey): Promise<SessionSnapshot | undefined> {
    const x = new Expression();
    const page = await this.#db.send(
      new QueryCommand({
        TableName: this.#table,
        KeyConditionExpression: `${x.name('pk')} = ${x.value(pkOf(key))} AND ${x.name('sk')} BETWEEN ${x.value(SNAPSHOT_SK_MIN)} AND ${x.value(SNAPSHOT_SK_MAX)}`,
        ScanIndexForward: false,
        Limit: 1,
        ConsistentRead: true,
        ...x.attributes(),
      }),
    );
    const raw = page.Items?.[0];
    return raw === undefined ? undefined : decodeSnapshot(raw, key);
  }

  /**
   * Reads keys only: each key is parsed from the table's pk and sweepAt is the index's own sort
   * key, so the sweep index can be KEYS_ONLY (the cheapest: the index is written on every renew).
   */
  async findDue(shard: number, now: number, limit: number): Promise<DueSession[]> {
    const { sweep } = SESSION_TABLE.indexes;
    const x = new Expression();
    const page = await this.#db.send(
      new QueryCommand({
        TableName: this.#table,
        IndexName: sweep.name,
        KeyConditionExpression: `${x.name(sweep.partitionKey)} = ${x.value(String(shard))} AND ${x.name(sweep.sortKey)} < ${x.value(now)}`,
        Limit: limit,
        ...x.attributes(),
      }),
    );
    return (page.Items ?? []).map((item) => ({ key: this.#keyOf(item), sweepAt: Number(item[sweep.sortKey]) }));
  }

  /** The bySessionId index gives the key (eventually consistent); the record is then read consistently. */
  async findSession(sessionId: string): Promise<SessionRecord | undefined> {
    const { bySessionId } = SESSION_TABLE.indexes;
    const x = new Expression();
    const page = await this.#db.send(
      new QueryCommand({
        TableName: this.#table,
        IndexName: bySessionId.name,
        KeyConditionExpression: `${x.name(bySessionId.partitionKey)} = ${x.value(sessionId)}`,
        Limit: 1,
        ...x.attributes(),
      }),
    );
    const first = page.Items?.[0];
    return first === undefined ? undefined : this.getSession(this.#keyOf(first));
  }

  /** A table scan filtered to session records: for the CLI and operators, never the runtime. */
  async listSessions(options: { state?: SessionState | undefined; limit?: number | undefined } = {}) {
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    const records: SessionRecord[] = [];
    let startKey: Item | undefined;
    do {
      const x = new Expression();
      const page = await this.#db.send(
        new ScanCommand({
          TableName: this.#table,
          FilterExpression: allOf(
            `${x.name('sk')} = ${x.value(META_SK)}`,
            options.state !== undefined && `${x.name('state')} = ${x.value(options.state)}`,
          ),
          ExclusiveStartKey: startKey,
          ...x.attributes(),
        }),
      );
      for (const item of page.Items ?? []) records.push(decodeSession(item));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined && records.length < limit);
    return records.sort((a, b) => b.createdAt - a.createdAt).slice(0, limit);
  }

  async #get(key: SessionKey, sk: string): Promise<Item | undefined> {
    const { Item } = await this.#db.send(
      new GetCommand({ TableName: this.#table, Key: { pk: pkOf(key), sk }, ConsistentRead: true }),
    );
    return Item;
  }

  /**
   * A page from the byTenant index, newest first. State and agent are filters on the projected
   * attributes, so a rare filter may read several index pages: at most LIST_QUERY_ROUNDS, after
   * which the page comes back short with a cursor to go on from.
   */
  async querySessions(query: SessionQuery): Promise<SessionPage> {
    const { byTenant } = SESSION_TABLE.indexes;
    const after = query.cursor === undefined ? undefined : decodeListCursor(query.cursor, query.tenant);
    let startKey: Item | undefined =
      after === undefined ? undefined : { tenant: query.tenant, createdAt: after.createdAt, pk: after.pk, sk: META_SK };
    const filtered = query.agent !== undefined || query.state !== undefined;
    const sessions: SessionSummary[] = [];
    for (let round = 0; round < LIST_QUERY_ROUNDS; round++) {
      const x = new Expression();
      const created = x.name(byTenant.sortKey);
      const from = query.createdFrom ?? 0;
      const to = query.createdTo ?? Number.MAX_SAFE_INTEGER;
      const page = await this.#db.send(
        new QueryCommand({
          TableName: this.#table,
          IndexName: byTenant.name,
          KeyConditionExpression: `${x.name(byTenant.partitionKey)} = ${x.value(query.tenant)} AND ${created} BETWEEN ${x.value(from)} AND ${x.value(to)}`,
          FilterExpression:
            allOf(
              query.agent !== undefined && `${x.name('agent')} = ${x.value(query.agent)}`,
              query.state !== undefined && `${x.name('state')} = ${x.value(query.state)}`,
            ) || undefined,
          ScanIndexForward: false,
          Limit: filtered ? Math.max(query.limit, FILTERED_QUERY_LIMIT) : query.limit - sessions.length + 1,
          ExclusiveStartKey: startKey,
          ...x.attributes(),
        }),
      );
      for (const item of page.Items ?? []) {
        if (sessions.length === query.limit)
          return { sessions, cursor: encodeListCursor(sessions.at(-1) as SessionSummary) };
        sessions.push(decodeSummary(item));
      }
      startKey = page.LastEvaluatedKey;
      if (startKey === undefined) return { sessions };
    }
    const last = sessions.at(-1);
    if (last !== undefined) return { sessions, cursor: encodeListCursor(last) };
    // Nothing matched in the rounds read: go on from where the index stopped.
    const stop = startKey as Item;
    return { sessions, cursor: encodeListCursor({ key: this.#keyOf(stop), createdAt: Number(stop.createdAt) }) };
  }

  /**
   * A conditional UpdateItem on one item of the session: the one shape of every fenced write. A
   * failed condition answers with the item as it was (ALL_OLD); `returnNew` answers the item as written.
   */
  #update(
    key: SessionKey,
    sk: string,
    x: Expression,
    write: { readonly update: string; readonly condition: string; readonly returnNew?: boolean },
  ): Promise<Conditional<Item | undefined>> {
    return conditional(async () => {
      const { Attributes } = await this.#db.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: { pk: pkOf(key), sk },
          UpdateExpression: write.update,
          ConditionExpression: write.condition,
          ...(write.returnNew ? { ReturnValues: 'ALL_NEW' as const } : {}),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...x.attributes(),
        }),
      );
      return Attributes;
    });
  }

  /** Puts an item only where its key is free; on refusal, ALL_OLD tells whose item is there. */
  #create(item: Item): Promise<Conditional<unknown>> {
    const x = new Expression();
    const keyFree = `attribute_not_exists(${x.name(SESSION_TABLE.sortKey)})`;
    return conditional(() =>
      this.#db.send(
        new PutCommand({
          TableName: this.#table,
          Item: item,
          ConditionExpression: keyFree,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...x.attributes(),
        }),
      ),
    );
  }

  #keyOf(item: Item): SessionKey {
    const key = typeof item.pk === 'string' ? keyOfPk(item.pk) : undefined;
    if (key === undefined) throw new CorruptStateError(`index item with an invalid session key: ${String(item.pk)}`);
    return key;
  }
}

/** A LeaseLostError that says who holds the lease now (from the item as the failed write found it). */
function leaseLost(message: string, old: Item | undefined, key: SessionKey): LeaseLostError {
  if (old === undefined) return new LeaseLostError(`${message}: session ${formatSessionKey(key)} does not exist`);
  const current = decodeSession(old, key);
  return new LeaseLostError(message, { owner: current.owner, until: current.until, epoch: current.epoch });
}
