import { describe, expect, it } from 'vitest';
import { Verdict } from '../../../examples/order-investigation/agent.ts';
import type { LedgerLine } from '../../../examples/simulated/ledger.ts';
import type { Result } from '../../../lib/core/messages.ts';
import { demoBatch } from '../../../lib/demo/demo-batch.ts';
import { percentile, type SummaryInput, summarize } from '../../../lib/demo/demo-summary.ts';
import { ProgressTracker, type TicketProgress } from '../../../lib/demo/progress-tracker.ts';
import type { ReceivedResult } from '../../../lib/demo/results-reader.ts';
import type { SessionStore } from '../../../lib/ports/session-store.ts';

const SUBMITTED_AT = 1_000;

function ticketsOf(count: number): TicketProgress[] {
  const tracker = new ProgressTracker({} as SessionStore);
  return demoBatch(count, 'demo-test').map((ticket) => {
    const progress = tracker.add(ticket, SUBMITTED_AT);
    progress.state = 'completed';
    progress.legs = 1;
    progress.finishedAt = SUBMITTED_AT + 2_000;
    return progress;
  });
}

function resultFor(t: TicketProgress, output: unknown, status: Result['status'] = 'completed'): ReceivedResult {
  const result: Result = {
    v: 1,
    ticketId: t.ticket.ticketId,
    tenant: t.key.tenant,
    agent: t.key.agent,
    sessionId: t.key.id,
    turnId: t.ticket.ticketId,
    status,
    output,
    legs: 1,
    steps: 6,
    usage: { inputTokens: 1, outputTokens: 1 },
  };
  return { result, receivedAt: SUBMITTED_AT + 2_500, duplicates: 0 };
}

const refundLine = (sessionId: string, key: string): LedgerLine => ({
  service: 'refunds',
  operation: 'issueRefund',
  effect: 'once',
  idempotencyKey: key,
  sessionId,
  at: 0,
});

function input(progress: TicketProgress[], results: ReceivedResult[], ledger: LedgerLine[] = []): SummaryInput {
  return {
    progress,
    results: new Map(results.map((r) => [r.result.sessionId, r])),
    invalidResults: [],
    ledger,
    outputs: { 'order-investigator': Verdict, 'long-haul': undefined },
    workerKills: 0,
    elapsedMs: 3_000,
  };
}

describe('summarize', () => {
  it('is green when every ticket has a completed result whose output matches its schema', () => {
    // Arrange
    const [order] = ticketsOf(1);
    const verdict = { orderId: 'ORD-1001', verdict: 'no-action', reason: 'parcel is delivered' };

    // Act
    const summary = summarize(input([order!], [resultFor(order!, verdict)]));

    // Assert
    expect(summary).toMatchObject({ completed: 1, failed: 0, missing: 0, duplicateEffects: 0, green: true });
    expect(summary.p50TurnMs).toBe(2_000);
  });

  it('fails a completed result whose output does not match the agent schema', () => {
    // Arrange
    const [order] = ticketsOf(1);

    // Act
    const summary = summarize(input([order!], [resultFor(order!, { verdict: 'maybe' })]));

    // Assert
    expect(summary.green).toBe(false);
    expect(summary.problems[0]?.problem).toContain('does not match');
  });

  it('fails a fan-out unless every one of its background tasks completed', () => {
    // Arrange
    const fanOut = ticketsOf(3)[2]!;
    const task = (status: string) => ({ taskId: 't', status, output: 'x' });

    // Act
    const good = summarize(input([fanOut], [resultFor(fanOut, { a: task('completed'), b: task('completed') })]));
    const bad = summarize(input([fanOut], [resultFor(fanOut, { a: task('completed'), b: task('failed') })]));

    // Assert
    expect(fanOut.ticket.agent).toBe('dispatcher');
    expect(good.green).toBe(true);
    expect(bad.green).toBe(false);
    expect(bad.problems[0]?.problem).toBe('task(s) b failed');
  });

  it('fails a refund verdict unless the refund service executed exactly one refund for the session', () => {
    // Arrange
    const [order] = ticketsOf(1);
    const verdict = { orderId: 'ORD-1001', verdict: 'refund', reason: 'lost', refundId: 'R-1' };

    // Act
    const none = summarize(input([order!], [resultFor(order!, verdict)]));
    const one = summarize(input([order!], [resultFor(order!, verdict)], [refundLine(order!.key.id, 'k1')]));

    // Assert
    expect(none.green).toBe(false);
    expect(one.green).toBe(true);
  });

  it('counts a once-only key executed twice as a duplicate effect and is not green', () => {
    // Arrange
    const [order] = ticketsOf(1);
    const verdict = { orderId: 'ORD-1001', verdict: 'no-action', reason: 'delivered' };
    const twice = [refundLine(order!.key.id, 'same-key'), refundLine(order!.key.id, 'same-key')];

    // Act
    const summary = summarize(input([order!], [resultFor(order!, verdict)], twice));

    // Assert
    expect(summary.duplicateEffects).toBe(1);
    expect(summary.green).toBe(false);
  });

  it('reports a ticket with no result on the results queue as missing', () => {
    // Arrange
    const tickets = ticketsOf(2);

    // Act
    const summary = summarize(
      input(tickets, [resultFor(tickets[0]!, { orderId: 'x', verdict: 'escalate', reason: 'r' })]),
    );

    // Assert
    expect(summary).toMatchObject({ completed: 1, missing: 1, green: false });
  });
});

describe('percentile', () => {
  it('takes the nearest rank, so p95 of twenty values is the nineteenth', () => {
    const values = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(10);
    expect(percentile(values, 95)).toBe(19);
    expect(percentile([], 95)).toBe(0);
  });
});

describe('demoBatch', () => {
  it('makes the third ticket a fan-out, every fourth a long-haul job, and carries the run id in every ticket id', () => {
    const batch = demoBatch(8, 'demo-abc');
    expect(batch.map((t) => t.agent)).toEqual([
      'order-investigator',
      'order-investigator',
      'dispatcher',
      'long-haul',
      'order-investigator',
      'order-investigator',
      'order-investigator',
      'long-haul',
    ]);
    expect(batch.every((t) => t.ticketId.startsWith('demo-abc-'))).toBe(true);
  });
});
