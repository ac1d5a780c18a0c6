import { longHaul } from '../examples/long-haul/agent.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import type { TenantLimits } from '../lib/core/tenant-limits.ts';
import { type BenchDynamoDb, InProcessRuntime } from './in-process-runtime.ts';

/** One run of the fairness workload: tenant A's flood, then tenant B's few. */
export interface FairShareRun {
  /** A's limit on sessions at once (undefined: the baseline, no limit). */
  readonly limit: number | undefined;
  /** B's submit (its first ticket accepted) → B's first step journaled. */
  readonly bFirstStepMs: number;
  /** B's submit → B's last result. */
  readonly bDoneMs: number;
  /** A's first submit → A's last result. */
  readonly aTotalMs: number;
  readonly aCompleted: number;
  /** A's sessions that ended other than completed, or never published a result (lost). */
  readonly aFailedOrLost: number;
  /** The most of A's sessions that had a step between their first and last step at one time. */
  readonly aMostAtOnce: number;
  /** `limited` entries A's sessions journaled (each a wait in line). */
  readonly aSlotWaits: number;
}

export interface FairShareFigures {
  readonly aSessions: number;
  readonly bSessions: number;
  /** Legs that run at once at most (the step function's reserved concurrency). */
  readonly concurrency: number;
  readonly runs: readonly FairShareRun[];
  readonly seconds: number;
}

/**
 * Fair sharing (issue 27 item 8): tenant A submits `aSessions` sessions, then tenant B submits
 * `bSessions`; the real runtime runs them on DynamoDB Local with the queues in this process and
 * at most `concurrency` legs at once (as a function's reserved concurrency bounds them). Once with
 * A limited to `limit` sessions at once, once without, for comparison. Figures only, no assertion.
 */
export async function measureFairShare(options: {
  db: BenchDynamoDb;
  aSessions: number;
  bSessions: number;
  limit: number;
  concurrency: number;
  steps: number;
  stepMs: number;
}): Promise<FairShareFigures> {
  const started = performance.now();
  const runs: FairShareRun[] = [];
  for (const limit of [options.limit, undefined]) runs.push(await runOnce(options, limit));
  return {
    aSessions: options.aSessions,
    bSessions: options.bSessions,
    concurrency: options.concurrency,
    runs,
    seconds: (performance.now() - started) / 1000,
  };
}

async function runOnce(
  options: {
    db: BenchDynamoDb;
    aSessions: number;
    bSessions: number;
    concurrency: number;
    steps: number;
    stepMs: number;
  },
  limit: number | undefined,
): Promise<FairShareRun> {
  // Tenants of their own per run: the runs share one table.
  const run = `${Date.now().toString(36)}${limit ?? 'x'}`;
  const [a, b] = [`a${run}`, `b${run}`];
  const tenantLimits: TenantLimits | undefined = limit === undefined ? undefined : { [a]: { maxRunning: limit } };
  const appends: [number, string, string, JournalEntry][] = [];
  const runtime = new InProcessRuntime({
    db: options.db,
    agents: [longHaul],
    functionTimeoutMs: 10_000,
    leaseTtlMs: 3_000,
    tenantLimits,
    maxConcurrency: options.concurrency,
    onAppend: (key, entry) => appends.push([performance.now(), key.tenant, key.id, entry]),
  });
  const input = { steps: options.steps, stepMs: options.stepMs, payloadBytes: 16 };
  const drained = runtime.drain(options.aSessions + options.bSessions);
  const aStart = performance.now();
  for (let i = 0; i < options.aSessions; i++) await runtime.submit('long-haul', input, `a-${i}`, a);
  const bStart = performance.now();
  for (let i = 0; i < options.bSessions; i++) await runtime.submit('long-haul', input, `b-${i}`, b);
  const results = await drained;

  const steps = appends.filter(([, , , e]) => e.kind === 'model' || e.kind === 'tool');
  const bFirst = steps.find(([, tenant]) => tenant === b)?.[0];
  const aResults = results.filter((r) => r.ticketId.startsWith('a-'));
  const bResults = results.filter((r) => r.ticketId.startsWith('b-'));
  const aCompleted = aResults.filter((r) => r.status === 'completed').length;
  return {
    limit,
    bFirstStepMs: bFirst === undefined ? Number.NaN : bFirst - bStart,
    bDoneMs: bResults.length === options.bSessions ? lastResultAt(appends, b) - bStart : Number.NaN,
    aTotalMs: lastResultAt(appends, a) - aStart,
    aCompleted,
    aFailedOrLost: options.aSessions - aCompleted,
    aMostAtOnce: mostAtOnce(steps.filter(([, tenant]) => tenant === a)),
    aSlotWaits: appends.filter(([, tenant, , e]) => tenant === a && e.kind === 'limited').length,
  };
}

/** When a tenant's last outcome was journaled. */
function lastResultAt(appends: readonly [number, string, string, JournalEntry][], tenant: string): number {
  return appends.filter(([, t, , e]) => t === tenant && e.kind === 'outcome').at(-1)?.[0] ?? Number.NaN;
}

/** The most sessions whose [first step, last step] spans overlap at one moment. */
function mostAtOnce(steps: readonly [number, string, string, JournalEntry][]): number {
  const spans = new Map<string, [number, number]>();
  for (const [at, , id] of steps) {
    const span = spans.get(id);
    spans.set(id, span ? [span[0], at] : [at, at]);
  }
  const events = [...spans.values()].flatMap(([from, to]) => [[from, 1] as const, [to, -1] as const]);
  events.sort((x, y) => x[0] - y[0] || y[1] - x[1]);
  let now = 0;
  let most = 0;
  for (const [, delta] of events) {
    now += delta;
    most = Math.max(most, now);
  }
  return most;
}
