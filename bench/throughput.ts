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
