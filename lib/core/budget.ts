/**
 * Budget math: what is left of an invocation's time, minus a reserve to checkpoint and hand off.
 * Temporal's lambda worker does the same: work time = remaining − reserve, refuse below a minimum.
 */

import { RUNTIME_DEFAULTS } from './resources.ts';

/** Time kept back at the end of an invocation to append, send the continuation and release. */
export const DEFAULT_RESERVE_MS = RUNTIME_DEFAULTS.reserveMs;

/** Fixed cost of a leg (acquire, read, marker, release) the definition check accounts for. */
export const LEG_OVERHEAD_MS = 1_000;

/** Clock skew tolerated between invocations when a lease is judged. */
export const MAX_CLOCK_SKEW_MS = 1_000;

export const budgetMs = (remainingMs: number, reserveMs: number): number => Math.max(0, remainingMs - reserveMs);

/** A step whose declared maximum does not fit in what is left must continue elsewhere. */
export const stepFits = (maxDurationMs: number, remainingMs: number, reserveMs: number): boolean =>
  maxDurationMs <= budgetMs(remainingMs, reserveMs);

/** Could a step of this size ever fit in one invocation? Checked at definition and deploy time. */
export const stepCanEverFit = (maxDurationMs: number, timeoutMs: number, reserveMs: number): boolean =>
  maxDurationMs <= timeoutMs - reserveMs - LEG_OVERHEAD_MS;

/**
 * A once-only call starts only when the lease, just renewed, outlives the call: otherwise a
 * recovery could start while it still runs, and the side effect could happen twice.
 */
export const onceOnlyFitsLease = (leaseUntil: number, now: number, maxDurationMs: number): boolean =>
  leaseUntil - now >= maxDurationMs + MAX_CLOCK_SKEW_MS;

/** A renewal's round trip: the lease a once-only call starts with is this much shorter than the TTL. */
export const RENEWAL_ALLOWANCE_MS = 250;

/**
 * Could a once-only call of this size ever start? The cold-start check, stated with the runtime's
 * own test on a lease just renewed, so the two cannot disagree.
 */
export const onceOnlyCanEverFit = (maxDurationMs: number, leaseTtlMs: number): boolean =>
  onceOnlyFitsLease(leaseTtlMs - RENEWAL_ALLOWANCE_MS, 0, maxDurationMs);
