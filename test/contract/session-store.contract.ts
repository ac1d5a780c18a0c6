import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StoreWrite } from '../../lib/adapters/memory/memory-session-store.ts';
import { journalSk, META_SK, turnSk } from '../../lib/adapters/session-item-codec.ts';
import { sweepShardOf } from '../../lib/adapters/sweep-shard.ts';
import {
  CorruptStateError,
  LeaseLostError,
  NewerJournalFormatError,
  PayloadTooLargeError,
  SeqTakenError,
} from '../../lib/core/errors.ts';
import type { SessionKey } from '../../lib/core/ids.ts';
import type { JournalEntry } from '../../lib/core/journal.ts';
import type { DueSession, NewSession, SessionStore } from '../../lib/ports/session-store.ts';

type RawItem = Record<string, unknown>;

/** What the contract needs from an implementation besides the port: raw access and a fault seam. */
export interface SessionStoreHarness {
  readonly store: SessionStore;
  rawItem(key: SessionKey, sk: string): Promise<RawItem | undefined>;
  /** Writes (or with undefined, deletes) an item behind the store's back, as a tamperer would. */
  putRawItem(key: SessionKey, sk: string, item: RawItem | undefined): Promise<void>;
  /** The next write of `operation` commits, its response is lost, and the request is sent again. */
  retryNextWriteAfterCommit(operation: StoreWrite): void;
}

export interface HarnessOptions {
  /** Give the store a blob store for large payloads (true unless told otherwise). */
  readonly blobs?: boolean | undefined;
  readonly offloadThresholdBytes?: number | undefined;
}

export type MakeHarness = (options?: HarnessOptions) => SessionStoreHarness | Promise<SessionStoreHarness>;

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const TTL_MS = 2_000;
const ONE_MB = 1024 * 1024;

const newKey = (): SessionKey => ({ tenant: 'contract', agent: 'store-agent', id: `s-${randomUUID()}` });

function newSession(key: SessionKey, now: number, overrides: Partial<NewSession> = {}): NewSession {
  return {
    key,
    ticketId: `ticket-${key.id}`,
    activeTurnId: 'turn-1',
    traceId: TRACE_ID,
    now,
    sweepAt: now + 30_000,
    ...overrides,
  };
}

function entry(seq: number, epoch: number, text = `message ${seq}`, writeId = `w-${seq}-${epoch}`): JournalEntry {
  return { seq, kind: 'message', epoch, writeId, at: 1_000 + seq, turnId: 'turn-1', data: { text } };
}

/**
 * The SessionStore contract: every implementation (the in-memory twin, DynamoDB) must pass it.
 * It pins the fencing rules the runtime's invariants rest on — compare-and-set acquire, fenced
 * renew/release/append, no lost wake-up, own-write recognition — and the validation of stored
 * state as untrusted input.
 */
const dueKeys = (due: readonly DueSession[]) => due.map((d) => d.key);

export function describeSessionStoreContract(name: string, makeHarness: MakeHarness): void {
  describe(`SessionStore contract: ${name}`, () => {
    const setup = async (options?: HarnessOptions) => {
      const harness = await makeHarness(options);
      const now = Date.now();
      const key = newKey();
      await harness.store.createSession(newSession(key, now));
      return { harness, store: harness.store, key, now };
    };

    const acquireFree = async (store: SessionStore, key: SessionKey, owner: string, now: number, expectEpoch = 0) => {
      const result = await store.acquire(key, { owner, until: now + TTL_MS, now, expectEpoch, recovery: false });
      if (!result.ok) throw new Error(`setup: acquire by ${owner} failed`);
      return result.record;
    };

    describe('sessions', () => {
      it('creates a queued session with a free lease and returns it unchanged when created again', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        const now = Date.now();

        // Act
        const first = await harness.store.createSession(newSession(key, now));
        const second = await harness.store.createSession(newSession(key, now + 5, { activeTurnId: 'other' }));

        // Assert
        expect(first.created).toBe(true);
        expect(first.record).toMatchObject({
          key,
          state: 'queued',
          epoch: 0,
          pendingVersion: 1,
          seenVersion: 0,
          recoveries: 0,
          legs: 0,
          cancelRequested: false,
          activeTurnId: 'turn-1',
          traceId: TRACE_ID,
          sweepAt: now + 30_000,
        });
        expect(first.record.owner).toBeUndefined();
        expect(second).toEqual({ created: false, record: first.record });
        expect(await harness.store.getSession(key)).toEqual(first.record);
      });

      it('reports its own create as created when the first attempt committed and the retry found it', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        harness.retryNextWriteAfterCommit('createSession');

        // Act
        const result = await harness.store.createSession(newSession(key, Date.now()));

        // Assert
        expect(result.created).toBe(true);
        expect(result.record.key).toEqual(key);
      });

      it('answers undefined for a session that does not exist', async () => {
        const harness = await makeHarness();

        expect(await harness.store.getSession(newKey())).toBeUndefined();
      });

      it('stores the ttl on the session item when one is given', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();

        // Act
        await harness.store.createSession(newSession(key, Date.now(), { ttlSeconds: 1_900_000_000 }));

        // Assert
        expect((await harness.rawItem(key, META_SK))?.ttl).toBe(1_900_000_000);
      });

      // Tampered session items are removed at the end: a corrupt record fails listSessions too.
      it('refuses a session item whose fields name another session', async () => {
        // Arrange
        const { harness, key } = await setup();
        const other = newKey();
        const item = { ...(await harness.rawItem(key, META_SK)) };

        // Act
        await harness.putRawItem(other, META_SK, item);

        // Assert
        await expect(harness.store.getSession(other)).rejects.toThrow(CorruptStateError);
        await harness.putRawItem(other, META_SK, undefined);
      });

      it('refuses a session item with an unknown state', async () => {
        // Arrange
        const { harness, key } = await setup();

        // Act
        await harness.putRawItem(key, META_SK, { ...(await harness.rawItem(key, META_SK)), state: 'hijacked' });

        // Assert
        await expect(harness.store.getSession(key)).rejects.toThrow(CorruptStateError);
        await harness.putRawItem(key, META_SK, undefined);
      });

      it('finds a session by its id alone and lists sessions by state', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);

        // Act
        const found = await store.findSession(key.id);
        const running = await store.listSessions({ state: 'running', limit: 10_000 });
        const queued = await store.listSessions({ state: 'queued', limit: 10_000 });

        // Assert
        expect(found?.key).toEqual(key);
        expect(found?.state).toBe('running');
        expect(running.map((record) => record.key)).toContainEqual(key);
        expect(queued.map((record) => record.key)).not.toContainEqual(key);
        expect(await store.findSession(`missing-${randomUUID()}`)).toBeUndefined();
      });
    });

    describe('acquire', () => {
      it('takes a free lease: owner, until, epoch + 1, running, one more leg, swept at the lease expiry', async () => {
        // Arrange
        const { store, key, now } = await setup();

        // Act
        const result = await store.acquire(key, {
          owner: 'owner-a',
          until: now + TTL_MS,
          now,
          expectEpoch: 0,
          recovery: false,
        });

        // Assert
        expect(result.ok).toBe(true);
        const record = result.ok ? result.record : undefined;
        expect(record).toMatchObject({ owner: 'owner-a', until: now + TTL_MS, epoch: 1, state: 'running', legs: 1 });
        expect(record?.sweepAt).toBe(now + TTL_MS);
        expect(await store.getSession(key)).toEqual(record);
      });

      it('lets exactly one of two racing acquires on the same epoch win', async () => {
        // Arrange
        const { store, key, now } = await setup();
        const request = { until: now + TTL_MS, now, expectEpoch: 0, recovery: false };

        // Act
        const results = await Promise.all([
          store.acquire(key, { ...request, owner: 'owner-a' }),
          store.acquire(key, { ...request, owner: 'owner-b' }),
        ]);

        // Assert
        expect(results.filter((result) => result.ok)).toHaveLength(1);
        const loser = results.find((result) => !result.ok);
        expect(loser?.ok === false && loser.current?.epoch).toBe(1);
      });

      it('fails on a held lease unless the kick is the holder’s continuation', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);

        // Act
        const asIfFree = await store.acquire(key, {
          owner: 'owner-b',
          until: now + TTL_MS,
          now,
          expectEpoch: 1,
          recovery: false,
        });
        const continuation = await store.acquire(key, {
          owner: 'owner-b',
          until: now + TTL_MS,
          now,
          expectEpoch: 1,
          expectOwner: 'owner-a',
          recovery: false,
        });

        // Assert
        expect(asIfFree.ok).toBe(false);
        expect(asIfFree.ok === false && asIfFree.current?.owner).toBe('owner-a');
        expect(continuation.ok && continuation.record).toMatchObject({
          owner: 'owner-b',
          epoch: 2,
          legs: 2,
          recoveries: 0,
        });
      });

      it('takes over an expired lease as a recovery, and refuses a recovery while the lease is fresh', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        const recovery = { owner: 'owner-b', expectEpoch: 1, expectOwner: 'owner-a', recovery: true };

        // Act
        const early = await store.acquire(key, { ...recovery, now: now + 1, until: now + 1 + TTL_MS });
        const late = await store.acquire(key, { ...recovery, now: now + TTL_MS + 1, until: now + 2 * TTL_MS });

        // Assert
        expect(early.ok).toBe(false);
        expect(late.ok && late.record).toMatchObject({ owner: 'owner-b', epoch: 2, recoveries: 1, state: 'running' });
      });

      it('reports a missing session with no current record', async () => {
        const harness = await makeHarness();
        const now = Date.now();

        const result = await harness.store.acquire(newKey(), {
          owner: 'a',
          until: now + TTL_MS,
          now,
          expectEpoch: 0,
          recovery: false,
        });

        expect(result).toEqual({ ok: false, current: undefined });
      });

      it('refuses a finished session', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        await store.release(key, { owner: 'owner-a', epoch: 1, state: 'completed', seenVersion: 1, progressed: true });

        // Act
        const result = await store.acquire(key, {
          owner: 'owner-b',
          until: now + TTL_MS,
          now,
          expectEpoch: 1,
          recovery: false,
        });

        // Assert
        expect(result.ok).toBe(false);
      });

      it('recognises its own acquire when the first attempt committed and the retry found it taken', async () => {
        // Arrange
        const { harness, store, key, now } = await setup();
        harness.retryNextWriteAfterCommit('acquire');

        // Act
        const result = await store.acquire(key, {
          owner: 'owner-a',
          until: now + TTL_MS,
          now,
          expectEpoch: 0,
          recovery: false,
        });

        // Assert
        expect(result.ok && result.record).toMatchObject({ owner: 'owner-a', epoch: 1, legs: 1 });
      });
    });

    describe('versions', () => {
      it('records the agent version and journal format a session starts on, and the version a renewal moves it to', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        const now = Date.now();
        const created = await harness.store.createSession(newSession(key, now, { agentVersion: 3, journalFormat: 2 }));
        await acquireFree(harness.store, key, 'owner-a', now);

        // Act
        const renewed = await harness.store.renew(key, {
          owner: 'owner-a',
          epoch: 1,
          until: now + TTL_MS,
          progressed: true,
          agentVersion: 4,
        });

        // Assert
        expect(created.record).toMatchObject({ agentVersion: 3, journalFormat: 2 });
        expect(renewed).toMatchObject({ agentVersion: 4, journalFormat: 2 });
        expect(await harness.store.getSession(key)).toMatchObject({ agentVersion: 4 });
      });

      it('round-trips an entry’s format, and refuses one newer than it reads as newer, not as corrupt', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        await store.append(key, { ...entry(1, 1), v: 2 });
        await harness.putRawItem(key, journalSk(2), {
          seq: 2,
          kind: 'hologram',
          epoch: 1,
          writeId: 'w-future',
          at: 2,
          v: 9,
          attributeFromTheFuture: 'x',
          data: '{}',
        });

        // Act
        const first = await store.readJournal(key, 0, { limit: 1 });
        const all = store.readJournal(key);

        // Assert
        expect(first).toEqual([{ ...entry(1, 1), v: 2 }]);
        await expect(all).rejects.toThrow(NewerJournalFormatError);
        await expect(all).rejects.toMatchObject({ seq: 2, format: 9 });
      });
    });

    describe('renew', () => {
      it('extends the lease and the sweep time, and returns pendingVersion and cancelRequested', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        await store.bump(key, { now, cancel: true, sweepAt: now + 1 });

        // Act
        const record = await store.renew(key, {
          owner: 'owner-a',
          epoch: 1,
          until: now + 5 * TTL_MS,
          progressed: false,
        });

        // Assert
        expect(record).toMatchObject({
          until: now + 5 * TTL_MS,
          sweepAt: now + 5 * TTL_MS,
          pendingVersion: 2,
          cancelRequested: true,
        });
      });

      it('clears the crash-loop counter once the leg has progressed', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        const later = now + TTL_MS + 1;
        await store.acquire(key, {
          owner: 'owner-b',
          until: later + TTL_MS,
          now: later,
          expectEpoch: 1,
          expectOwner: 'owner-a',
          recovery: true,
        });

        // Act
        const before = await store.renew(key, { owner: 'owner-b', epoch: 2, until: later + TTL_MS, progressed: false });
        const after = await store.renew(key, { owner: 'owner-b', epoch: 2, until: later + TTL_MS, progressed: true });

        // Assert
        expect(before.recoveries).toBe(1);
        expect(after.recoveries).toBe(0);
        expect(after.recovered, 'the total is never reset').toBe(1);
      });

      it('throws LeaseLostError naming the new holder when a stale owner renews', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        const later = now + TTL_MS + 1;
        await store.acquire(key, {
          owner: 'owner-b',
          until: later + TTL_MS,
          now: later,
          expectEpoch: 1,
          expectOwner: 'owner-a',
          recovery: true,
        });

        // Act
        const renewal = store.renew(key, { owner: 'owner-a', epoch: 1, until: later + TTL_MS, progressed: false });

        // Assert
        await expect(renewal).rejects.toThrow(LeaseLostError);
        await expect(renewal).rejects.toMatchObject({ holder: { owner: 'owner-b', epoch: 2 } });
      });

      it('does not resurrect a released lease when a renewal arrives after the release', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'queued',
          seenVersion: 1,
          sweepAt: now + 1,
          progressed: true,
        });

        // Act
        const late = store.renew(key, { owner: 'owner-a', epoch: 1, until: now + 10 * TTL_MS, progressed: true });

        // Assert
        await expect(late).rejects.toThrow(LeaseLostError);
        const record = await store.getSession(key);
        expect(record?.owner).toBeUndefined();
        expect(record?.until).toBeUndefined();
        expect(record?.sweepAt).toBe(now + 1);
      });
    });

    describe('release', () => {
      it('frees the lease, records the state and seen version, and keeps the sweeper watching when asked', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);

        // Act
        const result = await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'waiting',
          seenVersion: 1,
          sweepAt: now + 60_000,
          progressed: true,
          ttlSeconds: 1_900_000_000,
        });

        // Assert
        expect(result).toEqual({ ok: true });
        const record = await store.getSession(key);
        expect(record).toMatchObject({ state: 'waiting', seenVersion: 1, epoch: 1, sweepAt: now + 60_000 });
        expect(record?.owner).toBeUndefined();
      });

      it('stops the sweeper watching a finished session', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);

        // Act
        await store.release(key, { owner: 'owner-a', epoch: 1, state: 'completed', seenVersion: 1, progressed: true });

        // Assert
        expect((await store.getSession(key))?.sweepAt).toBeUndefined();
        expect(dueKeys(await store.findDue(sweepShardOf(key.id), now + 10 * 60_000, 10_000))).not.toContainEqual(key);
      });

      it('refuses a stale owner’s release and shows the current holder', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        const later = now + TTL_MS + 1;
        await store.acquire(key, {
          owner: 'owner-b',
          until: later + TTL_MS,
          now: later,
          expectEpoch: 1,
          expectOwner: 'owner-a',
          recovery: true,
        });

        // Act
        const result = await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'completed',
          seenVersion: 1,
          progressed: true,
        });

        // Assert
        expect(result.ok).toBe(false);
        expect(result.ok === false && result.current).toMatchObject({ owner: 'owner-b', epoch: 2, state: 'running' });
      });

      it('refuses to release into idle when an event arrived since the owner looked, so no wake-up is lost', async () => {
        // Arrange
        const { store, key, now } = await setup();
        const record = await acquireFree(store, key, 'owner-a', now);
        await store.bump(key, { now, sweepAt: now + 1_000 });

        // Act
        const stale = await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'idle',
          expectPendingVersion: record.pendingVersion,
          seenVersion: record.pendingVersion,
          progressed: true,
        });
        const fresh = await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'idle',
          expectPendingVersion: record.pendingVersion + 1,
          seenVersion: record.pendingVersion + 1,
          progressed: true,
        });

        // Assert
        expect(stale.ok).toBe(false);
        expect(stale.ok === false && stale.current).toMatchObject({ owner: 'owner-a', pendingVersion: 2 });
        expect(fresh).toEqual({ ok: true });
      });

      it('recognises its own release when the first attempt committed and the retry found the lease gone', async () => {
        // Arrange
        const { harness, store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        harness.retryNextWriteAfterCommit('release');

        // Act
        const result = await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'completed',
          seenVersion: 1,
          progressed: true,
        });

        // Assert
        expect(result).toEqual({ ok: true });
        expect((await store.getSession(key))?.state).toBe('completed');
      });
    });

    describe('item expiry', () => {
      const CREATED_TTL = 1_800_000_000;
      const ttlOf = async (harness: SessionStoreHarness, key: SessionKey) => (await harness.rawItem(key, META_SK))?.ttl;

      it('moves the record’s expiry forward on acquire, and keeps it when the acquire names none', async () => {
        // Arrange
        const harness = await makeHarness();
        const { store } = harness;
        const now = Date.now();
        const key = newKey();
        await store.createSession(newSession(key, now, { ttlSeconds: CREATED_TTL }));
        const request = { owner: 'owner-a', until: now + TTL_MS, now, expectEpoch: 0, recovery: false };

        // Act
        await store.acquire(key, { ...request, ttlSeconds: CREATED_TTL + 100 });
        const afterAcquire = await ttlOf(harness, key);
        await store.release(key, { owner: 'owner-a', epoch: 1, state: 'queued', seenVersion: 1, progressed: false });
        await store.acquire(key, { ...request, owner: 'owner-b', expectEpoch: 1 });

        // Assert
        expect(afterAcquire).toBe(CREATED_TTL + 100);
        expect(await ttlOf(harness, key)).toBe(CREATED_TTL + 100);
      });

      it('moves the record’s expiry forward when the owner releases into waiting and when a turn ends idle', async () => {
        // Arrange
        const harness = await makeHarness();
        const { store } = harness;
        const now = Date.now();
        const key = newKey();
        await store.putTurn(key, { turnId: 'turn-1', ticketId: 'turn-1', input: {}, inputHash: 'h', createdAt: now });
        await store.createSession(newSession(key, now, { ttlSeconds: CREATED_TTL, conversation: true }));
        await acquireFree(store, key, 'owner-a', now);

        // Act
        await store.release(key, {
          owner: 'owner-a',
          epoch: 1,
          state: 'waiting',
          expectPendingVersion: 1,
          seenVersion: 1,
          progressed: true,
          ttlSeconds: CREATED_TTL + 200,
          publishedTurnId: 'turn-0',
        });
        const whileWaiting = await ttlOf(harness, key);
        const publishedOnRelease = (await store.getSession(key))?.publishedTurnId;
        await store.acquire(key, { owner: 'owner-b', until: now + TTL_MS, now, expectEpoch: 1, recovery: false });
        await store.endTurn(key, {
          owner: 'owner-b',
          epoch: 2,
          next: undefined,
          expectPendingVersion: (await store.getSession(key))!.pendingVersion,
          now,
          sweepAt: now + 5_000,
          progressed: true,
          ttlSeconds: CREATED_TTL + 300,
        });

        // Assert
        expect(whileWaiting).toBe(CREATED_TTL + 200);
        expect(await ttlOf(harness, key)).toBe(CREATED_TTL + 300);
        expect((await store.getSession(key))?.state).toBe('idle');
        // A release records the turn whose result it follows; a later write without one keeps it.
        expect(publishedOnRelease).toBe('turn-0');
        expect((await store.getSession(key))?.publishedTurnId).toBe('turn-0');
      });
    });

    describe('refreshExpiry', () => {
      it('moves every turn, entry and snapshot expiring earlier forward, stamps the record, and leaves later and absent expiries and other items', async () => {
        // Arrange: a turn, two entries and a snapshot written with the creation's expiry, one
        // entry without any, and a transient item (live text) beside them.
        const harness = await makeHarness();
        const { store } = harness;
        const now = Date.now();
        const key = newKey();
        const early = 1_800_000_000;
        await store.createSession(newSession(key, now, { ttlSeconds: early, retentionS: 100 }));
        await store.putTurn(key, { turnId: 'turn-1', ticketId: 't', input: {}, inputHash: 'h', createdAt: now }, early);
        await store.append(key, entry(1, 1), early);
        await store.append(key, entry(2, 1), early + 1_000);
        await store.append(key, entry(3, 1));
        await harness.putRawItem(key, 'L#000000000004#000000', { text: 'partial', ttl: early });
        const created = await store.getSession(key);

        // Act
        const moved = await store.refreshExpiry(key, { ttlSeconds: early + 500, now: now + 1, retentionS: 200 });

        // Assert
        const ttl = async (sk: string) => (await harness.rawItem(key, sk))?.ttl;
        expect(moved).toBe(2);
        expect([await ttl(turnSk('turn-1')), await ttl(journalSk(1))]).toEqual([early + 500, early + 500]);
        expect(await ttl(journalSk(2))).toBe(early + 1_000);
        expect(await ttl(journalSk(3))).toBeUndefined();
        expect(await ttl('L#000000000004#000000')).toBe(early);
        expect(await ttl(META_SK)).toBe(early);
        expect(created?.retentionS).toBe(100);
        expect(await store.getSession(key)).toMatchObject({ expiryRefreshedAt: now + 1, retentionS: 200 });
        expect((await store.readJournal(key)).map((e) => e.seq)).toEqual([1, 2, 3]);
      });
    });

    describe('forks', () => {
      const forked = (seq: number, from: SessionKey, cursor: number): JournalEntry => ({
        seq,
        kind: 'forked',
        epoch: 1,
        writeId: `fork-${seq}`,
        at: 5_000,
        turnId: 'turn-1',
        data: { from: { agent: from.agent, id: from.id }, cursor, effects: 'ask', ledger: [] },
      });

      it('reads a fork’s history from its original, pages included, and refuses a forked entry naming no valid origin', async () => {
        // Arrange: an original of five entries; a fork at 3 with two entries of its own.
        const { store } = await makeHarness();
        const now = Date.now();
        const original = newKey();
        const fork = { ...original, id: `${original.id}-fork` };
        await store.createSession(newSession(original, now));
        for (let seq = 1; seq <= 5; seq++) await store.append(original, entry(seq, 1));
        await store.append(fork, forked(4, original, 3));
        await store.append(fork, entry(5, 2, 'the fork’s own'));
        const bad = { ...original, id: `${original.id}-bad` };
        await store.append(bad, forked(3, original, 1));

        // Act
        const whole = await store.readJournal(fork);
        const page = await store.readJournal(fork, 1, { limit: 3 });
        const tail = await store.readJournal(fork, 3);

        // Assert
        expect(whole.map((e) => [e.seq, e.kind])).toEqual([
          [1, 'message'],
          [2, 'message'],
          [3, 'message'],
          [4, 'forked'],
          [5, 'message'],
        ]);
        expect(whole[4]).toMatchObject({ data: { text: 'the fork’s own' } });
        expect(page.map((e) => e.seq)).toEqual([2, 3, 4]);
        expect(tail.map((e) => e.kind)).toEqual(['forked', 'message']);
        await expect(store.readJournal(bad)).rejects.toThrow(CorruptStateError);
      });

      it('moves the items of a session whose record is gone: a fork keeps its original’s history alive', async () => {
        // Arrange
        const harness = await makeHarness();
        const { store } = harness;
        const key = newKey();
        await store.append(key, entry(1, 1), 1_800_000_000);

        // Act
        const moved = await store.refreshExpiry(key, { ttlSeconds: 1_800_000_500, now: Date.now(), retentionS: 100 });

        // Assert
        expect(moved).toBe(1);
        expect((await harness.rawItem(key, journalSk(1)))?.ttl).toBe(1_800_000_500);
        expect(await store.getSession(key)).toBeUndefined();
      });
    });

    describe('bump', () => {
      it('counts an event, requests a cancel, and keeps a sweep time that is already set', async () => {
        // Arrange
        const { store, key, now } = await setup();

        // Act
        const result = await store.bump(key, { now, cancel: true, sweepAt: now + 999_999 });

        // Assert
        expect(result.ok && result.record).toMatchObject({
          pendingVersion: 2,
          cancelRequested: true,
          sweepAt: now + 30_000,
        });
      });

      it('sets a sweep time when the session had none', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        await store.release(key, { owner: 'owner-a', epoch: 1, state: 'idle', seenVersion: 1, progressed: true });

        // Act
        const result = await store.bump(key, { now, sweepAt: now + 500 });

        // Assert
        expect(result.ok && result.record).toMatchObject({
          pendingVersion: 2,
          cancelRequested: false,
          sweepAt: now + 500,
        });
      });

      it('reports a finished session as finished and a missing one as not found', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);
        await store.release(key, { owner: 'owner-a', epoch: 1, state: 'cancelled', seenVersion: 1, progressed: true });

        // Act
        const finished = await store.bump(key, { now, cancel: true, sweepAt: now });
        const missing = await store.bump(newKey(), { now, sweepAt: now });

        // Assert
        expect(finished).toMatchObject({
          ok: false,
          reason: 'finished',
          current: { state: 'cancelled', pendingVersion: 1 },
        });
        expect(missing).toEqual({ ok: false, reason: 'not-found' });
      });
    });

    describe('findDue', () => {
      it('returns the due sessions of a shard, not those due later nor those no longer watched', async () => {
        // Arrange
        const harness = await makeHarness();
        const now = Date.now();
        const due = newKey();
        const later = newKey();
        const finished = newKey();
        await harness.store.createSession(newSession(due, now - 10_000, { sweepAt: now - 1 }));
        await harness.store.createSession(newSession(later, now - 10_000, { sweepAt: now + 60_000 }));
        await harness.store.createSession(newSession(finished, now - 10_000, { sweepAt: now - 1 }));
        await acquireFree(harness.store, finished, 'owner-a', now - 10_000);
        await harness.store.release(finished, {
          owner: 'owner-a',
          epoch: 1,
          state: 'failed',
          seenVersion: 1,
          progressed: false,
        });

        // Act
        const found = await Promise.all(
          [due, later, finished].map(async (key) =>
            dueKeys(await harness.store.findDue(sweepShardOf(key.id), now, 10_000)),
          ),
        );
        const otherShard = dueKeys(await harness.store.findDue((sweepShardOf(due.id) + 1) % 4, now, 10_000));

        // Assert
        expect(found[0]).toContainEqual(due);
        expect(found[1]).not.toContainEqual(later);
        expect(found[2]).not.toContainEqual(finished);
        expect(otherShard).not.toContainEqual(due);
      });

      it('finds a held session once its lease has expired', async () => {
        // Arrange
        const { store, key, now } = await setup();
        await acquireFree(store, key, 'owner-a', now);

        // Act
        const whileHeld = dueKeys(await store.findDue(sweepShardOf(key.id), now + TTL_MS - 1, 10_000));
        const afterExpiryDue = await store.findDue(sweepShardOf(key.id), now + TTL_MS + 1, 10_000);
        const afterExpiry = dueKeys(afterExpiryDue);

        // Assert
        expect(whileHeld).not.toContainEqual(key);
        expect(afterExpiry).toContainEqual(key);
        // The sweeper counts stalled sessions from sweepAt: it is the lease expiry here.
        expect(afterExpiryDue.find((d) => d.key.id === key.id)?.sweepAt).toBe(now + TTL_MS);
      });
    });

    describe('querySessions', () => {
      /** Six sessions of a fresh tenant, one second apart: agents alpha/beta alternating, the two oldest completed. */
      const seedTenant = async (store: SessionStore) => {
        const tenant = `t${randomUUID().slice(0, 8)}`;
        const base = Date.now() - 60_000;
        const keys: SessionKey[] = [];
        for (let i = 0; i < 6; i++) {
          const key = { tenant, agent: i % 2 === 0 ? 'alpha' : 'beta', id: `q-${i}-${randomUUID()}` };
          await store.createSession(newSession(key, base + i * 1_000));
          keys.push(key);
        }
        for (const key of keys.slice(0, 2)) {
          await acquireFree(store, key, 'owner-q', base);
          const done = { owner: 'owner-q', epoch: 1, state: 'completed', seenVersion: 1, progressed: true } as const;
          await store.release(key, { ...done, tokens: 120 });
        }
        return { tenant, base, keys };
      };
      const ids = (page: { sessions: ReadonlyArray<{ key: SessionKey }> }) => page.sessions.map((s) => s.key.id);

      it('pages through a tenant newest first, without gaps or repeats, and nothing of another tenant', async () => {
        // Arrange
        const harness = await makeHarness();
        const { tenant, keys } = await seedTenant(harness.store);
        await seedTenant(harness.store);

        // Act
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await harness.store.querySessions({ tenant, limit: 4, cursor });
          seen.push(...ids(page));
          cursor = page.cursor;
          pages++;
        } while (cursor !== undefined && pages < 10);

        // Assert
        expect(seen).toEqual(keys.map((k) => k.id).reverse());
        expect(pages).toBe(2);
      });

      it('filters by agent, state and creation time, and shows the counters a list row needs', async () => {
        // Arrange
        const harness = await makeHarness();
        const { tenant, base, keys } = await seedTenant(harness.store);

        // Act
        const beta = await harness.store.querySessions({ tenant, agent: 'beta', limit: 10 });
        const completed = await harness.store.querySessions({ tenant, state: 'completed', limit: 10 });
        const middle = await harness.store.querySessions({
          tenant,
          createdFrom: base + 2_000,
          createdTo: base + 3_000,
          limit: 10,
        });

        // Assert
        expect(ids(beta)).toEqual([keys[5], keys[3], keys[1]].map((k) => k?.id));
        expect(ids(completed)).toEqual([keys[1], keys[0]].map((k) => k?.id));
        expect(completed.sessions[0]).toMatchObject({ state: 'completed', legs: 1, recoveries: 0, tokens: 120 });
        expect(ids(middle)).toEqual([keys[3], keys[2]].map((k) => k?.id));
        expect(middle.cursor).toBeUndefined();
      });

      it("refuses a cursor that is not one of this tenant's list", async () => {
        // Arrange
        const harness = await makeHarness();
        const first = await seedTenant(harness.store);
        const second = await seedTenant(harness.store);
        const page = await harness.store.querySessions({ tenant: first.tenant, limit: 1 });

        // Act / Assert
        await expect(
          harness.store.querySessions({ tenant: second.tenant, limit: 1, cursor: page.cursor }),
        ).rejects.toThrow(/cursor/);
        await expect(
          harness.store.querySessions({ tenant: first.tenant, limit: 1, cursor: 'garbage' }),
        ).rejects.toThrow(/cursor/);
      });
    });

    describe('batch reads', () => {
      it('reads many records and turns in the order asked, undefined where none, past one request’s 100 keys', async () => {
        // Arrange: 120 sessions with a turn each, and keys that exist nowhere mixed in.
        const harness = await makeHarness();
        const now = Date.now();
        const keys = Array.from({ length: 120 }, newKey);
        for (const [i, key] of keys.entries()) {
          await harness.store.createSession(newSession(key, now + i));
          await harness.store.putTurn(key, {
            turnId: `t-${i}`,
            ticketId: `t-${i}`,
            input: { i },
            inputHash: 'h',
            createdAt: i,
          });
        }
        const missing = newKey();
        const asked = [missing, ...keys.toReversed(), keys[0]!];

        // Act
        const records = await harness.store.getSessions(asked);
        const turns = await harness.store.getTurns([
          { key: keys[7]!, turnId: 't-7' },
          { key: keys[7]!, turnId: 't-8' },
          ...keys.map((key, i) => ({ key, turnId: `t-${i}` })),
        ]);

        // Assert
        expect(records).toHaveLength(asked.length);
        expect(records[0]).toBeUndefined();
        expect(records.slice(1).map((r) => r?.key)).toEqual(asked.slice(1));
        expect(records.at(-1)?.createdAt).toBe(now);
        expect(turns[0]?.input).toEqual({ i: 7 });
        expect(turns[1]).toBeUndefined();
        expect(turns.slice(2).map((t) => t?.turnId)).toEqual(keys.map((_, i) => `t-${i}`));
        expect(await harness.store.getSessions([])).toEqual([]);
      });
    });

    describe('turns', () => {
      it('creates a turn once and returns the existing turn unchanged to a second put', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        const turn = {
          turnId: 'turn-1',
          ticketId: 'ticket-1',
          input: { ask: 'why?' },
          inputHash: 'hash-1',
          createdAt: 1,
        };

        // Act
        const first = await harness.store.putTurn(key, turn, 1_900_000_000);
        const second = await harness.store.putTurn(key, { ...turn, input: { ask: 'other' }, inputHash: 'hash-2' });

        // Assert
        expect(first).toEqual({ created: true, turn });
        expect(second).toEqual({ created: false, turn });
        expect(await harness.store.getTurn(key, 'turn-1')).toEqual(turn);
        expect(await harness.store.getTurn(key, 'turn-2')).toBeUndefined();
        expect((await harness.rawItem(key, turnSk('turn-1')))?.ttl).toBe(1_900_000_000);
      });

      it('reports its own turn as created when the first attempt committed and the retry found it', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        const turn = { turnId: 'turn-1', ticketId: 'ticket-1', input: [1, 2], inputHash: 'hash-1', createdAt: 5 };
        harness.retryNextWriteAfterCommit('putTurn');

        // Act
        const result = await harness.store.putTurn(key, turn);

        // Assert
        expect(result).toEqual({ created: true, turn });
      });

      it('keeps the first outcome of a turn and returns it to a second writer', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        await harness.store.putTurn(key, { turnId: 't', ticketId: 't', input: 1, inputHash: 'h', createdAt: 1 });
        const first = { status: 'completed', output: { answer: 42 }, at: 10 } as const;

        // Act
        const written = await harness.store.setTurnOutcome(key, 't', first);
        const second = await harness.store.setTurnOutcome(key, 't', { status: 'failed', error: 'late', at: 11 });

        // Assert
        expect(written).toEqual(first);
        expect(second).toEqual(first);
        expect((await harness.store.getTurn(key, 't'))?.outcome).toEqual(first);
      });

      it('recognises its own outcome write when the first attempt committed', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        await harness.store.putTurn(key, { turnId: 't', ticketId: 't', input: 1, inputHash: 'h', createdAt: 1 });
        const outcome = { status: 'failed', error: 'model refused', at: 10 } as const;
        harness.retryNextWriteAfterCommit('setTurnOutcome');

        // Act
        const written = await harness.store.setTurnOutcome(key, 't', outcome);

        // Assert
        expect(written).toEqual(outcome);
      });

      it('refuses an outcome for a turn that does not exist', async () => {
        const harness = await makeHarness();

        await expect(harness.store.setTurnOutcome(newKey(), 'nope', { status: 'completed', at: 1 })).rejects.toThrow(
          CorruptStateError,
        );
      });
    });

    describe('conversation turns', () => {
      const turnOf = (turnId: string, createdAt: number) => ({
        turnId,
        ticketId: turnId,
        input: { text: turnId },
        inputHash: `h-${turnId}`,
        createdAt,
      });
      /** A conversation whose first turn ran and ended: idle, no lease, no sweep. */
      const idleConversation = async () => {
        const harness = await makeHarness();
        const { store } = harness;
        const now = Date.now();
        const key = newKey();
        await store.putTurn(key, turnOf('turn-1', now));
        await store.createSession(newSession(key, now, { conversation: true }));
        const held = await acquireFree(store, key, 'owner-a', now);
        const ended = await store.endTurn(key, {
          owner: 'owner-a',
          epoch: held.epoch,
          next: undefined,
          expectPendingVersion: (await store.getSession(key))!.pendingVersion,
          now,
          sweepAt: now + 5_000,
          progressed: true,
        });
        if (!ended.ok) throw new Error('setup: endTurn refused');
        return { harness, store, key, now };
      };
      const enqueue = (store: SessionStore, key: SessionKey, turnId: string, now: number, more = {}) =>
        store.enqueueTurn(key, { turnId, now, sweepAt: now + 1_000, maxPending: 3, ...more });

      it('ends a turn with an empty queue in idle: no lease, no sweep, the seen version caught up', async () => {
        // Arrange
        const { store, key, harness } = await idleConversation();

        // Act
        const record = await store.getSession(key);

        // Assert
        expect(record).toMatchObject({ state: 'idle', conversation: true, turnQueue: [], lastTurnId: 'turn-1' });
        expect(record?.owner).toBeUndefined();
        expect(record?.sweepAt).toBeUndefined();
        expect(record?.seenVersion).toBe(record?.pendingVersion);
        expect((await harness.rawItem(key, META_SK))?.sweepShard).toBeUndefined();
      });

      it('makes a turn sent to an idle conversation its active turn for a kick, once, however often it is sent', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        const before = await store.getSession(key);
        await store.putTurn(key, turnOf('turn-2', now + 1));

        // Act
        const first = await enqueue(store, key, 'turn-2', now + 1);
        const again = await enqueue(store, key, 'turn-2', now + 2);

        // Assert
        expect(first).toMatchObject({ ok: true, queued: true });
        expect(again).toMatchObject({ ok: true, queued: false });
        const record = await store.getSession(key);
        expect(record).toMatchObject({
          state: 'queued',
          activeTurnId: 'turn-2',
          turnQueue: [],
          lastTurnId: 'turn-2',
          sweepAt: now + 1_001,
        });
        expect(record?.pendingVersion).toBe((before?.pendingVersion ?? 0) + 1);
      });

      it('carries a small input on the record with the write that makes its turn active, and drops it with the turn', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        for (const id of ['turn-2', 'turn-3']) await store.putTurn(key, turnOf(id, now));
        const input = (turnId: string) => ({ turnId, input: { text: turnId, emoji: '🙂' } });

        // Act
        await enqueue(store, key, 'turn-2', now, { activeInput: input('turn-2') });
        const active = await store.getSession(key);
        await enqueue(store, key, 'turn-3', now, { activeInput: input('turn-3') });
        const queuedBehind = await store.getSession(key);
        const held = await acquireFree(store, key, 'owner-b', now, active?.epoch);
        const ended = await store.endTurn(key, {
          owner: 'owner-b',
          epoch: held.epoch,
          next: 'turn-3',
          expectPendingVersion: (await store.getSession(key))!.pendingVersion,
          now,
          sweepAt: now + 5_000,
          progressed: true,
        });

        // Assert
        expect(active?.activeInput).toEqual(input('turn-2'));
        // Queued behind the active turn: its leg reads the turn item, the record keeps the active one's.
        expect(queuedBehind?.activeInput).toEqual(input('turn-2'));
        expect(ended.ok).toBe(true);
        const next = await store.getSession(key);
        expect(next?.activeTurnId).toBe('turn-3');
        expect(next?.activeInput).toBeUndefined();
      });

      it('puts a steering turn at the head of the queue with a steer inbox item, in one write, when a turn is active', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        for (const id of ['turn-2', 'turn-3', 'turn-4']) await store.putTurn(key, turnOf(id, now));
        const idleSteer = await enqueue(store, key, 'turn-2', now, { steer: true });
        await enqueue(store, key, 'turn-3', now);

        // Act
        const steered = await enqueue(store, key, 'turn-4', now, { steer: true });

        // Assert
        expect(idleSteer).toMatchObject({ ok: true, queued: true, steered: false });
        expect(steered).toMatchObject({ ok: true, queued: true, steered: true });
        const record = await store.getSession(key);
        expect(record?.activeTurnId).toBe('turn-2');
        expect(record?.turnQueue).toEqual(['turn-4', 'turn-3']);
        expect(record?.inbox).toEqual([{ kind: 'steer', id: 'steer:turn-4', turnId: 'turn-4' }]);
      });

      it('treats the active turn and a turn with an outcome as accepted before', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        await store.setTurnOutcome(key, 'turn-1', { status: 'completed', output: 'ok', at: now });

        // Act
        const active = await enqueue(store, key, 'turn-1', now + 1);

        // Assert
        expect(active).toMatchObject({ ok: true, queued: false });
        expect((await store.getSession(key))?.turnQueue).toEqual([]);
      });

      it('refuses a one-shot session, a missing one, a stale view and a full queue, each by name', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        const oneShot = newKey();
        await store.createSession(newSession(oneShot, now));
        for (const id of ['turn-2', 'turn-3', 'turn-4', 'turn-5', 'turn-6']) await store.putTurn(key, turnOf(id, now));
        await store.putTurn(oneShot, turnOf('turn-2', now));

        // Act
        const refusedOneShot = await enqueue(store, oneShot, 'turn-2', now);
        const missing = await enqueue(store, newKey(), 'turn-2', now);
        const stale = await enqueue(store, key, 'turn-2', now, { ifLastTurn: 'turn-0' });
        const current = await enqueue(store, key, 'turn-2', now, { ifLastTurn: 'turn-1' });
        await enqueue(store, key, 'turn-3', now);
        await enqueue(store, key, 'turn-4', now);
        await enqueue(store, key, 'turn-5', now);
        const full = await enqueue(store, key, 'turn-6', now);

        // Assert
        expect(refusedOneShot).toMatchObject({ ok: false, reason: 'one-shot' });
        expect(missing).toMatchObject({ ok: false, reason: 'not-found' });
        expect(stale).toMatchObject({ ok: false, reason: 'stale' });
        expect(current).toMatchObject({ ok: true, queued: true });
        expect(full).toMatchObject({ ok: false, reason: 'full' });
        expect((await store.getSession(key))?.turnQueue).toEqual(['turn-3', 'turn-4', 'turn-5']);
      });

      it('keeps the first release mark, and refuses new turns once a release is marked', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        await store.putTurn(key, turnOf('turn-2', now));

        // Act
        const first = await store.bump(key, { now, release: { timeoutMs: 30_000 }, sweepAt: now + 1_000 });
        const second = await store.bump(key, { now: now + 5, release: { timeoutMs: 5_000 }, sweepAt: now + 1_000 });
        const refused = await enqueue(store, key, 'turn-2', now);

        // Assert
        expect(first.ok && first.record.releaseRequested).toEqual({ at: now, timeoutMs: 30_000 });
        expect(second.ok && second.record.releaseRequested).toEqual({ at: now, timeoutMs: 30_000 });
        expect(refused).toMatchObject({ ok: false, reason: 'released' });
        expect((await store.getSession(key))?.turnQueue).toEqual([]);
      });

      it('brings a waiting session’s sweep forward when a bump asks for it', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        await store.bump(key, { now, sweepAt: now + 60_000 });

        // Act
        const kept = await store.bump(key, { now, sweepAt: now + 90_000 });
        const forward = await store.bump(key, { now, sweepAt: now + 1_000, sweepSoon: true });

        // Assert
        expect(kept.ok && kept.record.sweepAt).toBe(now + 60_000);
        expect(forward.ok && forward.record.sweepAt).toBe(now + 1_000);
      });

      it('records the parent of a task’s session', async () => {
        // Arrange
        const { store, now } = await idleConversation();
        const parent = newKey();
        const child = newKey();

        // Act
        await store.createSession(newSession(child, now, { parent, conversation: true }));

        // Assert
        expect((await store.getSession(child))?.parent).toEqual(parent);
        expect((await store.findSession(child.id))?.parent).toEqual(parent);
      });

      it('keeps a held session running, and hands the owner the queue head when its turn ends', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        for (const id of ['turn-2', 'turn-3', 'turn-4']) await store.putTurn(key, turnOf(id, now));
        await enqueue(store, key, 'turn-2', now);
        const held = await acquireFree(store, key, 'owner-b', now, 1);
        await enqueue(store, key, 'turn-3', now);
        await enqueue(store, key, 'turn-4', now);
        const base = {
          owner: 'owner-b',
          epoch: held.epoch,
          now: now + 3,
          sweepAt: now + 9_000,
          progressed: true,
          publishedTurnId: 'turn-2',
          expectPendingVersion: (await store.getSession(key))!.pendingVersion,
        };

        // Act
        const runningState = (await store.getSession(key))?.state;
        const refusedIdle = await store.endTurn(key, { ...base, next: undefined });
        const publishedBefore = (await store.getSession(key))?.publishedTurnId;
        const advanced = await store.endTurn(key, { ...base, next: 'turn-3' });

        // Assert
        expect(runningState).toBe('running');
        expect(refusedIdle.ok).toBe(false);
        expect(advanced.ok).toBe(true);
        const record = await store.getSession(key);
        expect(record).toMatchObject({
          state: 'queued',
          activeTurnId: 'turn-3',
          turnQueue: ['turn-4'],
          sweepAt: now + 9_000,
          // The turn whose result was published rides on the same write; a refused one sets nothing.
          publishedTurnId: 'turn-2',
        });
        expect(publishedBefore).toBeUndefined();
        expect(record?.owner).toBeUndefined();
      });

      it('refuses an endTurn when an event arrived since the owner looked, so a cancel is never absorbed', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        await store.putTurn(key, turnOf('turn-2', now));
        await enqueue(store, key, 'turn-2', now);
        const held = await acquireFree(store, key, 'owner-b', now, 1);
        const seen = held.pendingVersion;
        await store.bump(key, { now, cancel: true, sweepAt: now + 1_000 });
        const request = {
          owner: 'owner-b',
          epoch: held.epoch,
          next: undefined,
          now,
          sweepAt: now + 1,
          progressed: true,
        };

        // Act
        const refused = await store.endTurn(key, { ...request, expectPendingVersion: seen });
        const ended = await store.endTurn(key, { ...request, expectPendingVersion: seen + 1 });

        // Assert
        expect(refused.ok).toBe(false);
        expect(refused.ok ? undefined : refused.current?.cancelRequested).toBe(true);
        expect(ended.ok).toBe(true);
        const record = await store.getSession(key);
        expect(record?.seenVersion).toBe(seen + 1);
        expect(record?.cancelRequested).toBe(true);
      });

      it('refuses a stale owner’s endTurn and recognises its own when the first attempt committed', async () => {
        // Arrange
        const { harness, store, key, now } = await idleConversation();
        for (const id of ['turn-2', 'turn-3']) await store.putTurn(key, turnOf(id, now));
        await enqueue(store, key, 'turn-2', now);
        const held = await acquireFree(store, key, 'owner-b', now, 1);
        await enqueue(store, key, 'turn-3', now);
        const expectPendingVersion = (await store.getSession(key))!.pendingVersion;
        const base = {
          epoch: held.epoch,
          next: 'turn-3',
          expectPendingVersion,
          now,
          sweepAt: now + 1,
          progressed: false,
        };

        // Act
        const stale = await store.endTurn(key, { ...base, owner: 'owner-a', epoch: 1 });
        harness.retryNextWriteAfterCommit('endTurn');
        const own = await store.endTurn(key, { ...base, owner: 'owner-b' });

        // Assert
        expect(stale.ok).toBe(false);
        expect(own.ok).toBe(true);
      });

      it('advances the owner to the queue head under the same lease, extended, and recognises its own retried write', async () => {
        // Arrange
        const { harness, store, key, now } = await idleConversation();
        for (const id of ['turn-2', 'turn-3', 'turn-4']) await store.putTurn(key, turnOf(id, now));
        await enqueue(store, key, 'turn-2', now, { activeInput: { turnId: 'turn-2', input: { text: 'small' } } });
        const held = await acquireFree(store, key, 'owner-b', now, 1);
        await enqueue(store, key, 'turn-3', now);
        await enqueue(store, key, 'turn-4', now);
        const base = {
          owner: 'owner-b',
          epoch: held.epoch,
          now: now + 3,
          until: now + 30_000,
          progressed: true,
          publishedTurnId: 'turn-2',
          expectPendingVersion: (await store.getSession(key))!.pendingVersion,
        };

        // Act
        const wrongHead = await store.advanceTurn(key, { ...base, next: 'turn-4' });
        const stale = await store.advanceTurn(key, { ...base, next: 'turn-3', owner: 'owner-a', epoch: 1 });
        harness.retryNextWriteAfterCommit('advanceTurn');
        const advanced = await store.advanceTurn(key, { ...base, next: 'turn-3' });

        // Assert
        expect(wrongHead.ok).toBe(false);
        expect(stale.ok).toBe(false);
        expect(advanced.ok).toBe(true);
        const record = await store.getSession(key);
        expect(record).toMatchObject({
          state: 'running',
          owner: 'owner-b',
          epoch: held.epoch,
          until: now + 30_000,
          activeTurnId: 'turn-3',
          turnQueue: ['turn-4'],
          seenVersion: base.expectPendingVersion,
          publishedTurnId: 'turn-2',
          // The sweeper looks when the lease would expire, as after a renewal.
          sweepAt: now + 30_000,
        });
        // The ended turn's inline input goes with it: the next turn's is read from its item.
        expect(record?.activeInput).toBeUndefined();
        expect(advanced.ok ? advanced.record.activeTurnId : undefined).toBe('turn-3');
        // The lease it keeps is a lease: the owner renews it, a newcomer cannot take it.
        await expect(
          store.renew(key, { owner: 'owner-b', epoch: held.epoch, until: now + 40_000, progressed: false }),
        ).resolves.toMatchObject({ until: now + 40_000 });
      });

      it('refuses an advance when an event arrived since the owner looked, and leaves the session as it was', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        for (const id of ['turn-2', 'turn-3']) await store.putTurn(key, turnOf(id, now));
        await enqueue(store, key, 'turn-2', now);
        const held = await acquireFree(store, key, 'owner-b', now, 1);
        await enqueue(store, key, 'turn-3', now);
        const seen = (await store.getSession(key))!.pendingVersion;
        await store.bump(key, { now, cancel: true, sweepAt: now + 1_000 });

        // Act
        const refused = await store.advanceTurn(key, {
          owner: 'owner-b',
          epoch: held.epoch,
          next: 'turn-3',
          expectPendingVersion: seen,
          now,
          until: now + 30_000,
          progressed: true,
        });

        // Assert
        expect(refused.ok).toBe(false);
        expect(refused.ok ? undefined : refused.current?.cancelRequested).toBe(true);
        expect(await store.getSession(key)).toMatchObject({
          state: 'running',
          activeTurnId: 'turn-2',
          turnQueue: ['turn-3'],
          owner: 'owner-b',
        });
      });

      it('loses no turn when twelve senders enqueue at once', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        const ids = Array.from({ length: 12 }, (_, i) => `turn-${String(i).padStart(2, '0')}`);
        for (const id of ids) await store.putTurn(key, turnOf(id, now));

        // Act
        const results = await Promise.all(
          ids.map((id) => store.enqueueTurn(key, { turnId: id, now, sweepAt: now, maxPending: 20 })),
        );

        // Assert
        expect(results.every((r) => r.ok && r.queued)).toBe(true);
        const record = await store.getSession(key);
        // One of them became the active turn (the session was idle); the others wait behind it.
        expect([record?.activeTurnId, ...(record?.turnQueue ?? [])].sort()).toEqual(ids);
      });

      it('lists the turns of a session oldest first', async () => {
        // Arrange
        const { store, key, now } = await idleConversation();
        await store.putTurn(key, turnOf('turn-3', now + 20));
        await store.putTurn(key, turnOf('turn-2', now + 10));

        // Act
        const turns = await store.listTurns(key);

        // Assert
        expect(turns.map((t) => t.turnId)).toEqual(['turn-1', 'turn-2', 'turn-3']);
      });
    });

    describe('inbox', () => {
      const message = (id: string) => ({ kind: 'message' as const, id, text: `text ${id}` });
      const post = (store: SessionStore, key: SessionKey, id: string, now: number, maxPending = 3) =>
        store.postInbox(key, { item: message(id), now, sweepAt: now + 1_000, maxPending });

      it('posts an item once by id, bumps the version, and refuses a full inbox, a finished or missing session', async () => {
        // Arrange
        const { store, key, now } = await setup();
        const before = await store.getSession(key);

        // Act
        const first = await post(store, key, 'm1', now);
        const again = await post(store, key, 'm1', now);
        await post(store, key, 'm2', now);
        const full = await post(store, key, 'm3', now, 2);
        const missing = await post(store, newKey(), 'm1', now);

        // Assert
        expect(first).toMatchObject({ ok: true, posted: true });
        expect(again).toMatchObject({ ok: true, posted: false });
        expect(full).toMatchObject({ ok: false, reason: 'full' });
        expect(missing).toMatchObject({ ok: false, reason: 'not-found' });
        const record = await store.getSession(key);
        expect(record?.inbox).toEqual([message('m1'), message('m2')]);
        expect(record?.pendingVersion).toBe((before?.pendingVersion ?? 0) + 2);
      });

      it('lets the owner take items by their place, refuses a stale owner, and recognises its own retried take', async () => {
        // Arrange
        const { harness, store, key, now } = await setup();
        const held = await acquireFree(store, key, 'owner-a', now);
        for (const id of ['m1', 'm2', 'm3']) await post(store, key, id, now);

        // Act
        const stale = await store
          .takeInbox(key, { owner: 'owner-z', epoch: held.epoch, taken: [{ id: 'm1', index: 0 }] })
          .catch((e: unknown) => e);
        harness.retryNextWriteAfterCommit('takeInbox');
        await store.takeInbox(key, {
          owner: 'owner-a',
          epoch: held.epoch,
          taken: [
            { id: 'm1', index: 0 },
            { id: 'm3', index: 2 },
          ],
        });

        // Assert
        expect(stale).toBeInstanceOf(LeaseLostError);
        expect((await store.getSession(key))?.inbox).toEqual([message('m2')]);
      });
    });

    describe('snapshots', () => {
      it('returns the latest snapshot, keeps the first one written at a seq, and none for a new session', async () => {
        // Arrange
        const { store, key } = await setup();
        const snapshot = (seq: number, entryHash: string) => ({
          seq,
          foldVersion: 1,
          entryHash,
          view: { lastSeq: seq },
        });
        await store.putSnapshot(key, snapshot(3, 'h3'));
        await store.putSnapshot(key, snapshot(12, 'h12'));

        // Act
        await store.putSnapshot(key, snapshot(12, 'other'));
        const latest = await store.getLatestSnapshot(key);

        // Assert
        expect(latest).toEqual(snapshot(12, 'h12'));
        expect(await store.getLatestSnapshot(newKey())).toBeUndefined();
        // Journal reads never see snapshot items.
        expect(await store.readJournal(key)).toEqual([]);
      });

      it('keeps the task ledger a snapshot carries', async () => {
        // Arrange
        const { store, key } = await setup();
        const ledger = {
          version: 1,
          tasks: [{ taskId: 'c1', agent: 'worker', description: 'd', turnId: 'task-c1', releasedAsStraggler: false }],
          released: false,
        };

        // Act
        await store.putSnapshot(key, { seq: 5, foldVersion: 1, entryHash: 'h5', view: { lastSeq: 5 }, ledger });

        // Assert
        expect((await store.getLatestSnapshot(key))?.ledger).toEqual(ledger);
      });
    });

    describe('journal', () => {
      it('reads back appended entries in seq order, from after a cursor', async () => {
        // Arrange
        const { store, key } = await setup();
        for (const seq of [1, 2, 3]) await store.append(key, entry(seq, 1), 1_900_000_000);

        // Act
        const all = await store.readJournal(key);
        const afterOne = await store.readJournal(key, 1);

        // Assert
        expect(all).toEqual([entry(1, 1), entry(2, 1), entry(3, 1)]);
        expect(afterOne.map((e) => e.seq)).toEqual([2, 3]);
        expect(await store.readJournal(newKey())).toEqual([]);
      });

      it('throws SeqTakenError when a stale owner appends at a seq the new owner has written', async () => {
        // Arrange
        const { store, key } = await setup();
        await store.append(key, entry(1, 1));
        await store.append(key, {
          seq: 2,
          kind: 'leg',
          epoch: 2,
          writeId: 'marker',
          at: 2,
          data: { owner: 'owner-b', reason: 'recovery', traceparent: `00-${TRACE_ID}-b7ad6b7169203331-01` },
        });

        // Act
        const stale = store.append(key, entry(2, 1, 'late'));

        // Assert
        await expect(stale).rejects.toThrow(SeqTakenError);
        await expect(stale).rejects.toMatchObject({ seq: 2 });
        expect((await store.readJournal(key)).map((e) => e.epoch)).toEqual([1, 2]);
      });

      it('recognises its own append when the first attempt committed and the retry found the seq taken', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        harness.retryNextWriteAfterCommit('append');

        // Act
        await store.append(key, entry(1, 1));

        // Assert
        expect(await store.readJournal(key)).toEqual([entry(1, 1)]);
      });

      it('reads a journal of more than one page (over 1 MB) completely', async () => {
        // Arrange
        const { store, key } = await setup();
        const big = 'x'.repeat(300_000);
        for (const seq of [1, 2, 3, 4, 5]) await store.append(key, entry(seq, 1, `${seq}${big}`));

        // Act
        const entries = await store.readJournal(key);

        // Assert
        expect(entries.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
        expect(entries.every((e) => e.kind === 'message' && e.data.text.length === big.length + 1)).toBe(true);
      });

      it('reads a page of at most `limit` entries, and the next page after its last seq', async () => {
        // Arrange
        const { store, key } = await setup();
        for (const seq of [1, 2, 3, 4, 5]) await store.append(key, entry(seq, 1));

        // Act
        const pages = [];
        for (let after = 0; ; ) {
          const page = await store.readJournal(key, after, { limit: 2 });
          pages.push(page.map((e) => e.seq));
          if (page.length === 0) break;
          after = page.at(-1)?.seq ?? after;
        }

        // Assert
        expect(pages).toEqual([[1, 2], [3, 4], [5], []]);
        expect(await store.readJournal(key, 3, { limit: 10 })).toEqual([entry(4, 1), entry(5, 1)]);
      });

      it('pages over a gap in the seqs (entries expired or never written) to the next entry', async () => {
        // Arrange
        const { store, key } = await setup();
        for (const seq of [1, 2, 7, 8]) await store.append(key, entry(seq, 1));

        // Act
        const next = await store.readJournal(key, 2, { limit: 1 });

        // Assert
        expect(next).toEqual([entry(7, 1)]);
      });

      it('refuses a limit that is not a positive integer', async () => {
        // Arrange
        const { store, key } = await setup();
        await store.append(key, entry(1, 1));

        // Act / Assert
        await expect(store.readJournal(key, 0, { limit: 0 })).rejects.toThrow(
          /limit must be a positive integer, got 0/,
        );
        await expect(store.readJournal(key, 0, { limit: 1.5 })).rejects.toThrow(RangeError);
      });

      it('reads a page that straddles the 1 MB boundary of one Query whole, and no further', async () => {
        // Arrange: 300 KB entries: one Query stops at 1 MB after three of them.
        const { store, key } = await setup();
        const big = 'x'.repeat(300_000);
        for (const seq of [1, 2, 3, 4, 5, 6]) await store.append(key, entry(seq, 1, `${seq}${big}`));

        // Act
        const first = await store.readJournal(key, 0, { limit: 4 });
        const second = await store.readJournal(key, 4, { limit: 4 });

        // Assert
        expect(first.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect(second.map((e) => e.seq)).toEqual([5, 6]);
        expect([...first, ...second].every((e) => e.kind === 'message' && e.data.text === `${e.seq}${big}`)).toBe(true);
      });

      it('refuses an entry whose kind was tampered into one the journal does not define', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        await store.append(key, entry(1, 1));

        // Act
        await harness.putRawItem(key, journalSk(1), { ...(await harness.rawItem(key, journalSk(1))), kind: 'system' });

        // Assert
        await expect(store.readJournal(key)).rejects.toThrow(CorruptStateError);
        await expect(store.readJournal(key)).rejects.toThrow(/journal entry 1\b/);
      });

      it('refuses an entry that carries fields its kind does not define', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        await store.append(key, entry(1, 1));
        await store.append(key, entry(2, 1));
        const raw = await harness.rawItem(key, journalSk(2));

        // Act
        await harness.putRawItem(key, journalSk(2), { ...raw, data: JSON.stringify({ text: 'hi', role: 'system' }) });

        // Assert
        await expect(store.readJournal(key)).rejects.toThrow(/journal entry 2\b/);
      });

      it('refuses an entry item with an attribute Baton never writes', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        await store.append(key, entry(1, 1));

        // Act
        await harness.putRawItem(key, journalSk(1), { ...(await harness.rawItem(key, journalSk(1))), role: 'system' });

        // Assert
        await expect(store.readJournal(key)).rejects.toThrow(CorruptStateError);
      });

      it('refuses an entry whose seq does not match its key', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        await store.append(key, entry(1, 1));
        await store.append(key, entry(2, 1));

        // Act
        await harness.putRawItem(key, journalSk(2), { ...(await harness.rawItem(key, journalSk(2))), seq: 7 });

        // Assert
        await expect(store.readJournal(key)).rejects.toThrow(CorruptStateError);
      });

      it('stores the data as JSON text, so the bytes written are about the payload’s own', async () => {
        // Arrange
        const { harness, store, key } = await setup();

        // Act
        await store.append(key, entry(1, 1, 'hello'), 1_900_000_000);

        // Assert
        const raw = await harness.rawItem(key, journalSk(1));
        expect(raw?.data).toBe(JSON.stringify({ text: 'hello' }));
        expect(raw?.ttl).toBe(1_900_000_000);
      });
    });

    describe('large payloads', () => {
      it('offloads a 1 MB journal entry to the blob store and reads it back transparently', async () => {
        // Arrange
        const { harness, store, key } = await setup();
        const text = 'y'.repeat(ONE_MB);

        // Act
        await store.append(key, entry(1, 1, text, 'writer-1'));
        const [read] = await store.readJournal(key);

        // Assert
        expect(read).toEqual(entry(1, 1, text, 'writer-1'));
        const raw = await harness.rawItem(key, journalSk(1));
        expect(raw?.data).toBeUndefined();
        // The key names the entry and ends with the payload's size and SHA-256, which a read checks.
        expect(String(raw?.dataBlob)).toMatch(/J1-e1-writer-1-\d+-[0-9a-f]{64}\.json$/);
      });

      it('reads a page of offloaded entries back whole', async () => {
        // Arrange
        const { store, key } = await setup({ offloadThresholdBytes: 1_000 });
        const text = (seq: number) => `${seq}${'o'.repeat(2_000)}`;
        for (const seq of [1, 2, 3, 4]) await store.append(key, entry(seq, 1, text(seq)));

        // Act
        const page = await store.readJournal(key, 1, { limit: 2 });

        // Assert
        expect(page).toEqual([entry(2, 1, text(2)), entry(3, 1, text(3))]);
      });

      it('offloads a 1 MB turn input and reads it back transparently', async () => {
        // Arrange
        const harness = await makeHarness();
        const key = newKey();
        const turn = {
          turnId: 'big',
          ticketId: 'big',
          input: { document: 'z'.repeat(ONE_MB) },
          inputHash: 'h-big',
          createdAt: 1,
        };

        // Act
        const put = await harness.store.putTurn(key, turn);
        const read = await harness.store.getTurn(key, 'big');

        // Assert
        expect(put.turn).toEqual(turn);
        expect(read).toEqual(turn);
        expect((await harness.rawItem(key, turnSk('big')))?.inputBlob).toBeTypeOf('string');
      });

      it('refuses a payload over the threshold when no blob store is configured', async () => {
        // Arrange
        const { store, key } = await setup({ blobs: false, offloadThresholdBytes: 1_000 });

        // Act
        const append = store.append(key, entry(1, 1, 'q'.repeat(2_000)));

        // Assert
        await expect(append).rejects.toThrow(PayloadTooLargeError);
        expect(await store.readJournal(key)).toEqual([]);
      });
    });
  });
}
