import { createHash } from 'node:crypto';
import { StepError, systemClock } from '@baton-run/baton';
import { readLedger, recordCall } from './ledger.ts';

/**
 * Simulated downstream services for the examples, the demo and the chaos suite: realistic,
 * scaled latencies and occasional transient failures. Each call received is written to the ledger.
 */
export interface ServiceOptions {
  /** Multiplies every latency (0 = instant; the demo uses 1). */
  readonly latencyScale: number;
  /** Probability that a call fails with a transient (retryable) error. */
  readonly failureRate: number;
}

export const serviceOptions = (): ServiceOptions => ({
  latencyScale: Number(process.env.BATON_DEMO_LATENCY_SCALE ?? '1'),
  failureRate: Number(process.env.BATON_DEMO_FAILURE_RATE ?? '0.05'),
});

const unit = (text: string): number => createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;

async function latency(baseMs: number, key: string, signal: AbortSignal, options: ServiceOptions): Promise<void> {
  const ms = Math.round(baseMs * options.latencyScale * (0.5 + unit(`lat:${key}`)));
  if (ms <= 0) return;
  await systemClock.sleep(ms, signal);
}

function maybeFail(service: string, options: ServiceOptions): void {
  if (Math.random() < options.failureRate)
    throw new StepError(`${service}: 503 Service Unavailable (transient)`, { retryable: true });
}

export interface CallContext {
  readonly idempotencyKey: string;
  readonly sessionId: string;
  readonly signal: AbortSignal;
}

const orders = (orderId: string) => {
  const r = unit(orderId);
  return {
    orderId,
    customerId: `C-${Math.floor(r * 9000 + 1000)}`,
    totalCents: Math.floor(r * 40_000) + 1_000,
    placedAt: '2026-11-20T10:12:00Z',
    items: Math.floor(r * 4) + 1,
    carrier: r < 0.5 ? 'UPS' : 'DHL',
  };
};

export async function lookupOrder(orderId: string, ctx: CallContext, options = serviceOptions()) {
  await latency(300, ctx.idempotencyKey, ctx.signal, options);
  recordCall({
    service: 'order-db',
    operation: 'getOrder',
    effect: 'pure',
    idempotencyKey: ctx.idempotencyKey,
    sessionId: ctx.sessionId,
  });
  maybeFail('order-db', options);
  return orders(orderId);
}

export async function trackShipment(orderId: string, ctx: CallContext, options = serviceOptions()) {
  await latency(800, ctx.idempotencyKey, ctx.signal, options);
  recordCall({
    service: 'carrier-api',
    operation: 'track',
    effect: 'pure',
    idempotencyKey: ctx.idempotencyKey,
    sessionId: ctx.sessionId,
  });
  maybeFail('carrier-api', options);
  const r = unit(`ship:${orderId}`);
  const status = r < 0.4 ? 'lost-in-transit' : r < 0.7 ? 'delivered' : 'delayed';
  return {
    orderId,
    status,
    lastScan: status === 'delivered' ? 'front door' : 'regional hub',
    daysLate: status === 'delayed' ? Math.ceil(r * 5) : 0,
  };
}

export async function scoreFraud(customerId: string, ctx: CallContext, options = serviceOptions()) {
  await latency(500, ctx.idempotencyKey, ctx.signal, options);
  recordCall({
    service: 'fraud-service',
    operation: 'score',
    effect: 'pure',
    idempotencyKey: ctx.idempotencyKey,
    sessionId: ctx.sessionId,
  });
  maybeFail('fraud-service', options);
  return { customerId, risk: Math.round(unit(`fraud:${customerId}`) * 100) / 100 };
}

/**
 * A once-only refund: like a real non-idempotent payment API, it executes every call it
 * receives. It refuses a key that reconcile declared not done, so that answer stays true.
 */
export async function issueRefund(orderId: string, amountCents: number, ctx: CallContext, options = serviceOptions()) {
  await latency(400, ctx.idempotencyKey, ctx.signal, options);
  if (readLedger().some((l) => l.operation === 'refuse:issueRefund' && l.idempotencyKey === ctx.idempotencyKey)) {
    // Recorded, so a checker can count it: a refused refund is a refund that never happens.
    recordCall({
      service: 'refunds',
      operation: 'refused:issueRefund',
      effect: 'once',
      idempotencyKey: ctx.idempotencyKey,
      sessionId: ctx.sessionId,
    });
    throw new StepError(`refunds: key ${ctx.idempotencyKey} was voided by reconcile`, { retryable: false });
  }
  recordCall({
    service: 'refunds',
    operation: 'issueRefund',
    effect: 'once',
    idempotencyKey: ctx.idempotencyKey,
    sessionId: ctx.sessionId,
  });
  return {
    refundId: `R-${createHash('sha256').update(ctx.idempotencyKey).digest('hex').slice(0, 10)}`,
    orderId,
    amountCents,
  };
}

/** Did the refund with this key happen? If not, the key is voided so it never will. */
export function reconcileRefund(
  idempotencyKey: string,
  sessionId: string,
): { done: true; refundId: string } | { done: false } {
  const done = readLedger().some((l) => l.operation === 'issueRefund' && l.idempotencyKey === idempotencyKey);
  if (done)
    return { done: true, refundId: `R-${createHash('sha256').update(idempotencyKey).digest('hex').slice(0, 10)}` };
  recordCall({ service: 'refunds', operation: 'refuse:issueRefund', effect: 'once', idempotencyKey, sessionId });
  return { done: false };
}
