import { supportDesk } from '../examples/support-desk/agent.ts';
import { MemoryTicketQueue } from '../lib/adapters/memory/memory-queues.ts';
import { BatonClient } from '../lib/client/baton-client.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import { systemClock } from '../lib/ports/clock.ts';
import { sweep } from '../lib/runtime/sweeper.ts';
import { acceptTurn } from '../lib/runtime/turn-intake.ts';
import { type BenchDynamoDb, InProcessRuntime } from './in-process-runtime.ts';
import { diffTotals, type MeterTotals } from './request-meter.ts';

export interface ConversationFigures {
  readonly turns: number;
  /** Model calls and tool results over all turns. */
  readonly steps: number;
  /** Every write of the conversation (intake, turn bookkeeping, legs, steps) per step. */
  readonly writesPerStep: number;
  /** Writes per step over the work steps of the last turn: what a step costs deep in a long conversation. */
  readonly lastTurnWritesPerStep: number;
  /** An idle conversation over a measured period with the sweeper polling throughout. */
  readonly idle: {
    readonly periodMs: number;
    readonly sweeps: number;
    readonly writes: number;
    readonly kicks: number;
  };
  /** From `send --mode inject` to the message journaled in the running turn, each sample. */
  readonly injectLatencyMs: readonly number[];
}

export interface ConversationCostOptions {
  readonly db: BenchDynamoDb;
  readonly turns: number;
  /** Work calls per turn (`work <k>`: k tool calls, 2k + 1 steps). */
  readonly workPerTurn: number;
  readonly workMs: number;
  readonly idleMs: number;
  readonly injectSamples: number;
  readonly functionTimeoutMs: number;
}

const isStep = (entry: JournalEntry) => entry.kind === 'model' || entry.kind === 'tool';

/**
 * A support-desk conversation of `turns` turns through the real runtime on DynamoDB Local:
 * writes per step over all of it and over the last turn's steps, what an idle period costs with
 * the sweeper polling, and how long an injected message takes to land in a running turn.
 */
export async function measureConversationCost(options: ConversationCostOptions): Promise<ConversationFigures> {
  const agent = supportDesk({ workMs: options.workMs });
  const stepTotals: { turnId: string | undefined; totals: MeterTotals }[] = [];
  const journaledAt = new Map<string, number>();
  let runtime: InProcessRuntime | undefined;
  runtime = new InProcessRuntime({
    db: options.db,
    agents: [agent],
    functionTimeoutMs: options.functionTimeoutMs,
    onAppend: (_key: SessionKey, entry: JournalEntry) => {
      if (!runtime) return;
      if (entry.kind === 'message' && entry.data.id) journaledAt.set(entry.data.id, performance.now());
      if (isStep(entry)) stepTotals.push({ turnId: entry.turnId, totals: runtime.meter.snapshot() });
    },
  });
  const work = { text: `work ${options.workPerTurn}` };
  const before = runtime.meter.snapshot();
  const key = await runtime.submit(agent.name, work, 'turn-1');
  await runtime.drain(1);
  for (let turn = 2; turn <= options.turns; turn++) {
    const turnId = `turn-${turn}`;
    await acceptTurn({ key, turnId, ticketId: turnId, input: work, sweepGraceMs: 30_000 }, runtime.deps);
    await runtime.drain(turn);
  }
  const total = diffTotals(runtime.meter.snapshot(), before);
  const last = stepTotals.filter((s) => s.turnId === `turn-${options.turns}`);
  // From the first step of the last turn to its last: the turn's own steps, no intake or hand-over.
  const lastTurn = diffTotals(last.at(-1)!.totals, last[0]!.totals);

  // Idle: nothing runs, the sweeper polls the whole period.
  const idleBefore = runtime.meter.snapshot();
  const kicksBefore = runtime.work.sent.length;
  const swept = await sweep(
    { windowMs: options.idleMs, intervalMs: 200, stalledAfterMs: 60_000, remainingMs: () => 60_000 },
    runtime.deps,
  );
  const idleCost = diffTotals(runtime.meter.snapshot(), idleBefore);
  const idleKicks = runtime.work.sent.length - kicksBefore;

  // Inject: messages sent from a client while a long turn runs; latency to the journaled entry.
  const client = new BatonClient({
    store: runtime.deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: runtime.work,
    clock: systemClock,
  });
  const longTurn = `turn-${options.turns + 1}`;
  const longWork = { text: `work ${options.injectSamples * 4 + 4}` };
  await acceptTurn({ key, turnId: longTurn, ticketId: longTurn, input: longWork, sweepGraceMs: 30_000 }, runtime.deps);
  const running = runtime.drain(options.turns + 1);
  const injectLatencyMs: number[] = [];
  for (let i = 0; i < options.injectSamples; i++) {
    while (stepTotals.filter((s) => s.turnId === longTurn).length < 4 * (i + 1)) await systemClock.sleep(5);
    const id = `note-${i}`;
    const sent = performance.now();
    await client.send(key.id, { text: `note ${i}` }, { id, mode: 'inject' });
    while (!journaledAt.has(id)) await systemClock.sleep(2);
    injectLatencyMs.push(journaledAt.get(id)! - sent);
  }
  await running;

  return {
    turns: options.turns,
    steps: stepTotals.filter((s) => s.turnId !== longTurn).length,
    writesPerStep: total.writes / stepTotals.filter((s) => s.turnId !== longTurn).length,
    lastTurnWritesPerStep: lastTurn.writes / (last.length - 1),
    idle: {
      periodMs: options.idleMs,
      sweeps: swept.polls,
      writes: idleCost.writes,
      kicks: idleKicks,
    },
    injectLatencyMs,
  };
}
