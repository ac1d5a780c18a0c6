import { describe, expect, it } from 'vitest';
import {
  claimSlot,
  holderKey,
  leaveSlot,
  limitOf,
  NO_SLOTS,
  parseTenantLimits,
  rateScopes,
  takeToken,
} from '../../../lib/core/tenant-limits.ts';

const at = (n: number) => ({ at: n, epoch: 1 });

describe('tenant limits', () => {
  it('parses a limits map and names the tenant and field of a bad value', () => {
    expect(parseTenantLimits('{"acme":{"maxRunning":10},"*":{"modelCallsPerMinute":120}}', 'X')).toEqual({
      acme: { maxRunning: 10 },
      '*': { modelCallsPerMinute: 120 },
    });
    expect(() => parseTenantLimits('{"acme":{"maxRunning":0}}', 'BATON_TENANT_LIMITS')).toThrow(
      /^BATON_TENANT_LIMITS is invalid: acme\.maxRunning: /,
    );
    expect(() => parseTenantLimits('{"acme":{"maxRuning":3}}', 'X')).toThrow(/acme: Unrecognized key: "maxRuning"/);
    expect(() => parseTenantLimits('{acme', 'X')).toThrow(/^X is not JSON/);
  });

  it("applies a tenant's own entry, else the * entry, else none", () => {
    const limits = { acme: { maxRunning: 2 }, '*': { maxRunning: 5 } };
    expect(limitOf(limits, 'acme')).toEqual({ maxRunning: 2 });
    expect(limitOf(limits, 'zeta')).toEqual({ maxRunning: 5 });
    expect(limitOf({ acme: { maxRunning: 2 } }, 'zeta')).toBeUndefined();
    expect(limitOf(undefined, 'acme')).toBeUndefined();
  });

  it('reads a holder name back only when it is agent/session', () => {
    expect(holderKey('t', 'agent/abc')).toEqual({ tenant: 't', agent: 'agent', id: 'abc' });
    expect(holderKey('t', '/abc')).toBeUndefined();
    expect(holderKey('t', 'agent/')).toBeUndefined();
    expect(holderKey('t', 'noslash')).toBeUndefined();
  });

  it('does not let a new claim pass an older waiter when a raised limit makes room', () => {
    // Arrange: one running, one waiting since 5, at a limit of 1; the limit is now 2.
    const slots = { running: { 'a/r': at(1) }, waiting: { 'a/old': at(5) } };

    // Act: a claim accepted later (9) comes in with the limit at 2.
    const claimed = claimSlot(slots, { holder: 'a/new', acceptedAt: 9, epoch: 1, now: 100, limit: 2 });

    // Assert: the older waiter got the room and is to be kicked; the new one waits first in line.
    expect(claimed.result).toEqual({
      granted: false,
      place: 1,
      running: { 'a/r': at(1), 'a/old': { at: 100, epoch: 1 } },
      promoted: ['a/old'],
    });
  });

  it('keeps every running slot when the limit is lowered, and grants none until under it', () => {
    const slots = { running: { 'a/1': at(1), 'a/2': at(2), 'a/3': at(3) }, waiting: {} };
    const left = leaveSlot(slots, { holder: 'a/1', epoch: 1, now: 10, limit: 1 });
    expect(Object.keys(left.slots.running)).toEqual(['a/2', 'a/3']);
    const claimed = claimSlot(left.slots, { holder: 'a/4', acceptedAt: 4, epoch: 1, now: 10, limit: 1 });
    expect(claimed.result.granted).toBe(false);
  });

  it('writes nothing for a claim of a slot the same leg holds, or a leave of what is not held', () => {
    const slots = { running: { 'a/1': { at: 1, epoch: 4 } }, waiting: {} };
    expect(claimSlot(slots, { holder: 'a/1', acceptedAt: 0, epoch: 4, now: 9, limit: 1 }).changed).toBe(false);
    expect(claimSlot(slots, { holder: 'a/1', acceptedAt: 0, epoch: 5, now: 9, limit: 1 }).changed).toBe(true);
    expect(leaveSlot(NO_SLOTS, { holder: 'a/1', epoch: 9, now: 9, limit: 1 }).changed).toBe(false);
  });

  it('refills a bucket by time up to its burst, and says how long the next token is', () => {
    const rule = { perMinute: 30, burst: 2 };
    const first = takeToken(undefined, rule, 0);
    expect(first).toEqual({ ok: true, bucket: { tokens: 1, at: 0 } });
    const second = takeToken(first.ok ? first.bucket : undefined, rule, 0);
    expect(second).toEqual({ ok: true, bucket: { tokens: 0, at: 0 } });
    expect(takeToken({ tokens: 0, at: 0 }, rule, 500)).toEqual({ ok: false, waitMs: 1_500 });
    expect(takeToken({ tokens: 0, at: 0 }, rule, 2_000)).toEqual({ ok: true, bucket: { tokens: 0, at: 2_000 } });
    // An hour idle saves up only the burst.
    expect(takeToken({ tokens: 0, at: 0 }, rule, 3_600_000)).toEqual({
      ok: true,
      bucket: { tokens: 1, at: 3_600_000 },
    });
    // A worker whose clock is behind the bucket's refills nothing rather than draining it.
    expect(takeToken({ tokens: 0.5, at: 10_000 }, rule, 9_000)).toEqual({ ok: false, waitMs: 1_000 });
  });

  it('takes a token from the tenant-wide bucket and from the model’s own when both apply', () => {
    const limit = { modelCallsPerMinute: 100, modelCallsPerMinuteByModel: { fast: 20 } };
    expect(rateScopes(limit, 'fast').map((s) => s.scope)).toEqual(['*', 'fast']);
    expect(rateScopes(limit, 'slow').map((s) => s.scope)).toEqual(['*']);
    expect(rateScopes(limit, 'fast')[1]?.rule).toEqual({ perMinute: 20, burst: 4 });
    expect(rateScopes(undefined, 'fast')).toEqual([]);
  });
});
