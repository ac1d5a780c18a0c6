import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import type { SessionKey } from '../../../lib/core/ids.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';

const key: SessionKey = { tenant: 'default', agent: 'agent', id: 'session-1' };
const NOW = 1_000_000;

const message = (seq: number): JournalEntry => ({
  seq,
  kind: 'message',
  epoch: 1,
  writeId: `w${seq}`,
  at: NOW + seq,
  data: { text: `m${seq}` },
});

async function storeWithSession() {
  const store = new MemorySessionStore();
  await store.createSession({
    key,
    ticketId: 't',
    activeTurnId: 't',
    traceId: 'a'.repeat(32),
    now: NOW,
    sweepAt: NOW + 1,
  });
  return store;
}

describe('MemorySessionStore stale reads', () => {
  it('returns the record as it was one write ago when the lag is 1, as an eventually consistent read may', async () => {
    // Arrange
    const store = await storeWithSession();
    await store.acquire(key, { owner: 'o', until: NOW + 100, now: NOW, expectEpoch: 0, recovery: false });

    // Act
    store.staleReadLag = 1;
    const stale = await store.getSession(key);
    store.staleReadLag = 0;
    const fresh = await store.getSession(key);

    // Assert
    expect(stale).toMatchObject({ epoch: 0, state: 'queued' });
    expect(fresh).toMatchObject({ epoch: 1, state: 'running' });
  });

  it('answers as if the session did not exist yet when the lag reaches before its creation', async () => {
    const store = await storeWithSession();

    store.staleReadLag = 1;

    expect(await store.getSession(key)).toBeUndefined();
  });

  it('hides the latest appends from a stale journal read', async () => {
    // Arrange
    const store = await storeWithSession();
    for (const seq of [1, 2, 3]) await store.append(key, message(seq));

    // Act
    store.staleReadLag = 2;
    const stale = await store.readJournal(key);

    // Assert
    expect(stale.map((entry) => entry.seq)).toEqual([1]);
  });
});

describe('MemorySessionStore faults and hooks', () => {
  it('commits a write whose response is lost, then throws', async () => {
    // Arrange
    const store = await storeWithSession();
    store.injectFault('append', { kind: 'lose-response' });

    // Act
    const append = store.append(key, message(1));

    // Assert
    await expect(append).rejects.toThrow(/response lost/);
    expect(await store.readJournal(key)).toEqual([message(1)]);
  });

  it('writes nothing when a write fails before it commits, and the next write goes through', async () => {
    // Arrange
    const store = await storeWithSession();
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    store.injectFault('append', { kind: 'fail', error: throttled });

    // Act
    const first = store.append(key, message(1));

    // Assert
    await expect(first).rejects.toBe(throttled);
    expect(await store.readJournal(key)).toEqual([]);
    await store.append(key, message(1));
    expect(await store.readJournal(key)).toEqual([message(1)]);
  });

  it('awaits the beforeWrite hook, so a test can hold a writer at the door', async () => {
    // Arrange
    const store = await storeWithSession();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    store.beforeWrite = (operation) => (operation === 'append' ? gate : undefined);

    // Act
    const append = store.append(key, message(1));
    await new Promise((resolve) => setImmediate(resolve));
    const whileHeld = await store.readJournal(key);
    open();
    await append;

    // Assert
    expect(whileHeld).toEqual([]);
    expect(await store.readJournal(key)).toEqual([message(1)]);
  });

  it('counts write requests by operation and the journal bytes written', async () => {
    // Arrange
    const store = await storeWithSession();

    // Act
    await store.append(key, message(1));
    await store.append(key, message(2));

    // Assert
    expect(store.writes).toMatchObject({ createSession: 1, append: 2, acquire: 0 });
    expect(store.journalBytesWritten).toBeGreaterThan(0);
    expect(store.journalBytesWritten).toBeLessThan(1_000);
  });
});

describe('MemorySessionStore expiry', () => {
  it('deletes the items whose ttl has passed, as DynamoDB TTL would, and keeps the rest and items without one', async () => {
    // Arrange
    const store = new MemorySessionStore();
    await store.createSession({
      key,
      ticketId: 't',
      activeTurnId: 't',
      traceId: 'a'.repeat(32),
      now: NOW,
      sweepAt: NOW + 1,
      ttlSeconds: 200,
    });
    await store.append(key, message(1), 100);
    await store.append(key, message(2), 300);
    await store.append(key, message(3));

    // Act
    const removed = store.expireItems(250);

    // Assert
    expect(removed).toBe(2);
    expect(store.sortKeys(key)).toEqual(['J#000000000002', 'J#000000000003']);
    expect(await store.getSession(key)).toBeUndefined();
  });
});
