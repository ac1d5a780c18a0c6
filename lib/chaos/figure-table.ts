import type { FaultCounts } from '../adapters/faults/fault-counter.ts';
import type { ChaosFigures, Violation } from './invariant-checker.ts';

/** Everything a chaos run measured, as the report and `--json` give it. */
export interface ChaosReport {
  readonly command: string;
  readonly figures: ChaosFigures;
  /** SIGKILLs from outside, and kills at named crash points inside the runtime. */
  readonly kills: { readonly external: number; readonly crashPoints: Readonly<Record<string, number>> };
  readonly pauses: { readonly external: number; readonly crashPoints: number };
  /** Workers the local supervisor killed for overrunning their deadline (a paused invocation). */
  readonly deadlineKills: number;
  readonly faults: FaultCounts;
  /** Messages left in the dead-letter queues at the end (kicks there are the sweeper's to cover). */
  readonly deadLetters: { readonly tickets: number; readonly work: number };
  readonly wallTimeMs: number;
  readonly violations: readonly Violation[];
  /** Reasons the run proves nothing (no kill landed mid-step, an enabled fault never fired). */
  readonly vacuous: readonly string[];
}

const sum = (values: Readonly<Record<string, number>>) => Object.values(values).reduce((a, b) => a + b, 0);
const list = (values: Readonly<Record<string, number>>) =>
  Object.entries(values)
    .filter(([, n]) => n > 0)
    .map(([name, n]) => `${name} ${n}`)
    .join(', ') || 'none';

/** The figure table, in Markdown so it pastes into docs/RELIABILITY.md as printed. */
export function formatFigureTable(report: ChaosReport): string {
  const f = report.figures;
  const count = (invariant: string) => report.violations.filter((v) => v.invariant === invariant).length;
  const rows: Array<[string, string]> = [
    [
      'tickets (their turns: completed, failed, cancelled)',
      `${f.tickets} (completed ${f.completed}, failed ${f.failed}, cancelled ${f.cancelled})`,
    ],
    ['wall time', `${(report.wallTimeMs / 1000).toFixed(1)} s`],
    ['worker kills (SIGKILL from outside)', String(report.kills.external)],
    ['kills at named crash points', `${sum(report.kills.crashPoints)} (${list(report.kills.crashPoints)})`],
    [
      'pauses past the lease TTL (SIGSTOP, crash-point pauses)',
      `${report.pauses.external + report.pauses.crashPoints} (${report.pauses.external} SIGSTOP, ${report.pauses.crashPoints} at before-acquire)`,
    ],
    ['deadline kills by the supervisor', String(report.deadlineKills)],
    ['injected faults', `${sum(report.faults)} (${list(report.faults)})`],
    ['legs', `${f.legs} (continuations ${f.continuations}, recoveries ${f.recoveries}, retries ${f.retries})`],
    ['legs interrupted after progress', String(f.interruptedLegs)],
    ['acquires that died before their leg marker', String(f.unmarkedLegs)],
    ['turns failed as honest crash loops', String(f.crashLoops)],
    ['steps journaled', String(f.steps)],
    [
      'conversations (further turns, injected messages; out of order, refund not once)',
      `${f.conversations} (${f.conversationTurns}, ${f.injectedMessages}; ${count('turn-order')}, ${count('refund-once')})`,
    ],
    ['background tasks (lost, duplicated)', `${f.tasks} (${count('lost-task')}, ${count('duplicate-task')})`],
    ['once-only calls executed', `${f.onceOnlyCalls} (reconciled after a crash: ${f.reconciled})`],
    ['result messages (at least once)', String(f.resultMessages)],
    ['dead letters (tickets, kicks)', `${report.deadLetters.tickets}, ${report.deadLetters.work}`],
    ['**lost**', `**${f.lost}**`],
    ['**duplicate effects**', `**${f.duplicateEffects}**`],
    ['**stuck**', `**${f.stuck}**`],
    ['**once-only calls refused (voided key)**', `**${f.refusedOnceOnlyCalls}**`],
    [
      'journal violations (gaps, fencing, steps twice)',
      String(count('gap-free') + count('fenced') + count('once-journaled')),
    ],
    [
      'other violations',
      String(
        report.violations.length -
          count('gap-free') -
          count('fenced') -
          count('once-journaled') -
          count('lost') -
          count('duplicate-effect') -
          count('stuck') -
          count('refused-once'),
      ),
    ],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const lines = [
    `| ${'figure'.padEnd(width)} | value |`,
    `| ${'-'.repeat(width)} | ----- |`,
    ...rows.map(([name, value]) => `| ${name.padEnd(width)} | ${value} |`),
  ];
  return lines.join('\n');
}

/** Verdict lines: every violation (capped) and every reason the run proves nothing. */
export function formatVerdict(report: ChaosReport, maxViolations = 30): string {
  const lines: string[] = [];
  for (const reason of report.vacuous) lines.push(`VACUOUS: ${reason}`);
  for (const v of report.violations.slice(0, maxViolations)) {
    lines.push(`VIOLATION ${v.invariant}${v.sessionId ? ` [${v.sessionId}]` : ''}: ${v.detail}`);
  }
  if (report.violations.length > maxViolations) lines.push(`… and ${report.violations.length - maxViolations} more`);
  if (Object.keys(report.figures.failures).length > 0) {
    lines.push(`failed turns by reason: ${JSON.stringify(report.figures.failures)}`);
  }
  lines.push(
    report.violations.length === 0 && report.vacuous.length === 0
      ? 'PASS: every invariant held'
      : `FAIL: ${report.violations.length} violations${report.vacuous.length ? `, ${report.vacuous.length} reasons the run proves nothing` : ''}`,
  );
  return lines.join('\n');
}
