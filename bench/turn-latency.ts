import { randomUUID } from 'node:crypto';
import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import { supportDesk } from '../examples/support-desk/agent.ts';
import { createDocumentClient, createSqsClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDbSessionStore } from '../lib/adapters/dynamodb/dynamodb-session-store.ts';
import { SqsResultPublisher, SqsTicketQueue, SqsWorkQueue } from '../lib/adapters/sqs/sqs-queues.ts';
import { type AgentDefinition, agentRegistry } from '../lib/agent/define-agent.ts';
import { BatonClient } from '../lib/client/baton-client.ts';
import { randomIds } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import { Kick } from '../lib/core/messages.ts';
import { LOCAL_CREDENTIALS } from '../lib/local/aws-clients.ts';
import type { Endpoints } from '../lib/local/emulators.ts';
import { type RunningMapping, startEventSourceMapping } from '../lib/local/event-source-mapping.ts';
import { provisionResources } from '../lib/local/provision.ts';
import { systemClock } from '../lib/ports/clock.ts';
import type { ModelResponse } from '../lib/ports/model-client.ts';
import type { SessionStore } from '../lib/ports/session-store.ts';
import type { RuntimeDeps } from '../lib/runtime/deps.ts';
import { noFailpoints } from '../lib/runtime/failpoints.ts';
import { acceptTicket } from '../lib/runtime/intake.ts';
import { runKick } from '../lib/runtime/step-runner.ts';
import { silentTelemetry } from './in-process-runtime.ts';
import { readTarget } from './request-meter.ts';

/** One request as the runtime waited for it: what, where, from when to when (performance.now()). */
interface TimedRequest {
  readonly kind: string;
  readonly service: 'dynamodb' | 'sqs';
  readonly start: number;
  readonly end: number;
}

/** Where one latency's time went, as medians over its samples. */
export interface LatencyBreakdown {
  /** Waiting for SQS to hand a sent message to its poller (send returned → the handler started). */
  readonly queueHopMs: number;
  /** Time with a DynamoDB request in flight (concurrent ones counted once). */
  readonly storeMs: number;
  /** Time with an SQS send in flight (a kick, a result); it may overlap store time when both run at once. */
  readonly queueSendMs: number;
  /** The rest: the runtime's own work, the step in flight, the event loop. */
  readonly otherMs: number;
  /** Requests per sample, by kind (`GetItem:record`, `SendMessage:results`…), as a mean. */
  readonly requests: Record<string, number>;
}

export interface LatencyFigure {
  readonly samplesMs: readonly number[];
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly breakdown: LatencyBreakdown;
}

export interface TurnLatencyFigures {
  readonly turns: number;
  /** `send` returned (the turn accepted, its kick sent) → the turn's first model call starts. */
  readonly sendToFirstModelCall: LatencyFigure;
  /** The turn's last model answer returned → its result acknowledged by the results queue. */
  readonly lastAnswerToResult: LatencyFigure;
  /** The same result → a consumer's long poll on the results queue received it. */
  readonly resultToConsumerMs: { readonly p50Ms: number; readonly p99Ms: number };
  /** `send --mode inject` returned → the running turn journaled the message. */
  readonly injectToSeen: LatencyFigure;
  /** The step in flight while messages were injected: each `work` call sleeps this long. */
  readonly workMs: number;
}

const percentile = (values: readonly number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
};
const median = (values: readonly number[]) => percentile(values, 50);

/** The work queue's pollers: Lambda runs several; two keep an injected message's kick from queueing behind a leg. */
const POLLERS = 2;
const POLL_MS = 2;
/** A wait this long for the next thing to happen is a failed bench, not a slow machine. */
const WAIT_LIMIT_MS = 120_000;

/**
 * Latency of a conversation's turns on the local stack: DynamoDB Local and fauxqs, the runtime's
 * real adapters, the local event-source mapping long-polling the work queue, and a consumer
 * long-polling the results queue — all in this process, so every moment is read off one clock.
 * The model answers at once; `work` calls take `workMs`. Every DynamoDB and SQS request is timed
 * at the client, so each latency splits into queue hops, store requests, queue sends and the rest.
 */
export async function measureTurnLatency(options: {
  emulators: { region: string; endpoints: Endpoints };
  turns: number;
  injectSamples: number;
  workMs: number;
}): Promise<TurnLatencyFigures> {
  const { region, endpoints } = options.emulators;
  const resources = await provisionResources(endpoints, {
    prefix: `benchlat${Date.now().toString(36)}`,
    functionTimeoutS: 60,
    region,
  });
  const aws = { region, endpoints, credentials: LOCAL_CREDENTIALS };
  const timeline: TimedRequest[] = [];
  const queueName = new Map([
    [resources.queues.work.url, 'work'],
    [resources.queues.results.url, 'results'],
    [resources.queues.tickets.url, 'tickets'],
  ]);
  const sqs = createSqsClient(aws);
  timeRequests(sqs, 'sqs', timeline, (input) => queueName.get(String(input.QueueUrl)) ?? 'other');
  // The consumer and the pollers long-poll on clients of their own: their waits are not the runtime's requests.
  const pollSqs = createSqsClient(aws);
  const documents = createDocumentClient(aws);
  timeRequests(documents, 'dynamodb', timeline, readTarget);

  const journaled = new Map<string, number>();
  const store = observeAppends(new DynamoDbSessionStore({ client: documents, table: resources.table }), (entry) => {
    if (entry.kind === 'message' && entry.data.id) journaled.set(entry.data.id, performance.now());
  });
  const calls: { turnId: string | undefined; start: number; end: number; final: boolean }[] = [];
  let turnOfCall: string | undefined;
  const agent = timedModel(supportDesk({ workMs: options.workMs }), (start, end, response) =>
    calls.push({ turnId: turnOfCall, start, end, final: response.toolCalls.length === 0 }),
  );
  const workQueue = new SqsWorkQueue({ client: sqs, queueUrl: resources.queues.work.url });
  const deps: RuntimeDeps = {
    store,
    workQueue,
    results: new SqsResultPublisher({ client: sqs, queueUrl: resources.queues.results.url }),
    clock: systemClock,
    agents: agentRegistry([agent]),
    telemetry: silentTelemetry,
    failpoint: noFailpoints,
    config: { leaseTtlMs: 30_000, reserveMs: 2_000, retentionDays: 1, sweepGraceMs: 30_000 },
    random: Math.random,
    ids: randomIds,
  };
  // The sender's requests are timed too, named `send ` + kind: an injected message's time starts
  // when `send` is called, so its own reads and writes are part of it.
  const senderSqs = createSqsClient(aws);
  timeRequests(senderSqs, 'sqs', timeline, (input) => `send ${queueName.get(String(input.QueueUrl)) ?? 'other'}`);
  const senderDocuments = createDocumentClient(aws);
  timeRequests(senderDocuments, 'dynamodb', timeline, (input) => `send ${readTarget(input)}`);
  const client = new BatonClient({
    store: new DynamoDbSessionStore({ client: senderDocuments, table: resources.table }),
    workQueue: new SqsWorkQueue({ client: senderSqs, queueUrl: resources.queues.work.url }),
    tickets: new SqsTicketQueue({ client: senderSqs, queueUrl: resources.queues.tickets.url }),
    clock: systemClock,
  });

  const invoked: number[] = [];
  const step = async (event: SQSEvent, context: Context) => {
    invoked.push(performance.now());
    for (const record of event.Records) {
      const kick = Kick.parse(JSON.parse(record.body));
      turnOfCall = kick.turnId ?? turnOfCall;
      await runKick(kick, { requestId: randomUUID(), remainingMs: () => context.getRemainingTimeInMillis() }, deps);
    }
    return { batchItemFailures: [] };
  };
  const mappings: RunningMapping[] = Array.from({ length: POLLERS }, () =>
    startEventSourceMapping({
      sqs: pollSqs,
      queueUrl: resources.queues.work.url,
      queueArn: resources.queues.work.arn,
      region,
      functionName: 'step',
      handler: step as never,
      timeoutS: 60,
      log: () => {},
    }),
  );
  const received = new Map<string, number>();
  const consumer = consumeResults(pollSqs, resources.queues.results.url, received);
  const waitFor = async (ready: () => boolean) => {
    const deadline = performance.now() + WAIT_LIMIT_MS;
    while (!ready()) {
      if (performance.now() > deadline) throw new Error(`latency bench: nothing moved for ${WAIT_LIMIT_MS} ms`);
      await systemClock.sleep(POLL_MS);
    }
  };

  try {
    const ticketId = `lat-${randomUUID()}`;
    const { key } = await acceptTicket(
      JSON.stringify({ v: 1, ticketId, agent: agent.name, input: { text: 'hello' } }),
      undefined,
      deps,
    );
    await waitFor(() => received.has(ticketId));

    // Turns sent to the idle conversation: send → first model call, last answer → result.
    const toFirstCall: Sample[] = [];
    const toResult: Sample[] = [];
    const toConsumer: number[] = [];
    for (let i = 0; i < options.turns; i++) {
      const turnId = `t-${i}-${randomUUID()}`;
      await client.send(key.id, { text: 'work 1' }, { id: turnId });
      // Accepted once its kick is on the work queue: send's last request.
      const accepted = timeline.findLast((r) => r.kind === 'send SendMessage:work')!.end;
      await waitFor(() => received.has(turnId));
      const ofTurn = calls.filter((c) => c.turnId === turnId);
      const first = ofTurn[0]!;
      const last = ofTurn.findLast((c) => c.final)!;
      const sentResult = timeline.find((r) => r.kind === 'SendMessage:results' && r.start >= last.end)!;
      const hop = invoked.find((t) => t >= accepted && t <= first.start) ?? accepted;
      toFirstCall.push({ from: accepted, to: first.start, hopMs: hop - accepted });
      toResult.push({ from: last.end, to: sentResult.end, hopMs: 0 });
      toConsumer.push(received.get(turnId)! - sentResult.end);
    }

    // Messages injected into a running turn of `work` calls.
    const longTurn = `long-${randomUUID()}`;
    const injected: Sample[] = [];
    // Long enough that the last message is sent well before the turn's last step.
    await client.send(key.id, { text: `work ${options.injectSamples * 4 + 20}` }, { id: longTurn });
    for (let i = 0; i < options.injectSamples; i++) {
      await waitFor(() => calls.filter((c) => c.turnId === longTurn).length >= 4 * (i + 1));
      const id = `note-${i}-${randomUUID()}`;
      const sent = performance.now();
      await client.send(key.id, { text: `note ${i}` }, { id, mode: 'inject' });
      await waitFor(() => journaled.has(id));
      injected.push({ from: sent, to: journaled.get(id)!, hopMs: 0 });
    }
    await waitFor(() => received.has(longTurn));

    return {
      turns: options.turns,
      sendToFirstModelCall: figure(toFirstCall, timeline),
      lastAnswerToResult: figure(toResult, timeline),
      resultToConsumerMs: { p50Ms: median(toConsumer), p99Ms: percentile(toConsumer, 99) },
      injectToSeen: figure(injected, timeline),
      workMs: options.workMs,
    };
  } finally {
    await Promise.all(mappings.map((m) => m.stop()));
    await consumer.stop();
    for (const c of [sqs, pollSqs, senderSqs]) c.destroy();
  }
}

/** One latency sample: from, to, and the part of it spent waiting for a queue to deliver. */
interface Sample {
  readonly from: number;
  readonly to: number;
  readonly hopMs: number;
}

/** Percentiles of the samples, and where their time went: requests inside each sample's window. */
function figure(samples: readonly Sample[], timeline: readonly TimedRequest[]): LatencyFigure {
  const parts = samples.map((s) => {
    const inside = timeline.filter((r) => r.start >= s.from - 0.5 && r.end <= s.to + 0.5);
    // The union of the requests' intervals: concurrent requests (the sender's and the leg's, a
    // renewal beside an append) are waited for once.
    const sum = (service: TimedRequest['service']) => unionMs(inside.filter((r) => r.service === service));
    const store = sum('dynamodb');
    const send = sum('sqs');
    return { total: s.to - s.from, hop: s.hopMs, store, send, inside };
  });
  const requests = new Map<string, number>();
  for (const p of parts) for (const r of p.inside) requests.set(r.kind, (requests.get(r.kind) ?? 0) + 1);
  const samplesMs = parts.map((p) => p.total);
  const breakdown = {
    queueHopMs: median(parts.map((p) => p.hop)),
    storeMs: median(parts.map((p) => p.store)),
    queueSendMs: median(parts.map((p) => p.send)),
    otherMs: median(parts.map((p) => Math.max(0, p.total - p.hop - p.store - p.send))),
    requests: Object.fromEntries(
      [...requests].sort((a, b) => b[1] - a[1]).map(([kind, n]) => [kind, n / Math.max(1, samples.length)]),
    ),
  };
  return { samplesMs, p50Ms: median(samplesMs), p99Ms: percentile(samplesMs, 99), breakdown };
}

/** How long at least one of `requests` was in flight. */
function unionMs(requests: readonly TimedRequest[]): number {
  let total = 0;
  let openUntil = Number.NEGATIVE_INFINITY;
  for (const r of [...requests].sort((a, b) => a.start - b.start)) {
    if (r.end <= openUntil) continue;
    total += r.end - Math.max(r.start, openUntil);
    openUntil = r.end;
  }
  return total;
}

/** The slice of an SDK client's middleware stack the timer uses (the SQS and document clients differ in their types). */
interface MiddlewareStackLike {
  add(
    middleware: (
      next: (args: { input: object }) => Promise<unknown>,
      context: { commandName?: string },
    ) => (args: { input: object }) => Promise<unknown>,
    options: { step: 'initialize'; name: string },
  ): void;
}

/** Times every request of an SDK client (from before it is serialized to its parsed response) into `timeline`. */
function timeRequests(
  client: { middlewareStack: unknown },
  service: TimedRequest['service'],
  timeline: TimedRequest[],
  target: (input: Record<string, unknown>) => string,
): void {
  (client.middlewareStack as MiddlewareStackLike).add(
    (next, context) => async (args) => {
      const start = performance.now();
      const [prefix, item] = splitPrefix(target(args.input as Record<string, unknown>));
      const kind = `${prefix}${(context.commandName ?? '').replace('Command', '')}:${item}`;
      try {
        return await next(args);
      } finally {
        timeline.push({ kind, service, start, end: performance.now() });
      }
    },
    { step: 'initialize', name: 'benchRequestTimer' },
  );
}

/** `send record` → ['send ', 'record']: the sender's requests keep their prefix before the command. */
const splitPrefix = (target: string): [string, string] =>
  target.startsWith('send ') ? ['send ', target.slice(5)] : ['', target];

/** The agent with its model's calls timed: when each started and when its response came back. */
function timedModel(
  agent: AgentDefinition,
  onCall: (start: number, end: number, response: ModelResponse) => void,
): AgentDefinition {
  const model = agent.model;
  return {
    ...agent,
    model: {
      id: model.id,
      maxDurationMs: model.maxDurationMs,
      converse: async (request, signal, stream) => {
        const start = performance.now();
        const response = await model.converse(request, signal, stream);
        onCall(start, performance.now(), response);
        return response;
      },
    },
  };
}

/** A store that reports every accepted journal append, when it returned. */
function observeAppends(store: DynamoDbSessionStore, onAppend: (entry: JournalEntry) => void): SessionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'append') {
        return async (...args: Parameters<SessionStore['append']>) => {
          await target.append(...args);
          onAppend(args[1]);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A consumer of the results queue, long-polling as a producer's would: when each result (by turn) arrived. */
function consumeResults(sqs: SQSClient, queueUrl: string, received: Map<string, number>) {
  const abort = new AbortController();
  const loop = (async () => {
    while (!abort.signal.aborted) {
      const { Messages } = await sqs
        .send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 20, MaxNumberOfMessages: 10 }), {
          abortSignal: abort.signal,
        })
        .catch(() => ({ Messages: undefined }));
      const at = performance.now();
      for (const message of Messages ?? []) {
        const body = JSON.parse(message.Body ?? '{}') as { turnId?: string };
        if (body.turnId) received.set(body.turnId, at);
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
      }
    }
  })();
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}
