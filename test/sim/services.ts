import { createHash } from 'node:crypto';
import { StepError } from '../../lib/core/errors.ts';
import { canonicalJson } from '../../lib/core/ids.ts';
import type { SimClock } from './clock.ts';
import type { FaultProfile } from './faults.ts';
import type { Rng } from './rng.ts';
import type { Scheduler } from './scheduler.ts';

/**
 * The downstream services the simulated agents call, in memory (the examples' simulated services
 * append to a ledger file and use real time and Math.random; these use the simulator's clock and
 * seed). The refund service is once-only like a real payment API: it executes every call it
 * receives, so a repeat shows up as a second execution of one key, and it refuses a key that
 * reconcile declared not done, so that answer stays true.
 */

/** One once-only call the refund service executed. */
export interface Execution {
  readonly key: string;
  readonly sessionId: string;
  /** The call id inside the key (tenant:agent:session:modelSeq:callId[:rN]). */
  readonly callId: string;
  readonly tool: string;
  readonly input: unknown;
  readonly at: number;
}

export interface CallContext {
  readonly idempotencyKey: string;
  readonly sessionId: string;
  readonly signal: AbortSignal;
}

/** A number in [0, 1) from a text: the same order always has the same fate. */
export const unit = (text: string): number => createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;

export class Downstream {
  readonly executions: Execution[] = [];
  /** Voided keys, with the actor whose reconcile voided each. */
  readonly voided = new Map<string, number>();
  /**
   * Calls refused because reconcile had voided their key: effects that will never happen. `stale`:
   * the caller started before the leg that voided the key (an owner paused past its lease that
   * goes on to call): the refusal is the protocol's safety net, not a lost effect.
   */
  readonly refused: { key: string; sessionId: string; stale: boolean }[] = [];
  /** Every reconcile verdict given, by key. */
  readonly verdicts: { key: string; verdict: string }[] = [];

  constructor(
    private readonly sim: Scheduler,
    private readonly clock: SimClock,
    private readonly rng: Rng,
    private readonly faults: () => FaultProfile,
  ) {}

  /** A pure read of some service: latency on the simulated clock, sometimes a transient error. */
  async read<T>(service: string, ctx: CallContext, latencyMs: number, answer: () => T): Promise<T> {
    await this.clock.sleep(Math.round(latencyMs * (0.5 + unit(`lat:${ctx.idempotencyKey}`))), ctx.signal);
    await this.sim.gate(`svc.${service}`, 'service');
    if (this.rng.chance(this.faults().serviceError))
      throw new StepError(`${service}: 503 Service Unavailable (transient)`, { retryable: true });
    return answer();
  }

  /**
   * A once-only refund. Two gates: before it reaches the service (a crash there: it never ran)
   * and before its answer reaches the caller (a crash there: it ran, and the caller never knew).
   */
  async refund(tool: string, input: { orderId: string; amountCents: number }, ctx: CallContext) {
    await this.clock.sleep(Math.round(200 * (0.5 + unit(`lat:${ctx.idempotencyKey}`))), ctx.signal);
    await this.sim.gate(`svc.refund(${shortKey(ctx.idempotencyKey)})`, 'service');
    const voider = this.voided.get(ctx.idempotencyKey);
    if (voider !== undefined) {
      const caller = this.sim.current()?.id ?? 0;
      this.refused.push({ key: ctx.idempotencyKey, sessionId: ctx.sessionId, stale: caller < voider });
      throw new StepError(`refunds: key ${ctx.idempotencyKey} was voided by reconcile`, { retryable: false });
    }
    this.executions.push({
      key: ctx.idempotencyKey,
      sessionId: ctx.sessionId,
      callId: callIdOf(ctx.idempotencyKey),
      tool,
      input,
      at: this.clock.now(),
    });
    await this.sim.gate(`svc.refunded(${shortKey(ctx.idempotencyKey)})`, 'service');
    return { refundId: refundIdOf(ctx.idempotencyKey), orderId: input.orderId, amountCents: input.amountCents };
  }

  /** Did the refund with this key happen? notDone voids the key; sometimes the service cannot tell. */
  async reconcile(
    key: string,
    signal: AbortSignal,
  ): Promise<{ verdict: 'done'; output: unknown } | { verdict: 'notDone' } | { verdict: 'unknown' }> {
    // Asking the downstream takes time too, under the leg's signal as every call's does.
    await this.clock.sleep(Math.round(300 * (0.5 + unit(`rec:${key}`))), signal);
    await this.sim.gate(`svc.reconcile(${shortKey(key)})`, 'service');
    const done = this.executions.some((e) => e.key === key);
    const verdict = done
      ? ({ verdict: 'done', output: { refundId: refundIdOf(key) } } as const)
      : this.rng.chance(this.faults().reconcileUnknown)
        ? ({ verdict: 'unknown' } as const)
        : ({ verdict: 'notDone' } as const);
    if (verdict.verdict === 'notDone') this.voided.set(key, this.sim.current()?.id ?? 0);
    this.verdicts.push({ key, verdict: verdict.verdict });
    return verdict;
  }

  executed(key: string): boolean {
    return this.executions.some((e) => e.key === key);
  }
}

export const refundIdOf = (key: string): string => `R-${createHash('sha256').update(key).digest('hex').slice(0, 10)}`;

/** The call id inside an idempotency key: tenant:agent:session:modelSeq:callId[:rN]. */
export const callIdOf = (key: string): string => key.split(':')[4] ?? '';

const shortKey = (key: string): string => {
  const parts = key.split(':');
  return `${(parts[2] ?? '').slice(0, 6)}:${parts.slice(3).join(':')}`;
};

/** The digest an approval and an execution are compared by. */
export const inputDigest = (input: unknown): string =>
  createHash('sha256').update(canonicalJson(input)).digest('hex').slice(0, 16);
