import { supportDesk } from '../examples/support-desk/agent.ts';
import { MemoryTicketQueue } from '../lib/adapters/memory/memory-queues.ts';
import { BatonClient } from '../lib/client/baton-client.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import { systemClock } from '../lib/ports/clock.ts';
import { sweep } from '../lib/runtime/sweeper.ts';
import { acceptTurn } from '../lib/runtime/turn-intake.ts';
import { type BenchDynamoDb, InProcessRuntime } from './in-process-runtime.ts';
import { diffTotals, type MeterTotals, type ReadTarget, type RequestRecord } from './request-meter.ts';

/** What the turns of one conversation cost in writes, past its first turn (which creates the session). */
export interface TurnCost {
  /** `work <k>`: k tool calls, 2k + 1 steps per turn. */
  readonly workPerTurn: number;
  readonly turns: number;
  /** Steps of the turns measured (turns 2…N). */
  readonly steps: number;
  /** Writes per step over turns 2…N: 1 + F / (steps per turn). */
  readonly writesPerStep: number;
  /** Writes per turn beyond one per step, on average over turns 2…N (turns that yielded included). */
  readonly fixedWritesPerTurn: number;
  /** F: the same for the median turn (one leg, no yield): intake, lease, input (with the marker), outcome, turn outcome, end (with the publish). */
  readonly fixedWritesMedian: number;
  /** The capacity of the median turn's fixed writes (WCU, indexes and transactions included). */
  readonly fixedWcuMedian: number;
  /** The median turn's fixed writes by request and item (e.g. `PutItem:journal`), with their WCU. */
  readonly fixedByKind: Readonly<Record<string, { readonly writes: number; readonly wcu: number }>>;
  /** Turns of more than one leg (a continuation on a loaded machine): they add a lease, a marker, a release. */
  readonly turnsThatYielded: number;
  /** Writes per step of the median turn: 1 + F / (steps per turn). */
  readonly medianWritesPerStep: number;
  /** Steps per turn at which the median F gives ≤ 1.05 writes per step. */
  readonly stepsFor105: number;
}

/** A read between two points of a turn, summed by what it read. */
export interface ReadCount {
  readonly requests: number;
  readonly bytes: number;
  readonly rcu: number;
}

/** The reads of a new turn on a session that already holds many steps. */
export interface NewTurnReads {
  /** Steps the session held when the turn was sent. */
  readonly priorSteps: number;
  /** Reads of the intake (acceptTurn) itself: the refusal checks and the enqueue. */
  readonly intake: ReadCount;
  /** Reads from the turn's acceptance to its first model call. */
  readonly toFirstModelCall: ReadCount;
  /** The same, by what was read: record, turn, journal (pages), snapshot. */
  readonly byTarget: Readonly<Record<ReadTarget, ReadCount>>;
}

export interface ConversationFigures {
  readonly turns: number;
  /** Model calls and tool results over all turns. */
  readonly steps: number;
  /** Every write of the conversation (intake, turn bookkeeping, legs, steps) per step. */
  readonly writesPerStep: number;
  /** Writes per step over the work steps of the last turn: what a step costs deep in a long conversation. */
  readonly lastTurnWritesPerStep: number;
  /** Turns 2…N of the conversation above, and of a conversation of longer turns. */
  readonly turnCosts: readonly TurnCost[];
  readonly newTurnReads: NewTurnReads;
  /** An idle conversation while a sweeper run's window passes (a run with nothing to watch polls once). */
  readonly idle: {
    readonly periodMs: number;
    readonly sweeps: number;
    readonly writes: number;
    readonly kicks: number;
  };
  /** From `send --mode inject` to the message journaled in the running turn, each sample. */
  readonly injectLatencyMs: readonly number[];
  /**
   * Legs (leg markers) per turn: each turn sent to an idle session; each sent on the previous
   * result; `turns` turns sent at once, each queued behind a running one.
   */
  readonly legsPerTurn: {
    readonly toIdle: number;
    readonly onResult: number;
    readonly queued: number;
    readonly turns: number;
  };
}

/** A leg's marker: an entry of its own, or riding on the input of the turn it starts. */
const isLegMarker = (entry: JournalEntry) => entry.kind === 'leg' || (entry.kind === 'input' && !!entry.data.leg);

export interface ConversationCostOptions {
  readonly db: BenchDynamoDb;
  readonly turns: number;
  /** Work calls per turn (`work <k>`: k tool calls, 2k + 1 steps). */
  readonly workPerTurn: number;
  /**
   * A second conversation of longer turns, to show where ≤ 1.05 writes per step holds; a new
   * turn's reads are then counted on it, with all their steps behind it.
   */
  readonly longerTurns: { readonly turns: number; readonly workPerTurn: number };
  readonly workMs: number;
  readonly idleMs: number;
  readonly injectSamples: number;
  /** Turns of the chat client that sends each on the previous result. */
  readonly chatTurns: number;
  readonly functionTimeoutMs: number;
}

const isStep = (entry: JournalEntry) => entry.kind === 'model' || entry.kind === 'tool';

/**
 * A support-desk conversation of `turns` turns through the real runtime on DynamoDB Local:
 * writes per step over all of it and over the last turn's steps, the fixed writes of a turn (for
 * these turns and for longer ones), the reads of a new turn on a session with a long history, what
 * an idle period costs with the sweeper running, and how long an injected message takes to land.
 */
export async function measureConversationCost(options: ConversationCostOptions): Promise<ConversationFigures> {
  const agent = supportDesk({ workMs: options.workMs });
  const stepTotals: { turnId: string | undefined; totals: MeterTotals }[] = [];
  const journaledAt = new Map<string, number>();
  const firstModelCall = new Map<string, { totals: MeterTotals; reads: number }>();
  let runtime: InProcessRuntime | undefined;
  runtime = new InProcessRuntime({
    db: options.db,
    agents: [agent],
    functionTimeoutMs: options.functionTimeoutMs,
    onAppend: (_key: SessionKey, entry: JournalEntry) => {
      if (!runtime) return;
      if (entry.kind === 'message' && entry.data.id) journaledAt.set(entry.data.id, performance.now());
      if (isStep(entry)) stepTotals.push({ turnId: entry.turnId, totals: runtime.meter.snapshot() });
      // The scripted model reads nothing: the reads up to its entry are the reads before its call.
      if (entry.kind === 'model' && entry.turnId !== undefined && !firstModelCall.has(entry.turnId))
        firstModelCall.set(entry.turnId, { totals: runtime.meter.snapshot(), reads: runtime.meter.readCount });
    },
  });
  const rt = runtime;
  let results = 0;
  const stepsOf = (turnId: string) => stepTotals.filter((s) => s.turnId === turnId).length;
  /** A conversation of `turns` turns of `work k`; per-turn writes and steps of turns 2…N. */
  const converse = async (prefix: string, turns: number, workPerTurn: number) => {
    const work = { text: `work ${workPerTurn}` };
    const before = rt.meter.snapshot();
    const key = await rt.submit(agent.name, work, `${prefix}-1`);
    await rt.drain(++results);
    const afterFirst = rt.meter.snapshot();
    const perTurn: {
      fixed: number;
      wcu: number;
      steps: number;
      recordWrites: number;
      byKind: Record<string, { writes: number; wcu: number }>;
    }[] = [];
    for (let turn = 2; turn <= turns; turn++) {
      const turnId = `${prefix}-${turn}`;
      const from = rt.meter.writeCount;
      await acceptTurn({ key, turnId, ticketId: turnId, input: work, sweepGraceMs: 30_000 }, rt.deps);
      await rt.drain(++results);
      const writes = rt.meter.writesSince(from);
      const steps = stepsOf(turnId);
      // The step entries are the journal puts of 1 WCU each that the step count says; the rest is the turn's.
      const byKind: Record<string, { writes: number; wcu: number }> = {};
      for (const w of writes) {
        const kind = `${w.command.replace('Command', '')}:${w.target}`;
        const sum = byKind[kind] ?? { writes: 0, wcu: 0 };
        byKind[kind] = { writes: sum.writes + 1, wcu: sum.wcu + w.units };
      }
      const journal = byKind['PutItem:journal'];
      if (journal) byKind['PutItem:journal'] = { writes: journal.writes - steps, wcu: journal.wcu - steps };
      const recordWrites = writes.filter((w) => w.command === 'UpdateItemCommand' && w.target === 'record').length;
      perTurn.push({
        fixed: writes.length - steps,
        wcu: writes.reduce((sum, w) => sum + w.units, 0) - steps,
        steps,
        recordWrites,
        byKind,
      });
    }
    const byFixed = [...perTurn].sort((a, b) => a.fixed - b.fixed);
    const median = byFixed[Math.floor((byFixed.length - 1) / 2)]!;
    const fewestRecordWrites = Math.min(...perTurn.map((t) => t.recordWrites));
    const later = diffTotals(rt.meter.snapshot(), afterFirst);
    let steps = 0;
    for (let turn = 2; turn <= turns; turn++) steps += stepsOf(`${prefix}-${turn}`);
    const laterTurns = turns - 1;
    const fixedWritesPerTurn = (later.writes - steps) / laterTurns;
    const cost: TurnCost = {
      workPerTurn,
      turns,
      steps,
      writesPerStep: later.writes / steps,
      fixedWritesPerTurn,
      fixedWritesMedian: median.fixed,
      // A step's own write is 1 WCU (entries under 1 KB): the rest is the turn's.
      fixedWcuMedian: median.wcu,
      fixedByKind: Object.fromEntries(Object.entries(median.byKind).filter(([, n]) => n.writes !== 0)),
      turnsThatYielded: perTurn.filter((t) => t.recordWrites > fewestRecordWrites).length,
      medianWritesPerStep: 1 + median.fixed / median.steps,
      stepsFor105: Math.ceil(median.fixed / 0.05),
    };
    const allSteps = stepsOf(`${prefix}-1`) + steps;
    return { key, cost, all: diffTotals(rt.meter.snapshot(), before), allSteps };
  };

  const main = await converse('turn', options.turns, options.workPerTurn);
  const key = main.key;
  const last = stepTotals.filter((s) => s.turnId === `turn-${options.turns}`);
  // From the first step of the last turn to its last: the turn's own steps, no intake or hand-over.
  const lastTurn = diffTotals(last.at(-1)!.totals, last[0]!.totals);
  const longer = await converse('long', options.longerTurns.turns, options.longerTurns.workPerTurn);

  // A new turn on the session of longer turns, which now holds their steps: the reads up to its first model call.
  const priorSteps = longer.allSteps;
  const intakeFrom = rt.meter.snapshot();
  const newTurn = `long-${options.longerTurns.turns + 1}`;
  await acceptTurn(
    { key: longer.key, turnId: newTurn, ticketId: newTurn, input: { text: 'hello' }, sweepGraceMs: 30_000 },
    rt.deps,
  );
  const accepted = rt.meter.snapshot();
  const acceptedReads = rt.meter.readCount;
  await rt.drain(++results);
  const reached = firstModelCall.get(newTurn)!;
  const reads = rt.meter.readsSince(acceptedReads).slice(0, reached.reads - acceptedReads);
  const count = (of: readonly RequestRecord[]): ReadCount => ({
    requests: of.length,
    bytes: of.reduce((sum, r) => sum + r.bytes, 0),
    rcu: of.reduce((sum, r) => sum + r.units, 0),
  });
  const targets: ReadTarget[] = ['record', 'turn', 'journal', 'snapshot', 'other'];
  const intakeCost = diffTotals(accepted, intakeFrom);
  const newTurnReads: NewTurnReads = {
    priorSteps,
    intake: { requests: intakeCost.reads, bytes: intakeCost.readBytes, rcu: intakeCost.rcu },
    toFirstModelCall: count(reads),
    byTarget: Object.fromEntries(targets.map((t) => [t, count(reads.filter((r) => r.target === t))])) as Record<
      ReadTarget,
      ReadCount
    >,
  };

  // Idle: nothing runs; a sweeper run over the period finds nothing to watch and polls once.
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
  const running = runtime.drain(++results);
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

  // A chat client: each turn sent the moment the previous turn's result is on the queue, while the
  // leg that published it has yet to end that turn. Legs per turn, beside turns sent to an idle session.
  const chatTurns = options.chatTurns;
  const chat = await rt.submit(agent.name, { text: 'work 1' }, 'chat-1');
  await rt.drain(++results);
  const chatFrom = (await rt.deps.store.readJournal(chat)).length;
  const chatting = rt.drain(results + chatTurns);
  for (let turn = 2; turn <= chatTurns + 1; turn++) {
    while (rt.results.sent.length < results + turn - 2) await systemClock.sleep(1);
    const turnId = `chat-${turn}`;
    await acceptTurn({ key: chat, turnId, ticketId: turnId, input: { text: 'work 1' }, sweepGraceMs: 30_000 }, rt.deps);
  }
  await chatting;
  results += chatTurns;
  const chatLegs = (await rt.deps.store.readJournal(chat)).slice(chatFrom).filter(isLegMarker).length;
  // The same number of turns sent at once to the session while its previous turn runs: each
  // queued behind the one before it.
  const queuedFrom = (await rt.deps.store.readJournal(chat)).length;
  const queueing = rt.drain(results + chatTurns);
  for (let turn = 1; turn <= chatTurns; turn++) {
    const turnId = `queued-${turn}`;
    await acceptTurn({ key: chat, turnId, ticketId: turnId, input: { text: 'work 1' }, sweepGraceMs: 30_000 }, rt.deps);
  }
  await queueing;
  results += chatTurns;
  const queuedLegs = (await rt.deps.store.readJournal(chat)).slice(queuedFrom).filter(isLegMarker).length;
  const idleLegs = (await rt.deps.store.readJournal(key))
    .filter((e) => e.turnId !== undefined && /^turn-([2-9]|\d\d)$/.test(e.turnId) && e.turnId !== longTurn)
    .filter(isLegMarker).length;

  return {
    turns: options.turns,
    steps: main.allSteps,
    writesPerStep: main.all.writes / main.allSteps,
    lastTurnWritesPerStep: lastTurn.writes / (last.length - 1),
    turnCosts: [main.cost, longer.cost],
    newTurnReads,
    idle: {
      periodMs: options.idleMs,
      sweeps: swept.polls,
      writes: idleCost.writes,
      kicks: idleKicks,
    },
    injectLatencyMs,
    legsPerTurn: {
      toIdle: idleLegs / (options.turns - 1),
      onResult: chatLegs / chatTurns,
      queued: queuedLegs / chatTurns,
      turns: chatTurns,
    },
  };
}
