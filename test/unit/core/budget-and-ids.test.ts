import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, retryDelayMs } from '../../../lib/agent/retry-policy.ts';
import { budgetMs, onceOnlyFitsLease, stepCanEverFit, stepFits } from '../../../lib/core/budget.ts';
import { canonicalJson, deriveSessionId, hashJson, idempotencyKey } from '../../../lib/core/ids.ts';
import {
  formatTraceparent,
  parseTraceparent,
  traceIdFromXrayHeader,
  xrayHeaderFor,
} from '../../../lib/core/trace-context.ts';

describe('budget math', () => {
  it('keeps the reserve out of the budget and never goes negative', () => {
    expect(budgetMs(10_000, 3_000)).toBe(7_000);
    expect(budgetMs(1_000, 3_000)).toBe(0);
  });

  it('lets a step start only when its declared maximum fits', () => {
    expect(stepFits(7_000, 10_000, 3_000)).toBe(true);
    expect(stepFits(7_001, 10_000, 3_000)).toBe(false);
  });

  it('refuses a step that could never fit in one invocation', () => {
    expect(stepCanEverFit(50_000, 60_000, 5_000)).toBe(true);
    expect(stepCanEverFit(55_000, 60_000, 5_000)).toBe(false);
  });

  it('starts a once-only call only when the lease outlives it with room for clock skew', () => {
    expect(onceOnlyFitsLease(20_000, 10_000, 8_000)).toBe(true);
    expect(onceOnlyFitsLease(20_000, 10_000, 9_500)).toBe(false);
  });
});

describe('identities', () => {
  it('derives the same session id for the same ticket, and different ids otherwise', () => {
    const id = deriveSessionId('default', 'order-investigator', 'T-1');
    expect(id).toMatch(/^[a-z2-7]{26}$/);
    expect(deriveSessionId('default', 'order-investigator', 'T-1')).toBe(id);
    expect(deriveSessionId('other', 'order-investigator', 'T-1')).not.toBe(id);
    expect(deriveSessionId('default', 'long-haul', 'T-1')).not.toBe(id);
  });

  it('hashes JSON independently of key order', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe('{"a":[2,{"c":4,"d":3}],"b":1}');
    expect(hashJson({ a: 1, b: 2 })).toBe(hashJson({ b: 2, a: 1 }));
    expect(hashJson({ a: 1 })).not.toBe(hashJson({ a: 2 }));
  });

  it('gives a tool call the same idempotency key on every re-run', () => {
    const key = { tenant: 't', agent: 'a', id: 's' };
    expect(idempotencyKey(key, 7, 'call-1')).toBe(idempotencyKey({ ...key }, 7, 'call-1'));
    expect(idempotencyKey(key, 7, 'call-1')).not.toBe(idempotencyKey(key, 9, 'call-1'));
  });
});

describe('trace context', () => {
  it('round-trips a W3C traceparent and maps it onto an X-Ray header of the same trace', () => {
    const header = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const ctx = parseTraceparent(header)!;
    expect(formatTraceparent(ctx)).toBe(header);
    const xray = xrayHeaderFor(ctx);
    expect(xray).toBe('Root=1-0af76519-16cd43dd8448eb211c80319c;Parent=b7ad6b7169203331;Sampled=1');
    expect(traceIdFromXrayHeader(xray)).toBe(ctx.traceId);
  });

  it('refuses malformed and all-zero trace ids', () => {
    expect(parseTraceparent('00-xyz-b7ad6b7169203331-01')).toBeUndefined();
    expect(parseTraceparent('00-00000000000000000000000000000000-b7ad6b7169203331-01')).toBeUndefined();
  });
});

describe('retry backoff', () => {
  it('doubles from the initial delay up to the cap, within the jitter', () => {
    const mid = 0.5; // no jitter at the midpoint
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, mid)).toBe(1_000);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 2, mid)).toBe(2_000);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 10, mid)).toBe(60_000);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, 0)).toBe(750);
    expect(retryDelayMs(DEFAULT_RETRY_POLICY, 1, 0.9999)).toBeLessThanOrEqual(1_250);
  });
});
