import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDocumentClient, createSqsClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { SqsTicketQueue } from '../lib/adapters/sqs/sqs-queues.ts';
import { DEFAULT_TENANT, deriveSessionId } from '../lib/core/ids.ts';
import { legMarkerOf } from '../lib/core/journal.ts';
import { ENV } from '../lib/core/resources.ts';
import { percentile } from '../lib/demo/demo-summary.ts';
import { LOCAL_CREDENTIALS } from '../lib/local/aws-clients.ts';
import type { Endpoints } from '../lib/local/emulators.ts';
import { startLocalStack } from '../lib/local/local-stack.ts';

export interface RecoverySample {
  /** kill -9 (the failpoint's timestamp) → the recovering owner's leg marker. */
  readonly ms: number;
  /**
   * The killed owner was also the local sweeper's host (worker slot 0): recovery then waits for
   * that worker to restart too. In the cloud the sweeper is its own function.
   */
  readonly sweeperHostKilled: boolean;
}

export interface RecoveryFigures {
  readonly leaseTtlMs: number;
  readonly sweepIntervalMs: number;
  readonly samples: RecoverySample[];
  readonly p50Ms: number;
  readonly maxMs: number;
}

/** The demo's lease TTL: the shortest the example agents accept (a once-only refund must fit in it). */
const LEASE_TTL_MS = 3_000;
const SWEEP_INTERVAL_MS = 500;
const SAMPLE_TIMEOUT_MS = 60_000;
const POLL_MS = 50;

/**
 * kill -9 of the owner mid-step, through the runtime's own failpoint (the worker SIGKILLs itself
 * inside a step, after logging the time), then the time until another worker's leg marker lands
 * in the journal. Runs the real local stack: worker processes, SQS, sweeper.
 */
export async function measureRecovery(options: {
  emulators: { region: string; endpoints: Endpoints };
  samples: number;
  log: (line: string) => void;
}): Promise<RecoveryFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-recovery-'));
  const failpoints = join(dir, 'failpoints.json');
  const slotOfPid = new Map<number, number>();
  const stack = await startLocalStack({
    workers: 2,
    functionTimeoutS: 10,
    visibilityTimeoutS: 20,
    prefix: `benchrec${Date.now().toString(36)}`,
    stateDir: dir,
    emulators: options.emulators,
    sweepEveryMs: 5_000,
    workerOutput: process.env.BENCH_VERBOSE ? 'inherit' : 'ignore',
    log: process.env.BENCH_VERBOSE ? options.log : () => {},
    onEvent: (event) => {
      if (event.type === 'worker-started') slotOfPid.set(event.pid, event.slot);
    },
    handlerEnv: {
      [ENV.leaseTtlMs]: String(LEASE_TTL_MS),
      [ENV.reserveMs]: '1500',
      [ENV.sweepIntervalMs]: String(SWEEP_INTERVAL_MS),
      [ENV.sweepWindowMs]: '4500',
      BATON_FAILPOINTS_FILE: failpoints,
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
  });
  try {
    const { config } = stack;
    const aws = { region: config.region, endpoints: config.endpoints, credentials: LOCAL_CREDENTIALS };
    const store = new DynamoDbSessionStore({ client: createDocumentClient(aws), table: config.resources.table });
    const tickets = new SqsTicketQueue({ client: createSqsClient(aws), queueUrl: config.resources.queues.tickets.url });
    const samples: RecoverySample[] = [];
    for (let sample = 0; sample < options.samples; sample++) {
      // Re-arm: the claim file makes each arm fire once across all workers.
      rmSync(`${failpoints}.mid-step.fired`, { force: true });
      rmSync(`${failpoints}.log`, { force: true });
      writeFileSync(failpoints, JSON.stringify({ 'mid-step': { action: 'kill', hit: 3 } }));
      const ticketId = `recovery-${Date.now().toString(36)}-${sample}`;
      const key = {
        tenant: DEFAULT_TENANT,
        agent: 'long-haul',
        id: deriveSessionId(DEFAULT_TENANT, 'long-haul', ticketId),
      };
      await tickets.submit({
        v: 1,
        ticketId,
        agent: 'long-haul',
        input: { steps: 12, payloadBytes: 256, stepMs: 200 },
      });
      const deadline = Date.now() + SAMPLE_TIMEOUT_MS;
      let killedAt: number | undefined;
      let killedPid: number | undefined;
      let recoveredAt: number | undefined;
      while (Date.now() < deadline && recoveredAt === undefined) {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        if (killedAt === undefined && existsSync(`${failpoints}.log`)) {
          const line = readFileSync(`${failpoints}.log`, 'utf8').trim().split('\n')[0];
          if (line) ({ at: killedAt, pid: killedPid } = JSON.parse(line) as { at: number; pid: number });
          // Disarm before the recovering worker reaches its third mid-step.
          writeFileSync(failpoints, '{}');
        }
        if (killedAt === undefined) continue;
        const entries = await store.readJournal(key);
        const marker = entries.find((e) => e.at > killedAt! && legMarkerOf(e)?.reason === 'recovery');
        if (marker) recoveredAt = marker.at;
      }
      if (killedAt === undefined || recoveredAt === undefined) {
        throw new Error(
          `sample ${sample + 1}: ${killedAt === undefined ? 'the failpoint never fired' : 'no recovery leg within 30 s'}`,
        );
      }
      const sweeperHostKilled = killedPid !== undefined && slotOfPid.get(killedPid) === 0;
      samples.push({ ms: recoveredAt - killedAt, sweeperHostKilled });
      options.log(
        `recovery sample ${sample + 1}: ${recoveredAt - killedAt} ms${sweeperHostKilled ? ' (the sweeper host was killed)' : ''}`,
      );
      // The next sample starts on a quiet stack: this session finishes first.
      while (Date.now() < deadline && (await store.getSession(key))?.state !== 'completed') {
        await new Promise((resolve) => setTimeout(resolve, POLL_MS * 4));
      }
    }
    const samplesMs = samples.map((s) => s.ms);
    return {
      leaseTtlMs: LEASE_TTL_MS,
      sweepIntervalMs: SWEEP_INTERVAL_MS,
      samples,
      p50Ms: percentile(samplesMs, 50),
      maxMs: Math.max(...samplesMs),
    };
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
