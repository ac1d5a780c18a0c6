import { describe, expect, it } from 'vitest';
import { MemoryBlobStore } from '../../../lib/adapters/memory/memory-blob-store.ts';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { journalSk } from '../../../lib/adapters/session-item-codec.ts';
import { CorruptStateError } from '../../../lib/core/errors.ts';
import type { SessionKey } from '../../../lib/core/ids.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';

const NOW = 1_000_000;
const victim: SessionKey = { tenant: 'acme', agent: 'agent', id: 'victim' };
const thief: SessionKey = { tenant: 'evil', agent: 'agent', id: 'thief' };

const big = (seq: number, text: string): JournalEntry => ({
  seq,
  kind: 'message',
  epoch: 1,
  writeId: `w${seq}`,
  at: NOW + seq,
  data: { text },
});

/** A store that offloads anything over 100 bytes, with one large journal entry in each of two sessions. */
async function twoSessions() {
  const blobs = new MemoryBlobStore();
  const store = new MemorySessionStore({ blobs, offloadThresholdBytes: 100 });
  for (const key of [victim, thief]) {
    await store.createSession({
      key,
      ticketId: 't',
      activeTurnId: 't',
      traceId: 'a'.repeat(32),
      now: NOW,
      sweepAt: NOW,
    });
    await store.append(key, big(1, `${key.tenant} secret `.repeat(20)));
  }
  const blobOf = (key: SessionKey) => store.rawItem(key, journalSk(1))?.dataBlob as string;
  return { blobs, store, blobOf };
}

describe('payload pointers in stored items', () => {
  it('refuse a journal entry whose pointer names a blob of another session', async () => {
    // Arrange: the thief's item is tampered to point at the victim's payload.
    const { store, blobOf } = await twoSessions();
    store.putRawItem(thief, journalSk(1), { ...store.rawItem(thief, journalSk(1)), dataBlob: blobOf(victim) });

    // Act
    const read = store.readJournal(thief, 0);

    // Assert
    await expect(read).rejects.toThrow(CorruptStateError);
    await expect(read).rejects.toThrow(/outside its session/);
  });

  it('refuse a blob whose content does not match the hash its pointer carries', async () => {
    const { blobs, store, blobOf } = await twoSessions();
    const body = JSON.stringify({ text: `acme secret `.repeat(20) }).replace('secret', 'forged');
    blobs.tamper(blobOf(victim), body);

    await expect(store.readJournal(victim, 0)).rejects.toThrow(/does not match the content hash/);
  });

  it('refuse a pointer that carries no content hash or size', async () => {
    const { blobs, store, blobOf } = await twoSessions();
    const bare = `${blobOf(victim).replace(/-\d+-[0-9a-f]{64}\.json$/, '')}.json`;
    await blobs.put(bare, JSON.stringify({ text: 'planted' }));
    store.putRawItem(victim, journalSk(1), { ...store.rawItem(victim, journalSk(1)), dataBlob: bare });

    await expect(store.readJournal(victim, 0)).rejects.toThrow(/carries no content hash/);
  });

  it('read no more of a blob than its pointer declares', async () => {
    // Arrange: a blob swapped for a much larger one under the same key.
    const { blobs, store, blobOf } = await twoSessions();
    blobs.tamper(blobOf(victim), 'x'.repeat(1_000_000));

    // Act, Assert
    await expect(store.readJournal(victim, 0)).rejects.toThrow(/is larger than the \d+ bytes its pointer declares/);
  });
});
