import { describe, expect, it } from 'vitest';
import { PayloadOffload } from '../../../lib/adapters/payload-offload.ts';
import { decodeTurn, encodeTurn, journalSk, keyOfPk, pkOf } from '../../../lib/adapters/session-item-codec.ts';
import { sweepShardOf } from '../../../lib/adapters/sweep-shard.ts';
import { CorruptStateError } from '../../../lib/core/errors.ts';
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

describe('a turn item with spend limits', () => {
  const key = { tenant: 'acme', agent: 'desk', id: 'S1' };
  const turn = { turnId: 't1', ticketId: 't1', input: 'hi', inputHash: 'h', createdAt: 1 };

  it('keeps the limits through encode and decode', async () => {
    const offload = new PayloadOffload();
    const item = await encodeTurn(key, { ...turn, limits: { maxModelCallsPerTurn: 3, onBudget: 'ask' } }, offload);
    expect((await decodeTurn(item, key, offload)).limits).toEqual({ maxModelCallsPerTurn: 3, onBudget: 'ask' });
  });

  it('refuses stored limits that fail validation, naming the turn', async () => {
    const offload = new PayloadOffload();
    const item = { ...(await encodeTurn(key, turn, offload)), limits: JSON.stringify({ maxTokensPerTurn: -5 }) };
    await expect(decodeTurn(item, key, offload)).rejects.toThrow(CorruptStateError);
    await expect(decodeTurn(item, key, offload)).rejects.toThrow(/turn t1 .* limits: maxTokensPerTurn/);
  });
});
