import { describe, expect, it } from 'vitest';
import { hasWork, leaseUntil, mustReadRecord, planAcquire, renewIntervalMs } from '../../../lib/core/lease.ts';

const NOW = 100_000;
const free = { state: 'queued' as const, epoch: 3, pendingVersion: 1, seenVersion: 0, cancelRequested: false };
const HANDOFF = '0123456789abcdef0123456789abcdef';
const held = { ...free, state: 'running' as const, owner: 'a', until: NOW + 10_000, handoff: HANDOFF };

describe('lease math', () => {
  it('takes a free lease when there is work', () => {
    expect(planAcquire(free, { reason: 'first' }, NOW)).toEqual({ kind: 'acquire', recovery: false });
  });

  it('drops a kick for a lease that is fresh and held by someone else', () => {
    expect(planAcquire(held, { reason: 'first' }, NOW)).toEqual({ kind: 'drop', why: 'held' });
    expect(planAcquire(held, { reason: 'continuation', fromEpoch: 2, handoff: HANDOFF }, NOW)).toEqual({
      kind: 'drop',
      why: 'held',
    });
  });

  it('drops a continuation for the current epoch without the nonce its predecessor stored, as forged', () => {
    expect(planAcquire(held, { reason: 'continuation', fromEpoch: 3 }, NOW)).toEqual({
      kind: 'drop',
      why: 'wrong-handoff',
    });
    expect(planAcquire(held, { reason: 'continuation', fromEpoch: 3, handoff: 'f'.repeat(32) }, NOW)).toEqual({
      kind: 'drop',
      why: 'wrong-handoff',
    });
    expect(planAcquire({ ...held, handoff: undefined }, { reason: 'continuation', fromEpoch: 3 }, NOW)).toEqual({
      kind: 'drop',
      why: 'wrong-handoff',
    });
  });

  it('takes over from a predecessor that yielded to this continuation', () => {
    expect(planAcquire(held, { reason: 'continuation', fromEpoch: 3, handoff: HANDOFF }, NOW)).toEqual({
      kind: 'acquire',
      recovery: false,
      expectOwner: 'a',
    });
  });

  it('recovers an expired lease', () => {
    expect(planAcquire({ ...held, until: NOW - 1 }, { reason: 'recovery' }, NOW)).toEqual({
      kind: 'acquire',
      recovery: true,
      expectOwner: 'a',
    });
  });

  it('drops every kick for a finished session', () => {
    for (const state of ['completed', 'failed', 'cancelled'] as const) {
      expect(planAcquire({ ...free, state }, { reason: 'first' }, NOW)).toEqual({ kind: 'drop', why: 'finished' });
    }
  });

  it('wakes an idle or waiting session only for a new event, a cancel or a due timer', () => {
    const idle = { ...free, state: 'idle' as const, pendingVersion: 4, seenVersion: 4 };
    expect(hasWork(idle, { reason: 'first' }, NOW)).toBe(false);
    expect(hasWork({ ...idle, pendingVersion: 5 }, { reason: 'wake' }, NOW)).toBe(true);
    expect(hasWork({ ...idle, cancelRequested: true }, { reason: 'cancel' }, NOW)).toBe(true);
    const waiting = { ...idle, state: 'waiting' as const, sweepAt: NOW + 1 };
    expect(hasWork(waiting, { reason: 'retry' }, NOW)).toBe(false);
    expect(hasWork(waiting, { reason: 'retry' }, NOW + 1)).toBe(true);
  });

  it('renews three times per TTL', () => {
    expect(renewIntervalMs(30_000)).toBe(10_000);
  });

  describe('the inbox look at a step boundary', () => {
    const TTL = 30_000;
    // Just renewed: the lease in hand runs a whole TTL from the renewal that brought the record.
    const renewedAt = (at: number) => ({ readAt: at, leaseUntil: at + TTL, leaseTtlMs: TTL, lookMs: 100 });

    it('takes the record in hand while it is younger than the look interval', () => {
      expect(mustReadRecord({ ...renewedAt(NOW), now: NOW })).toBe(false);
      expect(mustReadRecord({ ...renewedAt(NOW), now: NOW + 99 })).toBe(false);
    });

    it('reads once the record in hand is as old as the look interval', () => {
      expect(mustReadRecord({ ...renewedAt(NOW), now: NOW + 100 })).toBe(true);
    });

    it('reads at every boundary with no look interval', () => {
      expect(mustReadRecord({ ...renewedAt(NOW), lookMs: 0, now: NOW })).toBe(true);
    });

    it('reads at every boundary while the heartbeat is behind, however fresh the last read', () => {
      // Renewed at NOW, renewals failing since; a read at NOW + 16 s found the lease still held.
      const behind = { ...renewedAt(NOW), readAt: NOW + 16_000 };
      expect(mustReadRecord({ ...behind, now: NOW + 16_001 })).toBe(true);
      // On schedule (a renewal every TTL/3) more than half a TTL is always left.
      expect(mustReadRecord({ ...renewedAt(NOW), readAt: NOW + 9_990, now: NOW + 9_999 })).toBe(false);
    });
  });

  it('ends a new lease at the sweepAt already set when it lies within a tenth of the TTL of now + TTL', () => {
    const ttl = 30_000;
    // The enqueue set sweepAt a TTL ahead 200 ms before the kick came: the lease keeps it (no index write).
    expect(leaseUntil({ sweepAt: NOW - 200 + ttl }, NOW, ttl)).toBe(NOW - 200 + ttl);
    expect(leaseUntil({ sweepAt: NOW + ttl + 3_000 }, NOW, ttl)).toBe(NOW + ttl + 3_000);
    // Too far off (a timer, an old expiry, a late kick), or none: a full TTL from now.
    expect(leaseUntil({ sweepAt: NOW + ttl - 3_001 }, NOW, ttl)).toBe(NOW + ttl);
    expect(leaseUntil({ sweepAt: NOW - 1 }, NOW, ttl)).toBe(NOW + ttl);
    expect(leaseUntil({ sweepAt: NOW + 60 * ttl }, NOW, ttl)).toBe(NOW + ttl);
    expect(leaseUntil({}, NOW, ttl)).toBe(NOW + ttl);
  });
});
