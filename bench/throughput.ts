import { randomUUID } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { longHaul } from '../examples/long-haul/agent.ts';
import { createDocumentClient } from '../lib/adapters/aws-clients.ts';
import { type BenchDynamoDb, InProcessRuntime, meteredClient } from './in-process-runtime.ts';
import { countByKind } from './request-meter.ts';

/** CPU time (user + system) this process has spent, in ms: the runtime and its SDK clients, not DynamoDB Local. */
const processCpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

export interface ThroughputFigures {
  readonly concurrency: number;
  readonly steps: number;
  readonly seconds: number;
  readonly stepsPerSecond: number;
  readonly writesPerStep: number;
  /** DynamoDB requests per step (reads and writes, failed conditions included). */
  readonly requestsPerStep: number;
  /** The same by kind (`GetItem:record`, `PutItem:journal`…), per step. */
  readonly requestsPerStepByKind: Record<string, number>;
  /** CPU of this process per step (runtime and SDK, not DynamoDB Local): a figure other work on the machine moves less than rates. */
  readonly cpuMsPerStep: number;
}

/**
 * Steps per second of `concurrency` long-haul sessions at once through the real runtime, with
 * a zero-latency scripted model and instant tools: what the runtime itself costs per step.
 */
export async function measureThroughput(options: {
  db: BenchDynamoDb;
  concurrency: number;
  toolCalls: number;
  payloadBytes: number;
  functionTimeoutMs: number;
}): Promise<ThroughputFigures> {
  const runtime = new InProcessRuntime({
    db: options.db,
    agents: [longHaul],
    functionTimeoutMs: options.functionTimeoutMs,
  });
  const started = performance.now();
  const cpuBefore = processCpuMs();
  await Promise.all(
    Array.from({ length: options.concurrency }, () =>
      runtime.submit(longHaul.name, { steps: options.toolCalls, payloadBytes: options.payloadBytes, stepMs: 0 }),
    ),
  );
  const results = await runtime.drain(options.concurrency);
  const seconds = (performance.now() - started) / 1000;
  const cpuMs = processCpuMs() - cpuBefore;
  const failed = results.filter((r) => r.status !== 'completed');
  if (failed.length > 0)
    throw new Error(`${failed.length} throughput session(s) did not complete: ${failed[0]?.error}`);
  const steps = results.reduce((sum, r) => sum + r.steps, 0);
  return {
    concurrency: options.concurrency,
    steps,
    seconds,
    stepsPerSecond: steps / seconds,
    writesPerStep: runtime.meter.snapshot().writes / steps,
    requestsPerStep: (runtime.meter.readCount + runtime.meter.writeCount) / steps,
    requestsPerStepByKind: Object.fromEntries(
      Object.entries(countByKind([...runtime.meter.readsSince(0), ...runtime.meter.writesSince(0)])).map(
        ([kind, n]) => [kind, n / steps],
      ),
    ),
    cpuMsPerStep: cpuMs / steps,
  };
}

export interface RawWriteFigures {
  readonly concurrency: number;
  readonly writes: number;
  readonly seconds: number;
  readonly writesPerSecond: number;
  /** CPU of this process per write (the SDK client alone). */
  readonly cpuMsPerWrite: number;
}

/**
 * The ceiling: conditional PutItems (`attribute_not_exists`, as a journal append) of the same
 * size, `concurrency` loops at once on the same DynamoDB Local, back to back for `durationMs`.
 */
export async function measureRawConditionalWrites(options: {
  db: BenchDynamoDb;
  concurrency: number;
  itemBytes: number;
  durationMs: number;
}): Promise<RawWriteFigures> {
  const { client } = meteredClient(options.db);
  const documents = createDocumentClient({ region: options.db.region }, client);
  const payload = 'x'.repeat(options.itemBytes);
  let writes = 0;
  const started = performance.now();
  const cpuBefore = processCpuMs();
  const deadline = started + options.durationMs;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      const pk = `RAW#${randomUUID()}`;
      for (let seq = 1; performance.now() < deadline; seq++) {
        await documents.send(
          new PutCommand({
            TableName: options.db.table,
            Item: { pk, sk: `J#${String(seq).padStart(12, '0')}`, data: payload },
            ConditionExpression: 'attribute_not_exists(sk)',
          }),
        );
        writes++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuMsPerWrite = (processCpuMs() - cpuBefore) / writes;
  return { concurrency: options.concurrency, writes, seconds, writesPerSecond: writes / seconds, cpuMsPerWrite };
}

/** Writes per second of several runs together. */
export const meanRate = (runs: readonly RawWriteFigures[]): number =>
  runs.reduce((n, r) => n + r.writes, 0) / runs.reduce((s, r) => s + r.seconds, 0);

/** The median of a non-empty list. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Several rounds of the throughput sessions as one: totals over all of them. */
export function combineThroughput(rounds: readonly ThroughputFigures[]): ThroughputFigures {
  const steps = rounds.reduce((n, r) => n + r.steps, 0);
  const seconds = rounds.reduce((n, r) => n + r.seconds, 0);
  const perStep = (f: (r: ThroughputFigures) => number) => rounds.reduce((n, r) => n + f(r) * r.steps, 0) / steps;
  const kinds = new Set(rounds.flatMap((r) => Object.keys(r.requestsPerStepByKind)));
  return {
    concurrency: rounds[0]!.concurrency,
    steps,
    seconds,
    stepsPerSecond: steps / seconds,
    writesPerStep: perStep((r) => r.writesPerStep),
    requestsPerStep: perStep((r) => r.requestsPerStep),
    requestsPerStepByKind: Object.fromEntries(
      [...kinds].map((kind) => [kind, perStep((r) => r.requestsPerStepByKind[kind] ?? 0)]),
    ),
    cpuMsPerStep: perStep((r) => r.cpuMsPerStep),
  };
}

/** Several runs of raw writes as one. */
export function combineRawWrites(runs: readonly RawWriteFigures[]): RawWriteFigures {
  const writes = runs.reduce((n, r) => n + r.writes, 0);
  return {
    concurrency: runs[0]!.concurrency,
    writes,
    seconds: runs.reduce((n, r) => n + r.seconds, 0),
    writesPerSecond: meanRate(runs),
    cpuMsPerWrite: runs.reduce((n, r) => n + r.cpuMsPerWrite * r.writes, 0) / writes,
  };
}

/**
 * Raw writes in one-second runs until DynamoDB Local's rate stops climbing: its JVM keeps
 * compiling hot paths for 20–30 s of writes here (the rate goes from ~150 to ~1,500 writes/s),
 * and a ratio taken while it climbs says more about when each side ran than about either.
 * Steady: `minMs` spent (its rate plateaus for a while before it climbs again), then the last
 * three runs' rate within 10 % of the three before them, or `maxMs` spent.
 */
export async function warmUntilSteady(options: {
  db: BenchDynamoDb;
  concurrency: number;
  itemBytes: number;
  minMs: number;
  maxMs: number;
}): Promise<{ seconds: number; rates: number[] }> {
  const started = performance.now();
  const rates: number[] = [];
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (;;) {
    const run = await measureRawConditionalWrites({ ...options, durationMs: 1_000 });
    rates.push(run.writesPerSecond);
    const seconds = (performance.now() - started) / 1000;
    const steady =
      seconds * 1000 >= options.minMs && rates.length >= 6 && mean(rates.slice(-3)) < 1.1 * mean(rates.slice(-6, -3));
    if (steady || seconds * 1000 >= options.maxMs) return { seconds, rates };
  }
}
