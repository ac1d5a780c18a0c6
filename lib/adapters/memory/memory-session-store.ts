import { CorruptStateError, LeaseLostError, SeqTakenError } from '../../core/errors.ts';
import { formatSessionKey, type SessionKey } from '../../core/ids.ts';
import { steerItem } from '../../core/inbox.ts';
import type { JournalEntry } from '../../core/journal.ts';
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
  journalSk,
  keyOfPk,
  META_SK,
  newSessionItem,
  pkOf,
  sweepShardAttr,
  turnItemFinished,
  turnSk,
} from '../session-item-codec.ts';

/** The store operations that write. */
export type StoreWrite =
  | 'createSession'
  | 'putTurn'
  | 'setTurnOutcome'
  | 'acquire'
  | 'renew'
  | 'release'
  | 'bump'
  | 'append'
  | 'enqueueTurn'
  | 'endTurn'
  | 'advanceTurn'
  | 'postInbox'
  | 'takeInbox'
  | 'refreshExpiry';

/**
 * A fault for the next write of one operation:
 * - `fail`: nothing is written and the call throws (a throttle, a 5xx the SDK gave up on);
 * - `lose-response`: the write commits, then the call throws (the response was lost);
 * - `retry-after-commit`: the write commits, the response is lost and the request is sent again,
 *   as the SDK does — the caller sees the answer to the retry, which must recognise its own write.
 */
export type WriteFault =
  | { readonly kind: 'fail'; readonly error?: Error | undefined }
  | { readonly kind: 'lose-response'; readonly error?: Error | undefined }
  | { readonly kind: 'retry-after-commit' };

export interface MemorySessionStoreOptions {
  readonly blobs?: BlobStore | undefined;
  readonly offloadThresholdBytes?: number | undefined;
  /** Stamps `updatedAt` on writes whose request carries no time. */
  readonly clock?: Clock | undefined;
}

type Item = Record<string, unknown>;

/** The fields of a raw session item that conditions read (decoding validates the rest). */
interface MetaView {
  readonly state?: SessionState;
  readonly owner?: string;
  readonly until?: number;
  readonly epoch?: number;
  readonly pendingVersion?: number;
}

/** DynamoDB's item size limit: 400 KB, attribute names and values together. */
export const MAX_ITEM_BYTES = 400 * 1024;

/** An item's size as DynamoDB counts it, closely enough: names plus values (strings as UTF-8, numbers as text). */
function itemBytes(item: Item): number {
  return Object.entries(item).reduce(
    (total, [name, value]) =>
      total +
      Buffer.byteLength(name) +
      Buffer.byteLength(typeof value === 'string' ? value : (JSON.stringify(value) ?? '')),
    0,
  );
}

/** An error like the SDK's for a 5xx its retries gave up on, so callers exercise their infrastructure paths. */
function transientError(operation: StoreWrite, what: string): Error {
  return Object.assign(new Error(`injected fault: ${operation} ${what}`), {
    name: 'InjectedTransientError',
    $metadata: { httpStatusCode: 500 },
  });
}

/**
 * The session store in memory, for fast unit tests of the runtime. It stores the same items as
 * the DynamoDB store (one codec), applies the same conditions atomically, and adds test seams:
 * stale reads (DynamoDB's eventual consistency), injected write faults, a hook before each write,
 * raw item access for tampering, and write counters.
 * @example const store = new MemorySessionStore({ clock }); store.injectFault('append', { kind: 'retry-after-commit' });
 */
export class MemorySessionStore implements SessionStore {
  /**
   * When above 0, getSession and readJournal answer as they would have `staleReadLag` writes ago
   * (the record as it was; the journal without its last appends) — real DynamoDB without
   * ConsistentRead. Set it back to 0 for strongly consistent reads.
   */
  staleReadLag = 0;
  /** Awaited before every write: a test can pause a writer here (e.g. past its lease). */
  beforeWrite: ((operation: StoreWrite, key: SessionKey) => void | Promise<void>) | undefined;
  /** Write requests by operation. A refused conditional write counts too: DynamoDB bills it as a write. */
  readonly writes: Record<StoreWrite, number> = {
    createSession: 0,
    putTurn: 0,
    setTurnOutcome: 0,
    acquire: 0,
    renew: 0,
    release: 0,
    bump: 0,
    append: 0,
    enqueueTurn: 0,
    endTurn: 0,
    advanceTurn: 0,
    postInbox: 0,
    takeInbox: 0,
    refreshExpiry: 0,
  };
  /** Bytes of journal items written (attribute values as stored), for cost-per-step checks. */
  journalBytesWritten = 0;

  readonly #items = new Map<string, Map<string, Item>>();
  /** Every version of each session item, oldest first (undefined before it existed). */
  readonly #metaHistory = new Map<string, Item[]>();
  /** Journal sort keys of each session in append order, for stale journal reads. */
  readonly #appendOrder = new Map<string, string[]>();
  readonly #faults = new Map<StoreWrite, WriteFault[]>();
  readonly #offload: PayloadOffload;
  readonly #clock: Clock;

  constructor(options: MemorySessionStoreOptions = {}) {
    this.#offload = new PayloadOffload({ blobs: options.blobs, thresholdBytes: options.offloadThresholdBytes });
    this.#clock = options.clock ?? systemClock;
  }

  /** Arms a one-shot fault for the next write of `operation` (faults queue up in order). */
  injectFault(operation: StoreWrite, fault: WriteFault): void {
    const queue = this.#faults.get(operation) ?? [];
    queue.push(fault);
    this.#faults.set(operation, queue);
  }

  /** The raw item at (key, sk) — `META`, `T#{turnId}` or `journalSk(seq)` — as stored. */
  rawItem(key: SessionKey, sk: string): Item | undefined {
    const item = this.#items.get(pkOf(key))?.get(sk);
    return item === undefined ? undefined : { ...item };
  }

  /**
   * Replaces (or with undefined, deletes) a raw item behind the store's back, as a tamperer
   * would. The item's pk and sk are set to its place, as DynamoDB's key attributes would be.
   */
  putRawItem(key: SessionKey, sk: string, item: Item | undefined): void {
    const pk = pkOf(key);
    const partition = this.#items.get(pk) ?? new Map<string, Item>();
    if (item === undefined) partition.delete(sk);
    else partition.set(sk, { ...item, pk, sk });
    this.#items.set(pk, partition);
  }

  /** The sort keys of every item a session's partition holds (META, turns, journal, snapshots), in key order. */
  sortKeys(key: SessionKey): string[] {
    return [...(this.#items.get(pkOf(key))?.keys() ?? [])].sort();
  }

  /**
   * Deletes every item, records included, whose `ttl` (epoch s) is before `nowSeconds`, as
   * DynamoDB's TTL does (there, lazily, up to days later): a test decides the moment, the
   * earliest one DynamoDB allows included. Returns how many items it deleted.
   */
  expireItems(nowSeconds: number): number {
    let deleted = 0;
    for (const [pk, partition] of this.#items) {
      for (const [sk, item] of partition) {
        if (typeof item.ttl !== 'number' || item.ttl >= nowSeconds) continue;
        partition.delete(sk);
        if (sk === META_SK) this.#metaHistory.delete(pk);
        deleted++;
      }
      if (partition.size === 0) this.#items.delete(pk);
    }
    return deleted;
  }

  async createSession(session: NewSession): Promise<{ created: boolean; record: SessionRecord }> {
    const item = newSessionItem(session);
    return this.#write('createSession', session.key, () => {
      const old = this.#meta(session.key);
      if (old !== undefined) return { created: isOwnCreate(old, item), record: decodeSession(old, session.key) };
      this.#setMeta(session.key, item);
      return { created: true, record: decodeSession(item, session.key) };
    });
  }

  getSessions(keys: readonly SessionKey[]): Promise<(SessionRecord | undefined)[]> {
    return Promise.all(keys.map((key) => this.getSession(key)));
  }

  getTurns(reads: readonly TurnRead[]): Promise<(TurnRecord | undefined)[]> {
    return Promise.all(reads.map((read) => this.getTurn(read.key, read.turnId)));
  }

  async getSession(key: SessionKey): Promise<SessionRecord | undefined> {
    const history = this.#metaHistory.get(pkOf(key)) ?? [];
    const item = this.staleReadLag > 0 ? history[history.length - 1 - this.staleReadLag] : this.#meta(key);
    return item === undefined ? undefined : decodeSession(item, key);
  }

  async putTurn(
    key: SessionKey,
    turn: TurnRecord,
    ttlSeconds?: number,
  ): Promise<{ created: boolean; turn: TurnRecord }> {
    const item = await encodeTurn(key, turn, this.#offload, ttlSeconds);
    const outcome = await this.#write('putTurn', key, () => {
      const old = this.#item(key, item.sk);
      if (old !== undefined) return { created: isOwnCreate(old, item), raw: old };
      this.#put(key, item.sk, item);
      return { created: true, raw: item as Item };
    });
    return { created: outcome.created, turn: await decodeTurn(outcome.raw, key, this.#offload) };
  }

  async getTurn(key: SessionKey, turnId: string): Promise<TurnRecord | undefined> {
    const item = this.#item(key, turnSk(turnId));
    return item === undefined ? undefined : decodeTurn(item, key, this.#offload);
  }

  async setTurnOutcome(key: SessionKey, turnId: string, outcome: TurnOutcome): Promise<TurnOutcome> {
    const attributes = await encodeOutcome(key, turnId, outcome, this.#offload);
    const old = await this.#write('setTurnOutcome', key, () => {
      const current = this.#item(key, turnSk(turnId));
      if (current === undefined || current.outcome !== undefined || current.outcomeBlob !== undefined) return current;
      this.#put(key, turnSk(turnId), { ...current, ...attributes });
      return 'written' as const;
    });
    if (old === 'written') return outcome;
    if (old === undefined) {
      throw new CorruptStateError(`outcome for turn ${turnId} of ${formatSessionKey(key)}, which does not exist`);
    }
    const first = (await decodeTurn(old, key, this.#offload)).outcome;
    if (first === undefined)
      throw new CorruptStateError(`turn ${turnId} of ${formatSessionKey(key)} refused an outcome`);
    return first;
  }

  async listTurns(key: SessionKey): Promise<TurnRecord[]> {
    const partition = this.#items.get(pkOf(key));
    const items = [...(partition?.entries() ?? [])].filter(([sk]) => sk.startsWith('T#')).map(([, item]) => item);
    const turns = await Promise.all(items.map((item) => decodeTurn(item, key, this.#offload)));
    return turns.sort((a, b) => a.createdAt - b.createdAt);
  }

  async enqueueTurn(key: SessionKey, request: EnqueueTurnRequest): Promise<EnqueueTurnResult> {
    return this.#write('enqueueTurn', key, (): EnqueueTurnResult => {
      const old = this.#meta(key);
      const record = old === undefined ? undefined : decodeSession(old, key);
      const turn = this.#item(key, turnSk(request.turnId));
      if (record !== undefined && turn === undefined)
        throw new CorruptStateError(
          `turn ${request.turnId} of ${formatSessionKey(key)} was not put before its enqueue`,
        );
      const decision = decideEnqueue(record, turnItemFinished(turn), request);
      if (decision === 'accepted-before') return { ok: true, record: record!, queued: false };
      if (decision !== 'enqueue') return { ok: false, reason: decision, current: record };
      const idle = old!.owner === undefined && record!.state === SessionState.idle;
      // An idle session's previous turn has ended and published: the new turn becomes active at once.
      const activate = idle && record!.turnQueue.length === 0;
      const steered = request.steer === true && !idle && record!.activeTurnId !== undefined;
      const steer = steerItem(request.turnId);
      const next: Item = {
        ...old,
        ...(activate
          ? {
              activeTurnId: request.turnId,
              ...(request.activeInput === undefined ? {} : { activeInput: encodeActiveInput(request.activeInput) }),
            }
          : {
              turnQueue: steered ? [request.turnId, ...record!.turnQueue] : [...record!.turnQueue, request.turnId],
            }),
        ...(steered
          ? {
              inbox: [...((old!.inbox as string[] | undefined) ?? []), JSON.stringify(steer)],
              inboxIds: [...((old!.inboxIds as string[] | undefined) ?? []), steer.id],
            }
          : {}),
        lastTurnId: request.turnId,
        pendingVersion: Number(old!.pendingVersion) + 1,
        updatedAt: request.now,
        ...(idle
          ? { state: SessionState.queued, sweepAt: request.sweepAt, sweepShard: sweepShardAttr(key.id) }
          : { sweepAt: old!.sweepAt ?? request.sweepAt, sweepShard: sweepShardAttr(key.id) }),
      };
      this.#setMeta(key, next);
      return { ok: true, record: decodeSession(next, key), queued: true, steered };
    });
  }

  async endTurn(key: SessionKey, request: EndTurnRequest): Promise<ReleaseResult> {
    return this.#write('endTurn', key, (): ReleaseResult => {
      const old = this.#meta(key);
      const record = old === undefined ? undefined : decodeSession(old, key);
      const holdsLease = record?.epoch === request.epoch && record.owner === request.owner;
      const headMatches = record?.turnQueue[0] === request.next;
      const noNewEvent = record?.pendingVersion === request.expectPendingVersion;
      if (old === undefined || !holdsLease || !headMatches || !noNewEvent) {
        const ownWrite =
          record !== undefined &&
          record.owner === undefined &&
          record.epoch === request.epoch &&
          (request.next === undefined ? record.state === SessionState.idle : record.activeTurnId === request.next);
        return ownWrite ? { ok: true } : { ok: false, current: record };
      }
      const {
        owner: _owner,
        until: _until,
        sweepAt: _sweepAt,
        sweepShard: _sweepShard,
        activeInput: _activeInput,
        ...kept
      } = old;
      const next: Item = {
        ...kept,
        seenVersion: request.expectPendingVersion,
        updatedAt: request.now,
        ...(request.next === undefined
          ? { state: SessionState.idle }
          : {
              state: SessionState.queued,
              activeTurnId: request.next,
              turnQueue: record.turnQueue.slice(1),
              sweepAt: request.sweepAt,
              sweepShard: sweepShardAttr(key.id),
            }),
        ...(request.progressed ? { recoveries: 0 } : {}),
        ...(request.ttlSeconds === undefined ? {} : { ttl: request.ttlSeconds }),
        ...(request.publishedTurnId === undefined ? {} : { publishedTurnId: request.publishedTurnId }),
      };
      this.#setMeta(key, next);
      return { ok: true };
    });
  }

  async advanceTurn(key: SessionKey, request: AdvanceTurnRequest): Promise<AdvanceTurnResult> {
    return this.#write('advanceTurn', key, (): AdvanceTurnResult => {
      const old = this.#meta(key);
      const record = old === undefined ? undefined : decodeSession(old, key);
      const holdsLease =
        record?.epoch === request.epoch && record.owner === request.owner && record.state === SessionState.running;
      const headMatches = record?.turnQueue[0] === request.next;
      const noNewEvent = record?.pendingVersion === request.expectPendingVersion;
      if (old === undefined || record === undefined || !holdsLease || !headMatches || !noNewEvent) {
        return advancedBefore(record, request) ? { ok: true, record: record! } : { ok: false, current: record };
      }
      const { activeInput: _activeInput, ...kept } = old;
      const next: Item = {
        ...kept,
        activeTurnId: request.next,
        turnQueue: record.turnQueue.slice(1),
        seenVersion: request.expectPendingVersion,
        until: request.until,
        sweepAt: request.until,
        sweepShard: sweepShardAttr(key.id),
        updatedAt: request.now,
        ...(request.progressed ? { recoveries: 0 } : {}),
        ...(request.ttlSeconds === undefined ? {} : { ttl: request.ttlSeconds }),
        ...(request.publishedTurnId === undefined ? {} : { publishedTurnId: request.publishedTurnId }),
      };
      this.#setMeta(key, next);
      return { ok: true, record: decodeSession(next, key) };
    });
  }

  async postInbox(key: SessionKey, request: PostInboxRequest): Promise<PostInboxResult> {
    return this.#write('postInbox', key, (): PostInboxResult => {
      const old = this.#meta(key);
      const record = old === undefined ? undefined : decodeSession(old, key);
      const decision = decidePost(record, request.item.id, request.maxPending);
      if (decision === 'posted-before') return { ok: true, record: record!, posted: false };
      if (decision !== 'post') return { ok: false, reason: decision, current: record };
      const next: Item = {
        ...old,
        inbox: [...((old!.inbox as string[] | undefined) ?? []), JSON.stringify(request.item)],
        inboxIds: [...((old!.inboxIds as string[] | undefined) ?? []), request.item.id],
        pendingVersion: Number(old!.pendingVersion) + 1,
        sweepAt: old!.sweepAt ?? request.sweepAt,
        sweepShard: sweepShardAttr(key.id),
        updatedAt: request.now,
      };
      this.#setMeta(key, next);
      return { ok: true, record: decodeSession(next, key), posted: true };
    });
  }

  async takeInbox(key: SessionKey, request: TakeInboxRequest): Promise<void> {
    const refused = this.#write('takeInbox', key, () => {
      const old = this.#meta(key);
      const ids = (old?.inboxIds as string[] | undefined) ?? [];
      const holdsLease = old?.epoch === request.epoch && old.owner === request.owner;
      if (!holdsLease) return true;
      if (!request.taken.every((t) => ids[t.index] === t.id)) {
        // Already taken (our own retried write) when none of the ids is left.
        return request.taken.some((t) => ids.includes(t.id));
      }
      const drop = new Set(request.taken.map((t) => t.index));
      const inbox = ((old.inbox as string[] | undefined) ?? []).filter((_, i) => !drop.has(i));
      this.#setMeta(key, { ...old, inbox, inboxIds: ids.filter((_, i) => !drop.has(i)), updatedAt: this.#clock.now() });
      return false;
    });
    if (await refused) throw new LeaseLostError(`inbox take by epoch ${request.epoch} refused`);
  }

  async acquire(key: SessionKey, request: AcquireRequest): Promise<AcquireResult> {
    return this.#write('acquire', key, () => {
      const old = this.#meta(key);
      const view = old as MetaView | undefined;
      const epochMatches = view?.epoch === request.expectEpoch;
      const ownerMatches = view?.owner === request.expectOwner;
      const leaseExpired = !request.recovery || (view?.until !== undefined && view.until < request.now);
      const notFinished = view?.state !== undefined && !TERMINAL_SESSION_STATES.includes(view.state);
      if (old === undefined || !(epochMatches && ownerMatches && leaseExpired && notFinished)) {
        const current = old === undefined ? undefined : decodeSession(old, key);
        const ownWrite = current?.owner === request.owner && current.epoch === request.expectEpoch + 1;
        return ownWrite && current ? { ok: true, record: current } : { ok: false, current };
      }
      const { handoff: _predecessors, ...rest } = old;
      const next: Item = {
        ...rest,
        owner: request.owner,
        until: request.until,
        epoch: request.expectEpoch + 1,
        state: SessionState.running,
        legs: Number(old.legs) + 1,
        sweepAt: request.until,
        sweepShard: sweepShardAttr(key.id),
        updatedAt: request.now,
        ...(request.recovery
          ? { recoveries: Number(old.recoveries) + 1, recovered: Number(old.recovered ?? 0) + 1 }
          : {}),
        ...(request.ttlSeconds === undefined ? {} : { ttl: request.ttlSeconds }),
      };
      this.#setMeta(key, next);
      return { ok: true, record: decodeSession(next, key) };
    });
  }

  async renew(key: SessionKey, request: RenewRequest): Promise<SessionRecord> {
    return this.#write('renew', key, () => {
      const old = this.#meta(key);
      const view = old as MetaView | undefined;
      const holdsLease =
        view?.epoch === request.epoch && view.owner === request.owner && view.state === SessionState.running;
      if (old === undefined || !holdsLease) {
        if (old === undefined)
          throw new LeaseLostError(`renew refused: session ${formatSessionKey(key)} does not exist`);
        const current = decodeSession(old, key);
        throw new LeaseLostError(`renew of epoch ${request.epoch} by ${request.owner} refused`, {
          owner: current.owner,
          until: current.until,
          epoch: current.epoch,
        });
      }
      const next: Item = {
        ...old,
        until: request.until,
        sweepAt: request.until,
        sweepShard: sweepShardAttr(key.id),
        updatedAt: this.#clock.now(),
        ...(request.progressed ? { recoveries: 0 } : {}),
        ...(request.handoff === undefined ? {} : { handoff: request.handoff }),
        ...(request.agentVersion === undefined ? {} : { agentVersion: request.agentVersion }),
      };
      this.#setMeta(key, next);
      return decodeSession(next, key);
    });
  }

  async release(key: SessionKey, request: ReleaseRequest): Promise<ReleaseResult> {
    return this.#write('release', key, (): ReleaseResult => {
      const old = this.#meta(key);
      const view = old as MetaView | undefined;
      const holdsLease = view?.epoch === request.epoch && view.owner === request.owner;
      const noNewEvent =
        request.expectPendingVersion === undefined || view?.pendingVersion === request.expectPendingVersion;
      if (old === undefined || !(holdsLease && noNewEvent)) {
        const current = old === undefined ? undefined : decodeSession(old, key);
        const ownWrite =
          current !== undefined &&
          current.owner === undefined &&
          current.epoch === request.epoch &&
          current.state === request.state &&
          current.seenVersion === request.seenVersion;
        return ownWrite ? { ok: true } : { ok: false, current };
      }
      const { owner: _owner, until: _until, sweepAt: _sweepAt, sweepShard: _sweepShard, ...kept } = old;
      const next: Item = {
        ...kept,
        state: request.state,
        seenVersion: request.seenVersion,
        updatedAt: this.#clock.now(),
        ...(request.sweepAt === undefined ? {} : { sweepAt: request.sweepAt, sweepShard: sweepShardAttr(key.id) }),
        ...(request.progressed ? { recoveries: 0 } : {}),
        ...(request.ttlSeconds === undefined ? {} : { ttl: request.ttlSeconds }),
        ...(request.tokens ? { tokens: Number(old.tokens ?? 0) + request.tokens } : {}),
        ...(request.publishedTurnId === undefined ? {} : { publishedTurnId: request.publishedTurnId }),
      };
      this.#setMeta(key, next);
      return { ok: true };
    });
  }

  async bump(key: SessionKey, request: BumpRequest): Promise<BumpResult> {
    return this.#write('bump', key, (): BumpResult => {
      const old = this.#meta(key);
      if (old === undefined) return { ok: false, reason: 'not-found' };
      const view = old as MetaView;
      if (view.state === undefined || TERMINAL_SESSION_STATES.includes(view.state)) {
        return { ok: false, reason: 'finished', current: decodeSession(old, key) };
      }
      const next: Item = {
        ...old,
        pendingVersion: Number(old.pendingVersion) + 1,
        sweepAt: request.sweepSoon ? request.sweepAt : (old.sweepAt ?? request.sweepAt),
        sweepShard: sweepShardAttr(key.id),
        updatedAt: request.now,
        ...(request.cancel ? { cancelRequested: true } : {}),
        ...(request.release && old.releaseAt === undefined
          ? { releaseAt: request.now, releaseTimeoutMs: request.release.timeoutMs }
          : {}),
      };
      this.#setMeta(key, next);
      return { ok: true, record: decodeSession(next, key) };
    });
  }

  async refreshExpiry(key: SessionKey, request: RefreshExpiryRequest): Promise<number> {
    return this.#write('refreshExpiry', key, () => {
      const partition = this.#items.get(pkOf(key));
      if (partition === undefined) return 0;
      let moved = 0;
      for (const [sk, item] of partition) {
        if (!isRetainedItemSk(sk) || typeof item.ttl !== 'number' || item.ttl >= request.ttlSeconds) continue;
        partition.set(sk, { ...item, ttl: request.ttlSeconds });
        moved++;
      }
      // The record's own expiry moves at every acquire and release; here it learns its items'. A
      // record gone (an original whose items a fork still reads) leaves only items to move, as in DynamoDB.
      const meta = this.#meta(key);
      if (meta !== undefined)
        this.#setMeta(key, { ...meta, expiryRefreshedAt: request.now, retentionS: request.retentionS });
      return moved;
    });
  }

  async append(key: SessionKey, entry: JournalEntry, ttlSeconds?: number): Promise<void> {
    const item = await encodeEntry(key, entry, this.#offload, ttlSeconds);
    const taken = await this.#write('append', key, () => {
      const old = this.#item(key, item.sk);
      if (old !== undefined) return old.writeId !== entry.writeId;
      this.#put(key, item.sk, item);
      const order = this.#appendOrder.get(item.pk) ?? [];
      order.push(item.sk);
      this.#appendOrder.set(item.pk, order);
      this.journalBytesWritten += Buffer.byteLength(JSON.stringify(item));
      return false;
    });
    if (taken) throw new SeqTakenError(entry.seq);
  }

  /** The session's journal, a fork's history included (lib/adapters/fork-journal.ts). */
  async readJournal(key: SessionKey, afterSeq = 0, options?: JournalReadOptions): Promise<JournalEntry[]> {
    // Checked here as well as per page: a bad limit is a rejected read, not a throw at the call.
    journalReadLimit(options);
    return readForkedJournal((k, after, o) => this.#readOwnJournal(k, after, o), key, afterSeq, options);
  }

  async #readOwnJournal(key: SessionKey, afterSeq: number, options?: JournalReadOptions): Promise<JournalEntry[]> {
    const limit = journalReadLimit(options);
    const partition = this.#items.get(pkOf(key));
    if (partition === undefined) return [];
    const from = journalSk(afterSeq + 1);
    const hidden = new Set(
      this.staleReadLag > 0 ? (this.#appendOrder.get(pkOf(key)) ?? []).slice(-this.staleReadLag) : [],
    );
    const sks = [...partition.keys()].filter((sk) => sk.startsWith('J#') && sk >= from && !hidden.has(sk)).sort();
    // Only the page is decoded (and its offloaded payloads fetched), as DynamoDB reads only the page.
    return Promise.all(sks.slice(0, limit).map((sk) => decodeEntry(partition.get(sk), key, this.#offload)));
  }

  async putSnapshot(key: SessionKey, snapshot: SessionSnapshot, ttlSeconds?: number): Promise<void> {
    const item = encodeSnapshot(key, snapshot, ttlSeconds);
    if (this.#item(key, item.sk) === undefined) this.#put(key, item.sk, item);
  }

  async getLatestSnapshot(key: SessionKey): Promise<SessionSnapshot | undefined> {
    const partition = this.#items.get(pkOf(key));
    const latest = [...(partition?.keys() ?? [])]
      .filter((sk) => sk.startsWith('SNAP#'))
      .sort()
      .at(-1);
    return latest === undefined ? undefined : decodeSnapshot(partition?.get(latest), key);
  }

  async findDue(shard: number, now: number, limit: number): Promise<DueSession[]> {
    return this.#metaItems()
      .filter((item) => item.sweepShard === String(shard) && typeof item.sweepAt === 'number' && item.sweepAt < now)
      .sort((a, b) => Number(a.sweepAt) - Number(b.sweepAt))
      .slice(0, limit)
      .map((item) => ({ key: keyOfPk(String(item.pk)) as SessionKey, sweepAt: Number(item.sweepAt) }));
  }

  async findSession(sessionId: string): Promise<SessionRecord | undefined> {
    const item = this.#metaItems().find((candidate) => candidate.sid === sessionId);
    return item === undefined ? undefined : decodeSession(item);
  }

  async listSessions(options: { state?: SessionState | undefined; limit?: number | undefined } = {}) {
    return this.#metaItems()
      .filter((item) => options.state === undefined || item.state === options.state)
      .map((item) => decodeSession(item))
      .sort((a, b) => b.createdAt - a.createdAt)
      .slice(0, options.limit ?? 100);
  }

  /** The same order and cursor as the byTenant index: createdAt, then pk, both descending. */
  async querySessions(query: SessionQuery): Promise<SessionPage> {
    const after = query.cursor === undefined ? undefined : decodeListCursor(query.cursor, query.tenant);
    const before = (item: Item) =>
      after === undefined ||
      Number(item.createdAt) < after.createdAt ||
      (Number(item.createdAt) === after.createdAt && String(item.pk) < after.pk);
    const matching = this.#metaItems()
      .filter(
        (item) =>
          item.tenant === query.tenant &&
          (query.agent === undefined || item.agent === query.agent) &&
          (query.state === undefined || item.state === query.state) &&
          (query.createdFrom === undefined || Number(item.createdAt) >= query.createdFrom) &&
          (query.createdTo === undefined || Number(item.createdAt) <= query.createdTo) &&
          before(item),
      )
      .sort((a, b) => Number(b.createdAt) - Number(a.createdAt) || (String(a.pk) < String(b.pk) ? 1 : -1));
    const sessions = matching.slice(0, query.limit).map((item) => decodeSummary(item));
    const last = sessions.at(-1);
    return { sessions, ...(matching.length > query.limit && last ? { cursor: encodeListCursor(last) } : {}) };
  }

  /** Runs one write: the hook, then the armed fault, then `apply` — synchronous, hence atomic. */
  async #write<T>(operation: StoreWrite, key: SessionKey, apply: () => T): Promise<T> {
    await this.beforeWrite?.(operation, key);
    const fault = this.#faults.get(operation)?.shift();
    if (fault?.kind === 'fail') throw fault.error ?? transientError(operation, 'failed before it committed');
    const result = apply();
    this.writes[operation]++;
    if (fault?.kind === 'lose-response') throw fault.error ?? transientError(operation, 'committed, response lost');
    if (fault?.kind !== 'retry-after-commit') return result;
    this.writes[operation]++;
    return apply();
  }

  #item(key: SessionKey, sk: string): Item | undefined {
    return this.#items.get(pkOf(key))?.get(sk);
  }

  #meta(key: SessionKey): Item | undefined {
    return this.#item(key, META_SK);
  }

  #put(key: SessionKey, sk: string, item: Item): void {
    // DynamoDB refuses an item over 400 KB; the twin does too, so a test cannot pass on what the
    // real table would refuse.
    const bytes = itemBytes(item);
    if (bytes > MAX_ITEM_BYTES)
      throw Object.assign(new Error(`Item size has exceeded the maximum allowed size (${bytes} bytes at ${sk})`), {
        name: 'ValidationException',
      });
    const pk = pkOf(key);
    const partition = this.#items.get(pk) ?? new Map<string, Item>();
    partition.set(sk, { ...item });
    this.#items.set(pk, partition);
  }

  #setMeta(key: SessionKey, item: Item): void {
    this.#put(key, META_SK, item);
    const history = this.#metaHistory.get(pkOf(key)) ?? [];
    history.push({ ...item });
    this.#metaHistory.set(pkOf(key), history);
  }

  #metaItems(): Item[] {
    return [...this.#items.values()].flatMap((partition) => {
      const meta = partition.get(META_SK);
      return meta === undefined ? [] : [meta];
    });
  }
}
