import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { StreamSlotStore } from '../../lib/ports/stream-slots.ts';

const NOW = 1_700_000_000_000;
const HOLD = 30_000;
const newHolder = () => `arn:aws:iam::111122223333:role/contract-${randomUUID()}`;
const slot = (id: string, now = NOW, limit = 2) => ({ id, until: now + HOLD, now, limit });

/**
 * The StreamSlotStore contract: every implementation (the in-memory twin, DynamoDB) must pass it.
 * A caller holds at most `limit` unexpired slots; a closed or lapsed slot frees its place; callers
 * never share slots.
 */
export function describeStreamSlotsContract(name: string, store: () => StreamSlotStore) {
  describe(`StreamSlotStore contract: ${name}`, () => {
    it('admits up to the limit, refuses the next with how many are open and when one lapses', async () => {
      const slots = store();
      const holder = newHolder();
      expect((await slots.open(holder, slot('a'))).admitted).toBe(true);
      expect((await slots.open(holder, slot('b', NOW + 5))).admitted).toBe(true);
      expect(await slots.open(holder, slot('c', NOW + 10))).toEqual({ admitted: false, open: 2, freeAt: NOW + HOLD });
    });

    it('frees a place when a stream closes, and takes a second close of it as no error', async () => {
      const slots = store();
      const holder = newHolder();
      await slots.open(holder, slot('a'));
      await slots.open(holder, slot('b'));
      await slots.close(holder, 'a');
      await slots.close(holder, 'a');
      expect((await slots.open(holder, slot('c'))).admitted).toBe(true);
      expect((await slots.open(holder, slot('d'))).admitted).toBe(false);
    });

    it('frees the place of a stream whose invocation died without closing it, once its hold has passed', async () => {
      const slots = store();
      const holder = newHolder();
      await slots.open(holder, slot('died-1'));
      await slots.open(holder, slot('died-2'));
      expect((await slots.open(holder, slot('x', NOW + HOLD - 1))).admitted).toBe(false);
      expect((await slots.open(holder, slot('x', NOW + HOLD))).admitted).toBe(true);
    });

    it('keeps callers apart, and a close of an unknown caller or slot is no error', async () => {
      const slots = store();
      const [one, two] = [newHolder(), newHolder()];
      await slots.open(one, slot('a', NOW, 1));
      expect((await slots.open(one, slot('b', NOW, 1))).admitted).toBe(false);
      expect((await slots.open(two, slot('a', NOW, 1))).admitted).toBe(true);
      await slots.close(newHolder(), 'nothing');
      await slots.close(two, 'nothing');
      expect((await slots.open(two, slot('b', NOW, 1))).admitted).toBe(false);
    });

    it('admits no more than the limit when one caller opens many at once', async () => {
      const slots = store();
      const holder = newHolder();
      const opened = await Promise.all(Array.from({ length: 8 }, (_, i) => slots.open(holder, slot(`s${i}`, NOW, 3))));
      expect(opened.filter((o) => o.admitted).length).toBeLessThanOrEqual(3);
      expect(opened.filter((o) => o.admitted).length).toBeGreaterThan(0);
    });
  });
}
