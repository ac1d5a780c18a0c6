import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { SessionKey } from '../../lib/core/ids.ts';
import type { LiveTextStore } from '../../lib/ports/live-text.ts';
import type { SessionStore } from '../../lib/ports/session-store.ts';

export interface LiveTextHarness {
  readonly live: LiveTextStore;
  /** The session store beside it (the same table, for DynamoDB). */
  readonly store: SessionStore;
}

const NOW = 1_700_000_000_000;
const LATER = NOW + 60_000;
const newKey = (): SessionKey => ({ tenant: 'contract', agent: 'live-agent', id: `s-${randomUUID()}` });
const chunk = (seq: number, index: number, text = `chunk ${index}`) => ({ seq, turnId: 'turn-1', index, text });

/**
 * The LiveTextStore contract: every implementation (the in-memory twin, DynamoDB) must pass it.
 * Chunks are read per response in index order, from a position, until they expire; they never
 * mix with another response or session, and never show in the journal.
 */
export function describeLiveTextContract(name: string, harness: () => LiveTextHarness | Promise<LiveTextHarness>) {
  describe(`LiveTextStore contract: ${name}`, () => {
    it('reads a response’s chunks in index order, after a position', async () => {
      const { live } = await harness();
      const key = newKey();
      for (const index of [2, 0, 1]) await live.put(key, chunk(7, index), LATER);
      expect(await live.read(key, 7, { now: NOW })).toEqual([chunk(7, 0), chunk(7, 1), chunk(7, 2)]);
      expect(await live.read(key, 7, { after: 0, now: NOW })).toEqual([chunk(7, 1), chunk(7, 2)]);
      expect(await live.read(key, 7, { after: 2, now: NOW })).toEqual([]);
    });

    it('keeps responses and sessions apart', async () => {
      const { live } = await harness();
      const key = newKey();
      const other = { ...key, id: `${key.id}-2` };
      await live.put(key, chunk(7, 0, 'seven'), LATER);
      await live.put(key, chunk(70, 0, 'seventy'), LATER);
      await live.put(other, chunk(7, 0, 'other session'), LATER);
      expect(await live.read(key, 7, { now: NOW })).toEqual([chunk(7, 0, 'seven')]);
      expect(await live.read(key, 70, { now: NOW })).toEqual([chunk(70, 0, 'seventy')]);
      expect(await live.read(key, 8, { now: NOW })).toEqual([]);
    });

    it('replaces a chunk written again under its index (a writer’s retry)', async () => {
      const { live } = await harness();
      const key = newKey();
      await live.put(key, chunk(3, 0, 'Hel'), LATER);
      await live.put(key, chunk(3, 0, 'Hello'), LATER);
      expect(await live.read(key, 3, { now: NOW })).toEqual([chunk(3, 0, 'Hello')]);
    });

    it('hides chunks once they expire', async () => {
      const { live } = await harness();
      const key = newKey();
      await live.put(key, chunk(3, 0), NOW + 1_000);
      await live.put(key, chunk(3, 1), NOW + 5_000);
      expect(await live.read(key, 3, { now: NOW + 999 })).toHaveLength(2);
      expect(await live.read(key, 3, { now: NOW + 1_000 })).toEqual([chunk(3, 1)]);
      expect(await live.read(key, 3, { now: NOW + 5_000 })).toEqual([]);
    });

    it('round-trips a large chunk and text of any characters', async () => {
      const { live } = await harness();
      const key = newKey();
      const text = `${'x'.repeat(99_000)} — ünïcødé 🚀 "quotes" \n newlines`;
      await live.put(key, chunk(1, 0, text), LATER);
      expect(await live.read(key, 1, { now: NOW })).toEqual([chunk(1, 0, text)]);
    });

    it('never shows in the journal beside it', async () => {
      const { live, store } = await harness();
      const key = newKey();
      await store.createSession({
        key,
        ticketId: 't',
        activeTurnId: 'turn-1',
        traceId: '0af7651916cd43dd8448eb211c80319c',
        now: NOW,
        sweepAt: LATER,
      });
      await store.append(key, {
        seq: 1,
        kind: 'message',
        epoch: 1,
        writeId: 'w-1',
        at: NOW,
        turnId: 'turn-1',
        data: { text: 'hi' },
      });
      await live.put(key, chunk(2, 0, 'partial'), LATER);
      expect((await store.readJournal(key)).map((e) => e.seq)).toEqual([1]);
      expect(await store.readJournal(key, 1)).toEqual([]);
    });
  });
}
