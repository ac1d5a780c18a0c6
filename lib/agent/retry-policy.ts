/** How model and tool errors that may pass are retried: backoff through delayed kicks. */
export interface RetryPolicy {
  /** Total attempts, the first included. */
  readonly attempts: number;
  readonly initialDelayMs: number;
  readonly multiplier: number;
  readonly maxDelayMs: number;
  /** ± fraction of the delay, so retries of many sessions spread out. */
  readonly jitter: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 3,
  initialDelayMs: 1_000,
  multiplier: 2,
  maxDelayMs: 60_000,
  jitter: 0.25,
};

/** The delay before attempt `failedAttempts + 1`; `random` in [0, 1). */
export function retryDelayMs(policy: RetryPolicy, failedAttempts: number, random: number): number {
  const base = Math.min(
    policy.maxDelayMs,
    policy.initialDelayMs * policy.multiplier ** Math.max(0, failedAttempts - 1),
  );
  return Math.max(0, Math.round(base * (1 + policy.jitter * (2 * random - 1))));
}

/**
 * The delay before the next attempt after `error`: the policy's backoff, or the provider's
 * retry-after when that is longer (an error's `retryAfterMs`, or its cause's).
 */
export function retryDelayAfter(policy: RetryPolicy, failedAttempts: number, random: number, error: unknown): number {
  return Math.max(retryDelayMs(policy, failedAttempts, random), retryAfterOf(error) ?? 0);
}

function retryAfterOf(error: unknown): number | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    const ms = (e as { retryAfterMs?: unknown }).retryAfterMs;
    if (typeof ms === 'number' && Number.isFinite(ms) && ms > 0) return ms;
  }
  return undefined;
}

export const resolvePolicy = (...layers: (Partial<RetryPolicy> | undefined)[]): RetryPolicy =>
  Object.assign({}, DEFAULT_RETRY_POLICY, ...layers.filter(Boolean));
