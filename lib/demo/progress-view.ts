import type { TicketProgress } from './progress-tracker.ts';

/** The running summary line's figures. */
export interface RunningSummary {
  readonly elapsedMs: number;
  readonly results: number;
  readonly workerKills: number;
  readonly chaos: boolean;
}

/** Where the demo writes: a terminal it may redraw, or a log it appends to. */
export interface ProgressOutput {
  readonly tty: boolean;
  write(text: string): void;
}

const ANSI = {
  up: (n: number) => `\x1b[${n}F`,
  clearDown: '\x1b[J',
  green: (s: string) => `\x1b[32m${s}\x1b[0m`,
  red: (s: string) => `\x1b[31m${s}\x1b[0m`,
  yellow: (s: string) => `\x1b[33m${s}\x1b[0m`,
  dim: (s: string) => `\x1b[2m${s}\x1b[0m`,
} as const;

const elapsed = (ms: number) => `${(ms / 1000).toFixed(1).padStart(6)}s`;

function counts(tickets: readonly TicketProgress[]) {
  const by = (state: string) => tickets.filter((t) => t.state === state).length;
  return {
    running: by('running'),
    waiting: by('waiting') + by('queued') + tickets.filter((t) => t.state === undefined).length,
    completed: by('completed'),
    failed: by('failed') + by('cancelled'),
    legs: tickets.reduce((s, t) => s + t.legs, 0),
    recoveries: tickets.reduce((s, t) => s + t.recoveries, 0),
  };
}

/** The summary line under the table (and the periodic line in log mode). */
export function summaryLine(tickets: readonly TicketProgress[], running: RunningSummary): string {
  const c = counts(tickets);
  return (
    `${elapsed(running.elapsedMs)}  running ${c.running} · queued/waiting ${c.waiting} · completed ${c.completed} · failed ${c.failed}` +
    ` · legs ${c.legs} · recoveries ${c.recoveries} · results ${running.results}/${tickets.length}` +
    (running.chaos ? ` · workers killed ${running.workerKills}` : '')
  );
}

/** One ticket's line: label, agent, leg, step, state, recoveries, last journal entry. */
export function ticketLine(t: TicketProgress, color: boolean): string {
  const state = t.state ?? 'submitted';
  const paint = !color
    ? (s: string) => s
    : state === 'completed'
      ? ANSI.green
      : state === 'failed' || state === 'cancelled'
        ? ANSI.red
        : state === 'running'
          ? ANSI.yellow
          : ANSI.dim;
  return (
    `${t.ticket.label}  ${t.ticket.agent.padEnd(18)} leg ${String(t.legs).padStart(2)}  step ${String(t.steps).padStart(3)}  ` +
    `${paint(state.padEnd(9))}  recov ${t.recoveries}  ${(t.last ?? '').slice(0, 44)}`
  );
}

/**
 * Renders progress. On a terminal it redraws the whole table in place with ANSI escapes; on a
 * pipe or a file it prints one log line per change and a summary line now and then.
 */
export class ProgressView {
  #drawnLines = 0;
  #lastSummaryAt = 0;

  constructor(
    private readonly output: ProgressOutput,
    private readonly header: string,
    /** In log mode, how often the summary line is repeated. */
    private readonly logSummaryEveryMs = 5_000,
  ) {}

  /** Prints a line above the table (log mode: as is). */
  note(text: string): void {
    if (this.output.tty) this.#clear();
    this.output.write(`${text}\n`);
    this.#drawnLines = 0;
  }

  render(tickets: readonly TicketProgress[], changed: readonly TicketProgress[], running: RunningSummary): void {
    if (this.output.tty) {
      const lines = [this.header, ...tickets.map((t) => ticketLine(t, true)), summaryLine(tickets, running)];
      this.#clear();
      this.output.write(`${lines.join('\n')}\n`);
      this.#drawnLines = lines.length;
      return;
    }
    for (const t of changed) this.output.write(`${elapsed(running.elapsedMs)}  ${ticketLine(t, false)}\n`);
    if (running.elapsedMs - this.#lastSummaryAt >= this.logSummaryEveryMs) {
      this.#lastSummaryAt = running.elapsedMs;
      this.output.write(`${summaryLine(tickets, running)}\n`);
    }
  }

  #clear(): void {
    if (this.#drawnLines > 0) this.output.write(`${ANSI.up(this.#drawnLines)}${ANSI.clearDown}`);
    this.#drawnLines = 0;
  }
}
