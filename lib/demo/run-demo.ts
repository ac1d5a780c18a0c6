import { agents } from '#agents';
import { readLedger } from '../../examples/simulated/ledger.ts';
import { createDocumentClient, createSqsClient } from '../adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../adapters/dynamodb/dynamodb-session-store.ts';
import { S3BlobStore } from '../adapters/s3/s3-blob-store.ts';
import { createS3Client } from '../adapters/s3/s3-client.ts';
import { SqsTicketQueue, SqsWorkQueue } from '../adapters/sqs/sqs-queues.ts';
import { type ChaosMonkey, startChaosMonkey } from '../chaos/chaos-monkey.ts';
import { BatonClient } from '../client/baton-client.ts';
import { ENV } from '../core/resources.ts';
import { LOCAL_CREDENTIALS } from '../local/aws-clients.ts';
import { addAwsTraceHeaderShim } from '../local/aws-trace-header-shim.ts';
import { consoleLoginUrl } from '../local/local-config.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '../local/local-stack.ts';
import { systemClock } from '../ports/clock.ts';
import { demoBatch } from './demo-batch.ts';
import { type DemoSummary, formatSummary, summarize } from './demo-summary.ts';
import { ProgressTracker } from './progress-tracker.ts';
import { type ProgressOutput, ProgressView } from './progress-view.ts';
import { ResultsReader } from './results-reader.ts';

/** Short durations, so a crash costs seconds and some tickets need several legs. */
export const DEMO_DEFAULTS = {
  tickets: 12,
  workers: 3,
  functionTimeoutS: 10,
  leaseTtlMs: 3_000,
  reserveMs: 1_500,
  sweepIntervalMs: 500,
  /** The sweeper's schedule fires this often and polls for the whole window: it never sleeps long. */
  sweepEveryMs: 5_000,
  sweepWindowMs: 4_500,
  chaosEveryMs: 6_000,
  deadlineS: 240,
  pollMs: 500,
  latencyScale: 1,
  failureRate: 0.05,
} as const;

export interface DemoOptions {
  readonly tickets?: number | undefined;
  readonly workers?: number | undefined;
  readonly functionTimeoutS?: number | undefined;
  readonly chaos?: boolean | undefined;
  readonly chaosEveryMs?: number | undefined;
  /** Give up (and fail) after this long. */
  readonly deadlineS?: number | undefined;
  readonly stateDir?: string | undefined;
  /** Prefix of the table, queues and bucket (default `baton`): runs on shared emulators need their own. */
  readonly prefix?: string | undefined;
  /** Show the workers' own log lines (JSON) too. */
  readonly verbose?: boolean | undefined;
  readonly output: ProgressOutput;
  readonly signal?: AbortSignal | undefined;
  /** Reuse running emulators (tests) instead of starting DynamoDB Local and fauxqs. */
  readonly emulators?: LocalStackOptions['emulators'];
}

export interface DemoRun {
  readonly summary: DemoSummary;
  readonly lines: string[];
}

/**
 * The demo: boots the local stack, submits a batch of order investigations and long-haul jobs,
 * shows their progress from the store, optionally kills workers while they run, and judges the
 * outcome from outside (results queue, ledger).
 * @example const { summary } = await runDemo({ tickets: 4, output: { tty: false, write: (s) => process.stdout.write(s) } });
 */
export async function runDemo(options: DemoOptions): Promise<DemoRun> {
  const ticketCount = options.tickets ?? DEMO_DEFAULTS.tickets;
  const workers = options.workers ?? DEMO_DEFAULTS.workers;
  const functionTimeoutS = options.functionTimeoutS ?? DEMO_DEFAULTS.functionTimeoutS;
  const chaosEveryMs = options.chaosEveryMs ?? DEMO_DEFAULTS.chaosEveryMs;
  const runId = `demo-${Date.now().toString(36)}`;
  const header =
    `Baton demo ${runId}: ${ticketCount} tickets, ${workers} workers, function timeout ${functionTimeoutS} s, ` +
    `lease TTL ${DEMO_DEFAULTS.leaseTtlMs / 1000} s` +
    (options.chaos ? `, chaos: kill -9 a worker every ${chaosEveryMs / 1000} s` : '');
  const view = new ProgressView(options.output, header);
  const started = Date.now();
  let workerKills = 0;

  view.note(`${header}\nstarting DynamoDB Local, fauxqs and ${workers} worker processes…`);
  const stack: LocalStack = await startLocalStack({
    workers,
    functionTimeoutS,
    // Above the function timeout, so a kick is not redelivered while its leg still runs.
    visibilityTimeoutS: functionTimeoutS * 2,
    stateDir: options.stateDir,
    prefix: options.prefix,
    sweepEveryMs: DEMO_DEFAULTS.sweepEveryMs,
    workerOutput: options.verbose ? 'inherit' : 'ignore',
    log: (line) => view.note(`  [stack] ${line}`),
    // The console shows the run's sessions live while the demo runs.
    console: {},
    ...(options.emulators ? { emulators: options.emulators } : {}),
    handlerEnv: {
      [ENV.leaseTtlMs]: String(DEMO_DEFAULTS.leaseTtlMs),
      [ENV.reserveMs]: String(DEMO_DEFAULTS.reserveMs),
      [ENV.sweepIntervalMs]: String(DEMO_DEFAULTS.sweepIntervalMs),
      [ENV.sweepWindowMs]: String(DEMO_DEFAULTS.sweepWindowMs),
      [ENV.retentionDays]: '1',
      BATON_DEMO_LATENCY_SCALE: String(DEMO_DEFAULTS.latencyScale),
      BATON_DEMO_FAILURE_RATE: String(DEMO_DEFAULTS.failureRate),
      POWERTOOLS_LOG_LEVEL: 'WARN',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
  });
  let chaos: ChaosMonkey | undefined;
  try {
    const { config } = stack;
    const aws = { region: config.region, endpoints: config.endpoints, credentials: LOCAL_CREDENTIALS };
    const sqs = createSqsClient(aws);
    addAwsTraceHeaderShim(sqs);
    const blobs = new S3BlobStore({ client: createS3Client(aws), bucket: config.resources.bucket });
    const store = new DynamoDbSessionStore({ client: createDocumentClient(aws), table: config.resources.table, blobs });
    const client = new BatonClient({
      store,
      tickets: new SqsTicketQueue({ client: sqs, queueUrl: config.resources.queues.tickets.url }),
      workQueue: new SqsWorkQueue({ client: sqs, queueUrl: config.resources.queues.work.url }),
      blobs,
      clock: systemClock,
    });
    const tracker = new ProgressTracker(store);
    const results = new ResultsReader(sqs, config.resources.queues.results.url);
    const address = consoleLoginUrl(config.console ?? '', config.token ?? '');
    view.note(`console ${address} — watch the sessions live (it stops with the demo)`);
    view.note(
      `stack up in ${((Date.now() - started) / 1000).toFixed(1)} s; workers ${stack.supervisor
        .workers()
        .map((w) => w.pid)
        .join(', ')}`,
    );

    const runStarted = Date.now();
    for (const ticket of demoBatch(ticketCount, runId)) {
      await client.submit({ agent: ticket.agent, input: ticket.input, ticketId: ticket.ticketId });
      tracker.add(ticket, Date.now());
    }
    if (options.chaos) {
      chaos = startChaosMonkey({
        workers: () => stack.supervisor.workers(),
        killEveryMs: chaosEveryMs,
        onKill: (worker) => {
          workerKills++;
          view.note(`  [chaos] kill -9 worker ${worker.slot} (pid ${worker.pid})`);
        },
      });
    }

    const deadline = runStarted + (options.deadlineS ?? DEMO_DEFAULTS.deadlineS) * 1000;
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // Results are read on their own loop: a receive long-polls and must not stall the view.
    const reading = (async () => {
      while (!stop.signal.aborted) await results.poll(stop.signal).catch(() => undefined);
    })();
    try {
      for (;;) {
        const changed = await tracker.poll();
        // Each ticket's own result, not a count: background tasks publish results of their own, so
        // a count could be reached while a finished ticket's result is still on its way.
        const done = tracker.tickets.every((t) => t.finishedAt !== undefined && results.bySession.has(t.key.id));
        view.render(tracker.tickets, changed, {
          elapsedMs: Date.now() - runStarted,
          results: results.bySession.size,
          workerKills,
          chaos: options.chaos ?? false,
        });
        if (done || Date.now() > deadline || stop.signal.aborted) break;
        await systemClock.sleep(DEMO_DEFAULTS.pollMs, stop.signal).catch(() => undefined);
      }
    } finally {
      chaos?.stop();
      stop.abort();
      options.signal?.removeEventListener('abort', onAbort);
      await reading;
    }
    if (Date.now() > deadline) view.note(`deadline of ${options.deadlineS ?? DEMO_DEFAULTS.deadlineS} s reached`);

    const sessions = new Set(tracker.tickets.map((t) => t.key.id));
    const summary = summarize({
      progress: tracker.tickets,
      results: results.bySession,
      invalidResults: results.invalid,
      ledger: readLedger(config.ledger).filter((line) => sessions.has(line.sessionId)),
      outputs: Object.fromEntries([...agents].map(([name, agent]) => [name, agent.output])),
      workerKills,
      elapsedMs: Date.now() - runStarted,
    });
    const lines = formatSummary(summary);
    for (const line of lines) view.note(line);
    return { summary, lines };
  } finally {
    chaos?.stop();
    await stack.stop();
  }
}
