import type { ZodType } from 'zod';
import type { LedgerLine } from '../../examples/simulated/ledger.ts';
import { duplicateEffects } from '../../examples/simulated/ledger.ts';
import type { TicketProgress } from './progress-tracker.ts';
import type { ReceivedResult } from './results-reader.ts';

/** Why one ticket did not complete correctly. */
export interface TicketProblem {
  readonly label: string;
  readonly problem: string;
}

export interface DemoSummary {
  readonly tickets: number;
  readonly completed: number;
  readonly failed: number;
  /** Tickets with no result on the results queue when the demo ended. */
  readonly missing: number;
  readonly legs: number;
  readonly recoveries: number;
  readonly retries: number;
  readonly workerKills: number;
  /** Once-only effects the ledger shows executed more than once (must be 0). */
  readonly duplicateEffects: number;
  readonly refunds: number;
  readonly p50TurnMs: number;
  readonly p95TurnMs: number;
  readonly elapsedMs: number;
  readonly problems: readonly TicketProblem[];
  /** Every ticket completed with a valid output, and no once-only effect ran twice. */
  readonly green: boolean;
}

export interface SummaryInput {
  readonly progress: readonly TicketProgress[];
  readonly results: ReadonlyMap<string, ReceivedResult>;
  readonly invalidResults: readonly string[];
  /** This run's ledger lines (filtered to its sessions). */
  readonly ledger: readonly LedgerLine[];
  /** Output schema per agent: a completed result must match it. */
  readonly outputs: Readonly<Record<string, ZodType | undefined>>;
  readonly workerKills: number;
  readonly elapsedMs: number;
}

/** The nearest-rank percentile of `values` (0 when empty). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Judges the run from the outside: the results queue (one valid result per ticket), the journal
 * counts and the services' ledger (no once-only effect twice; a refund verdict has exactly one refund).
 */
export function summarize(input: SummaryInput): DemoSummary {
  const problems: TicketProblem[] = [];
  let completed = 0;
  let failed = 0;
  let missing = 0;
  const turnTimes: number[] = [];
  const refundsBySession = new Map<string, number>();
  for (const line of input.ledger) {
    if (line.service === 'refunds' && line.operation === 'issueRefund') {
      refundsBySession.set(line.sessionId, (refundsBySession.get(line.sessionId) ?? 0) + 1);
    }
  }
  for (const t of input.progress) {
    const received = input.results.get(t.key.id);
    if (!received) {
      missing++;
      problems.push({
        label: t.ticket.label,
        problem: `no result on the results queue (state ${t.state ?? 'not yet created'})`,
      });
      continue;
    }
    const { result } = received;
    if (result.status !== 'completed') {
      failed++;
      problems.push({ label: t.ticket.label, problem: `${result.status}: ${result.error ?? 'no reason given'}` });
      continue;
    }
    const schema = input.outputs[t.ticket.agent];
    const output = schema?.safeParse(result.output);
    if (output && !output.success) {
      failed++;
      problems.push({ label: t.ticket.label, problem: `output does not match the ${t.ticket.agent} schema` });
      continue;
    }
    // A fan-out is correct when every one of its background tasks completed.
    const unfinished = Object.entries(
      t.ticket.agent === 'dispatcher' ? (result.output as Record<string, { status?: string }>) : {},
    ).filter(([, task]) => task.status !== 'completed');
    if (unfinished.length > 0) {
      failed++;
      problems.push({
        label: t.ticket.label,
        problem: `task(s) ${unfinished.map(([name, task]) => `${name} ${task.status}`).join(', ')}`,
      });
      continue;
    }
    const verdict = (result.output as { verdict?: string } | undefined)?.verdict;
    const refunds = refundsBySession.get(t.key.id) ?? 0;
    if (verdict === 'refund' && refunds !== 1) {
      failed++;
      problems.push({
        label: t.ticket.label,
        problem: `refund verdict but the refund service executed ${refunds} refund(s)`,
      });
      continue;
    }
    completed++;
    turnTimes.push((t.finishedAt ?? received.receivedAt) - t.submittedAt);
  }
  for (const body of input.invalidResults)
    problems.push({ label: '?', problem: `invalid result message: ${body.slice(0, 80)}` });
  const duplicates = duplicateEffects(input.ledger).length;
  if (duplicates > 0)
    problems.push({ label: '*', problem: `${duplicates} once-only effect(s) executed more than once` });
  return {
    tickets: input.progress.length,
    completed,
    failed,
    missing,
    legs: input.progress.reduce((sum, t) => sum + t.legs, 0),
    recoveries: input.progress.reduce((sum, t) => sum + t.recoveries, 0),
    retries: input.progress.reduce((sum, t) => sum + t.retries, 0),
    workerKills: input.workerKills,
    duplicateEffects: duplicates,
    refunds: [...refundsBySession.values()].reduce((a, b) => a + b, 0),
    p50TurnMs: percentile(turnTimes, 50),
    p95TurnMs: percentile(turnTimes, 95),
    elapsedMs: input.elapsedMs,
    problems,
    green: completed === input.progress.length && duplicates === 0 && input.invalidResults.length === 0,
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The closing table, one figure a row. */
export function formatSummary(summary: DemoSummary): string[] {
  const rows: Array<[string, string]> = [
    ['tickets', String(summary.tickets)],
    ['completed', String(summary.completed)],
    ['failed', String(summary.failed)],
    ['no result', String(summary.missing)],
    ['legs', String(summary.legs)],
    ['recoveries', String(summary.recoveries)],
    ['retries (transient errors)', String(summary.retries)],
    ['worker processes killed', String(summary.workerKills)],
    ['refunds executed', String(summary.refunds)],
    ['duplicate effects', String(summary.duplicateEffects)],
    ['turn time p50', seconds(summary.p50TurnMs)],
    ['turn time p95', seconds(summary.p95TurnMs)],
    ['elapsed', seconds(summary.elapsedMs)],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = ['', 'Summary', ...rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`)];
  for (const p of summary.problems) lines.push(`  ✗ ${p.label}: ${p.problem}`);
  lines.push(
    summary.green
      ? `✓ every ticket completed correctly; no once-only effect ran twice`
      : `✗ ${summary.tickets - summary.completed} ticket(s) did not complete correctly`,
  );
  return lines;
}
