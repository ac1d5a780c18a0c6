import { describe, expect, it } from 'vitest';
import { journalSk, keyOfPk, pkOf } from '../../../lib/adapters/session-item-codec.ts';
import { sweepShardOf } from '../../../lib/adapters/sweep-shard.ts';
import { SWEEP_SHARDS } from '../../../lib/ports/session-store.ts';

describe('session item keys', () => {
  it('parses a session key back out of its pk, even when the id contains the separator', () => {
    const key = { tenant: 'acme', agent: 'order-investigator', id: 'a#b#c' };

    expect(keyOfPk(pkOf(key))).toEqual(key);
  });

  it('refuses a pk that is not a session pk', () => {
    expect(keyOfPk('X#a#b#c')).toBeUndefined();
    expect(keyOfPk('S#only-tenant')).toBeUndefined();
  });

  it('pads journal sort keys so that string order is seq order', () => {
    const sks = [10, 9, 100, 1].map(journalSk).sort();

    expect(sks).toEqual([journalSk(1), journalSk(9), journalSk(10), journalSk(100)]);
    expect(journalSk(42)).toBe('J#000000000042');
  });
});

describe('sweepShardOf', () => {
  it('puts a session in the same shard every time, within the shard count', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `session-${i}`);

    const shards = ids.map(sweepShardOf);

    expect(ids.map(sweepShardOf)).toEqual(shards);
    expect(shards.every((shard) => shard >= 0 && shard < SWEEP_SHARDS)).toBe(true);
    expect(new Set(shards).size).toBe(SWEEP_SHARDS);
  });
});
