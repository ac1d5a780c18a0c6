import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { createDocumentClient, createSqsClient } from '../adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../adapters/dynamodb/dynamodb-session-store.ts';
import { enabledFaultKinds, FAULTS_ENV } from '../adapters/faults/fault-config.ts';
import { readFaultCounts } from '../adapters/faults/fault-counter.ts';
import { S3BlobStore } from '../adapters/s3/s3-blob-store.ts';
import { createS3Client } from '../adapters/s3/s3-client.ts';
import { SqsTicketQueue, SqsWorkQueue } from '../adapters/sqs/sqs-queues.ts';
import { BatonClient } from '../client/baton-client.ts';
import { DEFAULT_TENANT, deriveSessionId } from '../core/ids.ts';
import { ENV, RUNTIME_DEFAULTS } from '../core/resources.ts';
import { LOCAL_CREDENTIALS } from '../local/aws-clients.ts';
import { addAwsTraceHeaderShim } from '../local/aws-trace-header-shim.ts';
import type { Endpoints } from '../local/emulators.ts';
import { startLocalStack } from '../local/local-stack.ts';
import { systemClock } from '../ports/clock.ts';
import { readFailpointLog, startChaosMonkey } from './chaos-monkey.ts';
import type { ChaosOptions } from './chaos-options.ts';
import type { PublishedResult, RawSession, SubmittedTicket } from './chaos-snapshot.ts';
import { CONVERSATION_AGENT, driveConversation } from './conversation-driver.ts';
import type { ChaosReport } from './figure-table.ts';
import { checkInvariants, type Violation } from './invariant-checker.ts';
import { drainResults, readLedgerFile, readSessions } from './snapshot-reader.ts';

/** The example agents the run mixes: every effect kind (pure, once-only) and multi-leg jobs. */
const ORDER_AGENT = 'order-investigator';
const LONG_HAUL_AGENT = 'long-haul';
/** Fans out to a long-haul job and an order investigation in the background. */
const DISPATCHER_AGENT = 'dispatcher';
/** As deployed: a schedule fires the sweeper every minute; it polls every sweepIntervalMs within its window. */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_WINDOW_MS = RUNTIME_DEFAULTS.sweepWindowMs;
const PROGRESS_EVERY_MS = 10_000;
const RESULTS_POLL_MS = 500;
const SUBMIT_CONCURRENCY = 16;
const CHAOS_MAX_RECEIVE_COUNT = 10;
/** A final answer over the queue message limit (MAX_MESSAGE_BYTES). */
const LARGE_ANSWER_BYTES = 300 * 1024;
/** A ticket input over the queue message limit: submitted through the payload bucket. */
const LARGE_INPUT_BYTES = 300 * 1024;

export interface ChaosRunHooks {
  /** Reuse running emulators (the test suite's) instead of starting DynamoDB Local and fauxqs. */
  readonly emulators?: { readonly region: string; readonly endpoints: Endpoints } | undefined;
  /** Resource name prefix (a fresh one per run keeps runs apart on shared emulators). */
  readonly prefix?: string | undefined;
  readonly log?: ((line: string) => void) | undefined;
  readonly workerOutput?: 'inherit' | 'ignore' | undefined;
  readonly signal?: AbortSignal | undefined;
  /** How the run was started, for the report. */
  readonly command?: string | undefined;
}

/**
 * Runs a chaos experiment on the local stack: submits the tickets, kills and pauses workers and
 * fires crash points while the injected faults run, waits for quiescence, then checks the
 * invariants from outside the runtime and reports the figures.
 * @example const report = await runChaos({ ...DEFAULT_CHAOS_OPTIONS, tickets: 50 });
 */
export async function runChaos(options: ChaosOptions, hooks: ChaosRunHooks = {}): Promise<ChaosReport> {
  const log = hooks.log ?? ((line: string) => console.error(`[chaos] ${line}`));
  const started = Date.now();
  const stateDir = resolve(options.stateDir ?? mkdtempSync(join(tmpdir(), 'baton-chaos-')));
  mkdirSync(stateDir, { recursive: true });
  const failpointsFile = join(stateDir, 'failpoints.json');
  writeFileSync(failpointsFile, '{}');
  const faultsDir = join(stateDir, 'faults');
  const faultKinds = enabledFaultKinds(options.faults);
  const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;
  let deadlineKills = 0;

  log(`state in ${stateDir}`);
  const stack = await startLocalStack({
    workers: options.workers,
    functionTimeoutS: options.functionTimeoutS,
    visibilityTimeoutS: options.visibilityTimeoutS,
    // Chaos kills intake mid-batch far more often than production ever would: ten deliveries
    // before the DLQ keep a ticket from being dead-lettered only because its worker kept dying.
    maxReceiveCount: CHAOS_MAX_RECEIVE_COUNT,
    stateDir,
    prefix: hooks.prefix ?? `chaos-${runId}`,
    emulators: hooks.emulators,
    sweepEveryMs: SWEEP_EVERY_MS,
    waitTimeSeconds: 1,
    workerOutput: hooks.workerOutput ?? 'ignore',
    log: (line) => log(`stack: ${line}`),
    onEvent: (event) => {
      if (event.type === 'deadline-kill') deadlineKills++;
    },
    handlerEnv: {
      [ENV.leaseTtlMs]: String(options.leaseTtlMs),
      [ENV.reserveMs]: String(options.reserveMs),
      [ENV.sweepIntervalMs]: String(options.sweepIntervalMs),
      [ENV.sweepWindowMs]: String(SWEEP_WINDOW_MS),
      BATON_FAILPOINTS_FILE: failpointsFile,
      BATON_DEMO_LATENCY_SCALE: String(options.latencyScale),
      BATON_DEMO_FAILURE_RATE: String(options.failureRate),
      POWERTOOLS_LOG_LEVEL: process.env.BATON_CHAOS_LOG_LEVEL ?? 'ERROR',
      ...(faultKinds.length > 0 ? { [FAULTS_ENV]: JSON.stringify({ ...options.faults, countsDir: faultsDir }) } : {}),
    },
  });

  const { region, endpoints, resources } = stack.config;
  const aws = { region, endpoints, credentials: LOCAL_CREDENTIALS };
  const sqs = addAwsTraceHeaderShim(createSqsClient(aws));
  const documents = createDocumentClient(aws);
  const blobs = new S3BlobStore({ client: createS3Client(aws), bucket: resources.bucket });
  const client = new BatonClient({
    store: new DynamoDbSessionStore({ client: documents, table: resources.table, blobs }),
    tickets: new SqsTicketQueue({ client: sqs, queueUrl: resources.queues.tickets.url }),
    workQueue: new SqsWorkQueue({ client: sqs, queueUrl: resources.queues.work.url }),
    blobs,
    clock: systemClock,
  });

  const monkey = startChaosMonkey({
    workers: () => stack.supervisor.workers(),
    killEveryMs: options.killEveryMs,
    pauseEveryMs: options.pauseEveryMs,
    pauseForMs: options.pauseForMs,
    failpointEveryMs: options.failpointEveryMs,
    failpointsFile,
    log: (line) => log(line),
  });
  const results: PublishedResult[] = [];
  const finished = new Set<string>();
  let draining = true;
  const drainer = (async () => {
    while (draining) {
      const batch = await drainResults(sqs, resources.queues.results.url).catch(() => []);
      results.push(...batch);
      for (const result of batch) finished.add(result.ticketId);
      await systemClock.sleep(RESULTS_POLL_MS);
    }
  })();

  let monkeyStopped = false;
  const stopMonkey = () => {
    if (!monkeyStopped) monkey.stop();
    monkeyStopped = true;
  };
  try {
    const tickets = planTickets(options, runId);
    let submitted = false;
    let submitError: unknown;
    const submission = submitTickets(client, tickets, options, runId, hooks.signal, log).then(
      () => {
        submitted = true;
      },
      (error: unknown) => {
        submitError = error;
        submitted = true;
      },
    );
    const deadline = Date.now() + options.quiesceTimeoutMs;
    let conversing = true;
    const conversations = Promise.all(
      tickets.map((ticket, i) =>
        ticket.conversation
          ? driveConversation(ticket, i, {
              client,
              finished,
              stopped: () => submitError !== undefined || Date.now() >= deadline || hooks.signal?.aborted === true,
              log,
            })
          : undefined,
      ),
    ).finally(() => {
      conversing = false;
    });
    const allDone = () =>
      submitted &&
      !conversing &&
      tickets.every((t) => finished.has(t.ticketId) && (t.conversation?.turns ?? []).every((id) => finished.has(id)));
    let lastProgress = Date.now();
    while (!allDone() && submitError === undefined && Date.now() < deadline && !hooks.signal?.aborted) {
      await systemClock.sleep(500);
      if (Date.now() - lastProgress >= PROGRESS_EVERY_MS) {
        lastProgress = Date.now();
        const stats = monkey.stats();
        log(
          `${Math.round((Date.now() - started) / 1000)} s: ${tickets.filter((t) => finished.has(t.ticketId)).length}/${tickets.length} tickets finished; kills ${stats.kills}, pauses ${stats.pauses}`,
        );
      }
    }
    stopMonkey();
    await submission;
    await conversations;
    if (submitError !== undefined) throw submitError;
    // Let stragglers settle with no more chaos: resumed stale owners fail their writes, the
    // sweeper covers any lease left behind, late duplicates are dropped.
    const settleMs = allDone()
      ? options.leaseTtlMs + 4 * options.sweepIntervalMs
      : 3 * options.leaseTtlMs + SWEEP_EVERY_MS + options.functionTimeoutS * 1000;
    const settleUntil = Date.now() + settleMs;
    while (Date.now() < settleUntil && !hooks.signal?.aborted) await systemClock.sleep(250);
    draining = false;
    await drainer;
    results.push(...(await drainResults(sqs, resources.queues.results.url)));

    const snapshot = {
      tickets,
      sessions: await readSessions(documents, resources.table),
      results,
      ledger: readLedgerFile(stack.config.ledger),
      takenAt: Date.now(),
      // The longest a due session waits for a poll: the gap between windows plus one interval.
      sweepPeriodMs: SWEEP_EVERY_MS - SWEEP_WINDOW_MS + options.sweepIntervalMs,
    };
    const deadLetters = {
      tickets: await queueDepth(sqs, resources.queues.ticketsDlq.url),
      work: await queueDepth(sqs, resources.queues.workDlq.url),
    };
    const { violations, figures } = checkInvariants(snapshot);
    writeEvidence(stateDir, violations, snapshot.sessions, log);
    const firings = readFailpointLog(failpointsFile);
    const crashPointKills: Record<string, number> = {};
    for (const firing of firings.filter((f) => f.action === 'kill')) {
      crashPointKills[firing.failpoint] = (crashPointKills[firing.failpoint] ?? 0) + 1;
    }
    const faults = readFaultCounts(faultsDir);
    const stats = monkey.stats();

    const vacuous: string[] = [];
    if (options.killEveryMs > 0 && stats.kills === 0) vacuous.push('no worker was killed from outside');
    if (options.pauseEveryMs > 0 && stats.pauses === 0) vacuous.push('no worker was paused');
    const midStepKills = crashPointKills['mid-step'] ?? 0;
    if (options.failpointEveryMs > 0 ? midStepKills === 0 : figures.interruptedLegs === 0) {
      vacuous.push('no kill landed mid-step (no mid-step crash point fired, or no leg was recovered after progress)');
    }
    if (figures.recoveries === 0) vacuous.push('no leg started as a recovery');
    for (const kind of faultKinds) {
      if (faults[kind] === 0) vacuous.push(`no ${kind} fault was injected`);
    }

    return {
      command: hooks.command ?? 'baton chaos',
      figures,
      kills: { external: stats.kills, crashPoints: crashPointKills },
      pauses: { external: stats.pauses, crashPoints: firings.filter((f) => f.action === 'pause').length },
      deadlineKills,
      faults,
      deadLetters,
      wallTimeMs: Date.now() - started,
      violations,
      vacuous,
    };
  } finally {
    stopMonkey();
    draining = false;
    await drainer.catch(() => undefined);
    await stack.stop();
  }
}

/** The run's tickets, interleaving the agents. */
function planTickets(options: ChaosOptions, runId: string): SubmittedTicket[] {
  return Array.from({ length: options.tickets }, (_, i) => {
    // A low-discrepancy sequence spreads long-haul jobs evenly through the run.
    const longHaul = ((i + 1) * 0.6180339887) % 1 < options.longHaulShare;
    const delegating = !longHaul && ((i + 1) * 0.7548776662) % 1 < options.delegateShare;
    const conversing = !longHaul && !delegating && ((i + 1) * 0.4142135624) % 1 < options.conversationShare;
    const agent = longHaul
      ? LONG_HAUL_AGENT
      : delegating
        ? DISPATCHER_AGENT
        : conversing
          ? CONVERSATION_AGENT
          : ORDER_AGENT;
    const ticketId = `chaos-${runId}-${i}`;
    const sessionId = deriveSessionId(DEFAULT_TENANT, agent, ticketId);
    const conversation = conversing ? { turns: [], injected: [], unsent: [] } : undefined;
    return { ticketId, tenant: DEFAULT_TENANT, agent, sessionId, ...(conversation ? { conversation } : {}) };
  });
}

/** Submits the tickets through the tickets queue, as producers do, at the configured rate. */
async function submitTickets(
  client: BatonClient,
  tickets: readonly SubmittedTicket[],
  options: ChaosOptions,
  runId: string,
  signal: AbortSignal | undefined,
  log: (line: string) => void,
): Promise<void> {
  // Every other long-haul job answers with more than a queue message holds: its result travels
  // through the payload bucket. Every fourth carries an input over that limit too (a note the
  // agent ignores): the ticket itself travels through the bucket.
  const inputOf = (ticket: SubmittedTicket, i: number) =>
    ticket.agent === DISPATCHER_AGENT
      ? {
          tasks: [
            {
              agent: LONG_HAUL_AGENT,
              input: { steps: Math.ceil(options.longHaulSteps / 4), payloadBytes: 256, stepMs: options.longHaulStepMs },
              description: 'fetch',
            },
            {
              agent: ORDER_AGENT,
              input: { orderId: `O-${runId}-${i}`, complaint: 'My parcel never arrived.' },
              description: 'investigate',
            },
          ],
        }
      : ticket.agent === LONG_HAUL_AGENT
        ? {
            steps: options.longHaulSteps,
            payloadBytes: 256,
            stepMs: options.longHaulStepMs,
            ...(i % 2 === 0 ? { answerBytes: LARGE_ANSWER_BYTES } : {}),
            ...(i % 4 === 1 ? { note: '.'.repeat(LARGE_INPUT_BYTES) } : {}),
          }
        : ticket.agent === CONVERSATION_AGENT
          ? { text: 'hello' }
          : { orderId: `O-${runId}-${i}`, complaint: 'My parcel never arrived.' };
  const gapMs = options.submitPerSecond > 0 ? 1000 / options.submitPerSecond : 0;
  const began = Date.now();
  let next = 0;
  const sender = async () => {
    while (next < tickets.length && !signal?.aborted) {
      const i = next++;
      const ticket = tickets[i] as SubmittedTicket;
      if (gapMs > 0) await systemClock.sleep(Math.max(0, began + i * gapMs - Date.now()));
      await client.submit({ agent: ticket.agent, ticketId: ticket.ticketId, input: inputOf(ticket, i) });
    }
  };
  await Promise.all(Array.from({ length: SUBMIT_CONCURRENCY }, sender));
  log(`submitted ${tickets.length} tickets in ${Date.now() - began} ms`);
}

/** Writes the stored items of every session a violation names, for the post-mortem. */
function writeEvidence(
  stateDir: string,
  violations: readonly Violation[],
  sessions: ReadonlyMap<string, RawSession>,
  log: (line: string) => void,
): void {
  if (violations.length === 0) return;
  const named = new Set(violations.map((v) => v.sessionId).filter((id) => id !== undefined));
  const path = join(stateDir, 'violations.json');
  writeFileSync(
    path,
    JSON.stringify({ violations, sessions: [...named].map((id) => sessions.get(id)).filter(Boolean) }, null, 2),
  );
  log(`violations and the sessions they name: ${path}`);
}

async function queueDepth(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return (
    Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
    Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
  );
}
