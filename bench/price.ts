import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { longHaul } from '../examples/long-haul/agent.ts';
import { supportDesk } from '../examples/support-desk/agent.ts';
import { createDocumentClient } from '../lib/adapters/aws-clients.ts';
import { pkOf } from '../lib/adapters/session-item-codec.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import { RUNTIME_DEFAULTS } from '../lib/core/resources.ts';
import { SWEEP_SHARDS } from '../lib/ports/session-store.ts';
import { sweep } from '../lib/runtime/sweeper.ts';
import { acceptTurn } from '../lib/runtime/turn-intake.ts';
import { type BenchDynamoDb, InProcessRuntime, meteredClient } from './in-process-runtime.ts';
import { diffTotals, type MeterTotals } from './request-meter.ts';

/**
 * AWS list prices in us-east-1 on the date below (on-demand DynamoDB, standard SQS, Lambda on
 * arm64 as the construct deploys it), free tiers left out. Sources: aws.amazon.com/dynamodb/pricing/on-demand,
 * aws.amazon.com/sqs/pricing, aws.amazon.com/lambda/pricing.
 */
export const AWS_PRICES = {
  region: 'us-east-1',
  date: '2026-12-02',
  /** Per write request unit (1 KB of an item written; index updates count too). */
  dynamodbWriteUnit: 0.625 / 1e6,
  /** Per read request unit (4 KB read strongly consistent, 8 KB eventually). */
  dynamodbReadUnit: 0.125 / 1e6,
  dynamodbStorageGbMonth: 0.25,
  /** Per request (each 64 KB of a message); a Lambda event source's receive and delete are requests too. */
  sqsRequest: 0.4 / 1e6,
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecondArm: 0.0000133334,
} as const;

/**
 * The peers' published prices, from the competitive scan (PEERS.md, beside DESIGN.md) and the sources it names (docs/PERFORMANCE.md
 * cites them): each bills its orchestration per unit, and the agent's model and tools on top.
 */
export const PEER_PRICES = {
  /** [L5] $8 per million durable operations, $0.25 per GB of checkpoint data written, $0.15 per GB-month kept. */
  lambdaDurable: { operation: 8 / 1e6, gbWritten: 0.25, gbMonth: 0.15 },
  /** [T7] actions ~$25–50 per million by plan and volume: the low end, so the comparison favours Temporal. */
  temporalCloud: { action: 25 / 1e6 },
  /** [I7] one execution per run and one per step; PEERS.md's sources give no per-execution rate. */
  inngest: { execution: undefined as number | undefined },
  /** [X2] $2.50 per 100,000 steps. */
  vercelWorkflow: { step: 2.5 / 1e5 },
} as const;

/**
 * What the peers' units come to per step, measured or read from their docs: a durable function
 * checkpoints ~711 bytes per step of long-haul (the durable section of this bench); a Temporal
 * agent runs each model call and tool call as an activity (one action each) and starts or
 * signals its workflow once per run or turn; Inngest bills the run and each step.
 */
const DURABLE_CHECKPOINT_BYTES_PER_STEP = 711;

/**
 * The time a function is billed for Baton's own requests: in-region round trips (DynamoDB's
 * single-digit milliseconds, an SQS send a little more), at the construct's default memory of
 * 1,024 MB for intake and step. The agent's model and tools are billed the same on any platform.
 */
export const BILLED_REQUEST_MS = { dynamodb: 5, sqs: 10 } as const;
const FUNCTION_MEMORY_GB = 1;
/**
 * The sweeper: one run a minute at 256 MB (infra/constructs/baton-runtime.ts). With nothing leased,
 * pending or due it polls once (a query per sweep shard) and returns; billed for its queries at
 * BILLED_REQUEST_MS.dynamodb each plus `overheadMs` for the handler and its metrics flush.
 */
const SWEEPER = { runsPerDay: 1_440, memoryGb: 0.25, overheadMs: 10 } as const;
/** Before: every run polled for its whole 55 s window, every 5 s, whatever the load. */
const SWEEPER_BEFORE = { secondsPerRun: 55, pollsPerRun: 11 } as const;

/** The requests one workload made, as counted by the bench (DynamoDB at the client, queues in memory). */
export interface WorkloadCounts {
  readonly steps: number;
  /** Step invocations (one per kick) in the bench's 6 s simulated invocations: a model that takes seconds per call gives about as many over 5-minute legs. */
  readonly legs: number;
  /** Runs (tickets) or turns started: each is a workflow start, a signal or an execution for a peer. */
  readonly starts: number;
  readonly dynamodb: MeterTotals;
  /** SQS requests: each message sent, received and deleted (a ticket, a kick, a result). */
  readonly sqsRequests: number;
  /** Lambda invocations: intake or API per ticket or turn, step per kick. */
  readonly invocations: number;
}

export interface PriceFigures {
  readonly longHaul: WorkloadCounts;
  readonly chatTurn: WorkloadCounts;
  /** The chat conversation's items once idle (record, turns, journal), as their JSON size. */
  readonly idleStoredBytes: number;
  /** Requests while idle: the sweeper polls the sweep index, where an idle session is not. */
  readonly idleRequests: number;
  /** One scheduled sweeper run on this table once both sessions are idle, with the deployed window and interval. */
  readonly idleSweep: IdleSweep;
}

export interface IdleSweep {
  readonly polls: number;
  readonly reads: number;
  readonly rcu: number;
  /** Wall time of the run, in process on DynamoDB Local. */
  readonly ms: number;
  /** False when the table still held a session due within the window (the bench's other sections): the run was cut short. */
  readonly idle: boolean;
}

/**
 * Counts the requests of 1,000 steps of long-haul (a session of 500 tool calls: 1,001 steps),
 * of one 5-step turn of a support-desk conversation (turn 2 of `work 2`), and what that
 * conversation keeps stored once idle.
 */
export async function measurePriceWorkloads(options: {
  db: BenchDynamoDb;
  functionTimeoutMs: number;
}): Promise<PriceFigures> {
  // Long-haul: one ticket, its legs and steps.
  // The sweep grace as deployed (the lease TTL): a hand-off's backstop then keeps the lease's sweepAt.
  const sweepGraceMs = RUNTIME_DEFAULTS.leaseTtlMs;
  const haul = new InProcessRuntime({
    db: options.db,
    agents: [longHaul],
    functionTimeoutMs: options.functionTimeoutMs,
    sweepGraceMs,
  });
  const haulBefore = haul.meter.snapshot();
  await haul.submit(longHaul.name, { steps: 500, payloadBytes: 256, stepMs: 0 });
  const [haulResult] = await haul.drain(1);
  if (haulResult?.status !== 'completed') throw new Error(`long-haul ended ${haulResult?.status}`);
  const longHaulCounts = counts(haulResult.steps, 1, diffTotals(haul.meter.snapshot(), haulBefore), {
    tickets: 1,
    turns: 0,
    kicks: haul.work.sent.length,
    results: haul.results.sent.length,
  });

  // A chat: the first turn creates the session; the second, sent as `baton send` sends it, is measured.
  const agent = supportDesk({ workMs: 0 });
  let steps = 0;
  const chat = new InProcessRuntime({
    db: options.db,
    agents: [agent],
    functionTimeoutMs: options.functionTimeoutMs,
    sweepGraceMs,
    onAppend: (_key: SessionKey, entry: JournalEntry) => {
      if (entry.kind === 'model' || entry.kind === 'tool') steps++;
    },
  });
  const key = await chat.submit(agent.name, { text: 'work 2' }, 'price-turn-1');
  await chat.drain(1);
  const [stepsBefore, kicksBefore, resultsBefore, turnBefore] = [
    steps,
    chat.work.sent.length,
    chat.results.sent.length,
    chat.meter.snapshot(),
  ];
  await acceptTurn(
    { key, turnId: 'price-turn-2', ticketId: 'price-turn-2', input: { text: 'work 2' }, sweepGraceMs },
    chat.deps,
  );
  await chat.drain(2);
  const chatTurn = counts(steps - stepsBefore, 1, diffTotals(chat.meter.snapshot(), turnBefore), {
    tickets: 0,
    turns: 1,
    kicks: chat.work.sent.length - kicksBefore,
    results: chat.results.sent.length - resultsBefore,
  });

  return {
    longHaul: longHaulCounts,
    chatTurn,
    idleStoredBytes: await storedBytes(options.db, key),
    idleRequests: 0,
    idleSweep: await idleSweep(chat),
  };
}

/**
 * One sweeper run as scheduled (the deployed window and interval) with both sessions idle. It
 * should poll once and return; a table that still holds work due within the window (the bench's
 * other sections share it) would keep it polling, so it is cut off after a few seconds and flagged.
 */
async function idleSweep(runtime: InProcessRuntime): Promise<IdleSweep> {
  const before = runtime.meter.snapshot();
  const started = Date.now();
  const result = await sweep(
    {
      windowMs: RUNTIME_DEFAULTS.sweepWindowMs,
      intervalMs: RUNTIME_DEFAULTS.sweepIntervalMs,
      stalledAfterMs: 2 * RUNTIME_DEFAULTS.leaseTtlMs,
      remainingMs: () => RUNTIME_DEFAULTS.sweepWindowMs + 15_000 - (Date.now() - started),
      signal: AbortSignal.timeout(3_000),
    },
    runtime.deps,
  );
  const ms = Date.now() - started;
  const cost = diffTotals(runtime.meter.snapshot(), before);
  return { polls: result.polls, reads: cost.reads, rcu: cost.rcu, ms, idle: result.idle };
}

function counts(
  steps: number,
  starts: number,
  dynamodb: MeterTotals,
  messages: { tickets: number; turns: number; kicks: number; results: number },
): WorkloadCounts {
  return {
    steps,
    // Each kick runs one leg (or is dropped by a leg that holds the lease): one step invocation.
    legs: messages.kicks,
    starts,
    dynamodb,
    // Tickets and kicks are sent, then received and deleted by a Lambda event source; results are sent and read by the team's consumer.
    sqsRequests: 3 * (messages.tickets + messages.kicks + messages.results),
    // An intake invocation per ticket, an API invocation per turn sent, a step invocation per kick.
    invocations: messages.tickets + messages.turns + messages.kicks,
  };
}

/** The session's items as stored: their JSON size, which is close to DynamoDB's item size. */
async function storedBytes(db: BenchDynamoDb, key: SessionKey): Promise<number> {
  const documents = createDocumentClient({ region: db.region }, meteredClient(db).client);
  let bytes = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new QueryCommand({
        TableName: db.table,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pkOf(key) },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) bytes += Buffer.byteLength(JSON.stringify(item));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return bytes;
}

export interface PriceLine {
  readonly usd: number | undefined;
  readonly units: string;
}

export interface WorkloadPrice {
  readonly baton: PriceLine;
  readonly lambdaDurable: PriceLine;
  readonly temporalCloud: PriceLine;
  readonly inngest: PriceLine;
  readonly vercelWorkflow: PriceLine;
  /** The cheapest priced peer's cost ÷ Baton's. */
  readonly belowCheapest: { readonly peer: string; readonly times: number };
}

/** Baton's AWS bill for a workload, scaled to `steps` steps (1,000 for long-haul, 5 for a turn). */
export function priceWorkload(w: WorkloadCounts, steps = w.steps): WorkloadPrice {
  const scale = steps / w.steps;
  const p = AWS_PRICES;
  const requests = w.dynamodb.reads + w.dynamodb.writes;
  const sends = w.sqsRequests / 3;
  const gbSeconds =
    (FUNCTION_MEMORY_GB * (requests * BILLED_REQUEST_MS.dynamodb + sends * BILLED_REQUEST_MS.sqs)) / 1000;
  const baton =
    scale *
    (w.dynamodb.wcu * p.dynamodbWriteUnit +
      w.dynamodb.rcu * p.dynamodbReadUnit +
      w.sqsRequests * p.sqsRequest +
      w.invocations * p.lambdaRequest +
      gbSeconds * p.lambdaGbSecondArm);
  const starts = w.starts * scale;
  const units = steps + starts;
  const durableBytes = steps * DURABLE_CHECKPOINT_BYTES_PER_STEP;
  const peers = {
    lambdaDurable: {
      usd: units * PEER_PRICES.lambdaDurable.operation + (durableBytes / 1e9) * PEER_PRICES.lambdaDurable.gbWritten,
      units: `${int(units)} ops, ${kb(durableBytes)} written`,
    },
    temporalCloud: { usd: units * PEER_PRICES.temporalCloud.action, units: `${int(units)} actions` },
    inngest: {
      usd: PEER_PRICES.inngest.execution === undefined ? undefined : units * PEER_PRICES.inngest.execution,
      units: `${int(units)} executions`,
    },
    vercelWorkflow: { usd: steps * PEER_PRICES.vercelWorkflow.step, units: `${int(steps)} steps` },
  };
  const cheapest = Object.entries(peers)
    .filter(([, line]) => line.usd !== undefined)
    .sort(([, a], [, b]) => a.usd! - b.usd!)[0]!;
  return {
    baton: {
      usd: baton,
      units: `${dec(scale * w.dynamodb.wcu)} WRU, ${dec(scale * w.dynamodb.rcu)} RRU, ${dec(scale * w.sqsRequests)} SQS requests, ${dec(scale * w.invocations)} invocations, ${dec(scale * gbSeconds, 2)} GB-s`,
    },
    ...peers,
    belowCheapest: { peer: cheapest[0], times: cheapest[1].usd! / baton },
  };
}

/** An idle conversation for a day: Baton makes no request (the sweeper does not see it); storage is all. */
export function priceIdleDay(storedBytes: number): { baton: number; lambdaDurable: number; times: number } {
  const gbDay = storedBytes / 1e9 / 30;
  const baton = gbDay * AWS_PRICES.dynamodbStorageGbMonth;
  // A durable execution waiting on a callback is not billed; it keeps its checkpoints, about as many bytes.
  const lambdaDurable = gbDay * PEER_PRICES.lambdaDurable.gbMonth;
  return { baton, lambdaDurable, times: lambdaDurable / baton };
}

/**
 * What a deployment costs per day with nothing to do: the sweeper's scheduled runs. Each polls
 * once — a query per shard, at least 0.5 read unit each (an empty, eventually consistent page) —
 * and returns; `measured` (the bench's own idle run) gives the queries when it was idle.
 */
export function deploymentFloorPerDay(measured?: IdleSweep): {
  usd: number;
  gbSeconds: number;
  reads: number;
  before: { usd: number; gbSeconds: number; reads: number };
} {
  const s = SWEEPER;
  const queries = measured?.idle ? measured.reads : SWEEP_SHARDS;
  const gbSeconds = (s.runsPerDay * (queries * BILLED_REQUEST_MS.dynamodb + s.overheadMs) * s.memoryGb) / 1000;
  // DynamoDB Local reports no capacity for an empty page; DynamoDB bills a query at least 0.5 unit (eventually consistent).
  const reads = s.runsPerDay * Math.max(measured?.idle ? measured.rcu : 0, queries * 0.5);
  const price = (gbs: number, rru: number) =>
    gbs * AWS_PRICES.lambdaGbSecondArm + s.runsPerDay * AWS_PRICES.lambdaRequest + rru * AWS_PRICES.dynamodbReadUnit;
  const b = SWEEPER_BEFORE;
  const beforeGbSeconds = s.runsPerDay * b.secondsPerRun * s.memoryGb;
  const beforeReads = s.runsPerDay * b.pollsPerRun * SWEEP_SHARDS * 0.5;
  return {
    usd: price(gbSeconds, reads),
    gbSeconds,
    reads,
    before: { usd: price(beforeGbSeconds, beforeReads), gbSeconds: beforeGbSeconds, reads: beforeReads },
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const dec = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits });
const kb = (bytes: number) => `${dec(bytes / 1024)} KB`;

/** Dollars with two significant digits and no exponent. */
export function usd(n: number | undefined): string {
  if (n === undefined) return 'n/a';
  if (n === 0) return '$0';
  const digits = Math.max(2, 1 - Math.floor(Math.log10(Math.abs(n))));
  return `$${n.toFixed(digits)}`;
}

const PEER_NAMES: Record<string, string> = {
  lambdaDurable: 'Lambda durable',
  temporalCloud: 'Temporal Cloud',
  inngest: 'Inngest',
  vercelWorkflow: 'Vercel Workflow',
};

/** The section's figures and what they cost, for `--json` and the table. */
export interface PriceReport {
  readonly prices: typeof AWS_PRICES;
  readonly peers: typeof PEER_PRICES;
  readonly billedRequestMs: typeof BILLED_REQUEST_MS;
  readonly counts: PriceFigures;
  readonly longHaul1000Steps: WorkloadPrice;
  readonly chatTurn: WorkloadPrice;
  readonly idleConversationDay: ReturnType<typeof priceIdleDay>;
  readonly idleDeploymentDay: ReturnType<typeof deploymentFloorPerDay>;
}

export function priceReport(counts: PriceFigures): PriceReport {
  return {
    prices: AWS_PRICES,
    peers: PEER_PRICES,
    billedRequestMs: BILLED_REQUEST_MS,
    counts,
    longHaul1000Steps: priceWorkload(counts.longHaul, 1_000),
    chatTurn: priceWorkload(counts.chatTurn),
    idleConversationDay: priceIdleDay(counts.idleStoredBytes),
    idleDeploymentDay: deploymentFloorPerDay(counts.idleSweep),
  };
}

/** The price section's rows for the bench table: [label, value, note]. */
export function priceRows(report: PriceReport): Array<[string, string, string]> {
  const figures = report.counts;
  const rows: Array<[string, string, string]> = [];
  const workload = (label: string, price: WorkloadPrice) => {
    rows.push([label, usd(price.baton.usd), price.baton.units]);
    for (const peer of ['lambdaDurable', 'temporalCloud', 'inngest', 'vercelWorkflow'] as const) {
      const line = price[peer];
      rows.push([`  ${PEER_NAMES[peer]}`, usd(line.usd), line.units + (line.usd === undefined ? ' (no rate)' : '')]);
    }
    rows.push([
      '  Baton below the cheapest',
      `${dec(price.belowCheapest.times)}×`,
      `${PEER_NAMES[price.belowCheapest.peer]}; target ≥ 10×`,
    ]);
  };
  workload(`1,000 steps of long-haul (${figures.longHaul.legs} legs)`, report.longHaul1000Steps);
  workload(`one ${figures.chatTurn.steps}-step chat turn`, report.chatTurn);
  const idle = report.idleConversationDay;
  rows.push([
    'an idle conversation, per day',
    usd(idle.baton),
    `${kb(figures.idleStoredBytes)} stored, ${figures.idleRequests} requests; Lambda durable ${usd(idle.lambdaDurable)} (${dec(idle.times)}×)`,
  ]);
  const floor = report.idleDeploymentDay;
  const run = figures.idleSweep;
  rows.push([
    'a deployment with nothing to do, per day',
    usd(floor.usd),
    `the sweeper: 1,440 runs, ${dec(floor.gbSeconds)} GB-s, ${int(floor.reads)} RRU; polling the whole minute ${usd(floor.before.usd)}`,
  ]);
  rows.push([
    '  an idle sweeper run (deployed window)',
    `${run.polls} poll${run.polls === 1 ? '' : 's'}`,
    run.idle
      ? `${run.reads} queries, ${dec(run.rcu)} RRU, ${int(run.ms)} ms in process`
      : `cut off after ${int(run.ms)} ms: the table held work due within the window (modelled as one poll)`,
  ]);
  return rows;
}
