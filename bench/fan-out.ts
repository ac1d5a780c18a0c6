import { dispatcher } from '../examples/dispatcher/agent.ts';
import { longHaul } from '../examples/long-haul/agent.ts';
import { MemoryTicketQueue } from '../lib/adapters/memory/memory-queues.ts';
import type { AgentDefinition } from '../lib/agent/define-agent.ts';
import { BatonClient } from '../lib/client/baton-client.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import { systemClock } from '../lib/ports/clock.ts';
import type { SessionStore } from '../lib/ports/session-store.ts';
import { type BenchDynamoDb, InProcessRuntime } from './in-process-runtime.ts';
import { countByKind } from './request-meter.ts';

export interface FanOutFigures {
  readonly children: number;
  /** Writes to the parent's partition while its children finished, per child outcome. */
  readonly parentWritesPerChildOutcome: number;
  /** The parent's writes over its whole run (starts, waits, answer), per child. */
  readonly parentWritesPerChild: number;
  /** The last child's outcome written → the parent's next journal entry. */
  readonly lastOutcomeToParentStepMs: number;
  /** `release` of a parent with this many running children, until it returned. */
  readonly releaseMs: number;
  readonly releaseCancelled: number;
  readonly releaseStragglers: number;
  /** Where the release's time went, each from the client's call. */
  readonly releaseBreakdown: ReleaseBreakdown;
  readonly seconds: number;
}

/** Points of a release of running tasks, in ms from the client's call. */
export interface ReleaseBreakdown {
  /** The parent's leg that carries the release out wrote its marker. */
  readonly parentLegMs: number;
  /** The last child's cancel was posted (its record bumped). */
  readonly cancelsPostedMs: number;
  /** The first and last child journaled its cancelled outcome. */
  readonly firstChildOutcomeMs: number;
  readonly lastChildOutcomeMs: number;
  /** The parent journaled `released`. */
  readonly releasedEntryMs: number;
  /** DynamoDB requests from the call until it returned, by kind (`GetItem:turn`, …), and in all. */
  readonly requests: Record<string, number>;
  readonly requestCount: number;
}

/** The store operations that write. */
const WRITES = new Set([
  'createSession',
  'putTurn',
  'setTurnOutcome',
  'acquire',
  'renew',
  'release',
  'bump',
  'append',
  'enqueueTurn',
  'endTurn',
  'advanceTurn',
  'postInbox',
  'takeInbox',
]);

/** A store that timestamps every write and every child outcome, by session. */
function recordingStore(store: SessionStore, log: { writes: [number, string][]; outcomes: [number, string][] }) {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (!WRITES.has(String(property))) return value.bind(target);
      return async (key: SessionKey, ...rest: unknown[]) => {
        const result = await (value as (...args: unknown[]) => Promise<unknown>).call(target, key, ...rest);
        const at = performance.now();
        log.writes.push([at, key.id]);
        if (property === 'setTurnOutcome') log.outcomes.push([at, key.id]);
        return result;
      };
    },
  });
}

/**
 * A dispatcher with `children` long-haul tasks through the real runtime on DynamoDB Local: how
 * much a child's outcome costs its parent (target: O(1), whatever the number of siblings), how
 * soon the parent steps after the last one, and how long releasing that many running children takes.
 */
export async function measureFanOut(options: { db: BenchDynamoDb; children: number }): Promise<FanOutFigures> {
  const started = performance.now();
  const agents = [longHaul, dispatcher({ delegates: ['long-haul'], taskWaitTimeoutMs: 120_000 })];
  const log = { writes: [] as [number, string][], outcomes: [] as [number, string][] };
  const appends: [number, string, JournalEntry][] = [];
  const runtime = new InProcessRuntime({
    db: options.db,
    agents,
    functionTimeoutMs: 10_000,
    leaseTtlMs: 3_000,
    wrapStore: (store) => recordingStore(store, log),
    onAppend: (key, entry) => appends.push([performance.now(), key.id, entry]),
  });
  // Children of 1 to 5 chunks, so their outcomes are spread out rather than one burst.
  const tasks = Array.from({ length: options.children }, (_, i) => ({
    agent: 'long-haul',
    input: { steps: 1 + (i % 5), stepMs: 20, payloadBytes: 16 },
    description: `child ${i}`,
  }));
  const parent = await runtime.submit('dispatcher', { tasks });
  const results = await runtime.drain(options.children + 1);
  const answer = results.find((r) => r.sessionId === parent.id);
  if (answer?.status !== 'completed') throw new Error(`the fan-out parent ended ${answer?.status}: ${answer?.error}`);
  const childOutcomes = log.outcomes.filter(([, id]) => id !== parent.id);
  const first = childOutcomes[0]?.[0] ?? 0;
  const last = childOutcomes.at(-1)?.[0] ?? 0;
  const parentWrites = log.writes.filter(([, id]) => id === parent.id);
  const during = parentWrites.filter(([at]) => at >= first && at <= last).length;
  const nextStep = appends.find(([at, id, entry]) => at > last && id === parent.id && entry.kind !== 'leg');

  const release = await measureRelease(options, agents);
  return {
    children: options.children,
    parentWritesPerChildOutcome: during / Math.max(1, childOutcomes.length),
    parentWritesPerChild: parentWrites.length / options.children,
    lastOutcomeToParentStepMs: nextStep ? nextStep[0] - last : Number.NaN,
    releaseMs: release.ms,
    releaseCancelled: release.cancelled,
    releaseStragglers: release.stragglers,
    releaseBreakdown: release.breakdown,
    seconds: (performance.now() - started) / 1000,
  };
}

/** Starts `children` long tasks, waits until every one runs, then times a release from a client. */
export async function measureRelease(
  options: { db: BenchDynamoDb; children: number },
  agents: readonly AgentDefinition[],
): Promise<{ ms: number; cancelled: number; stragglers: number; breakdown: ReleaseBreakdown }> {
  const bumps: [number, string][] = [];
  const appends: [number, string, JournalEntry][] = [];
  const runtime = new InProcessRuntime({
    db: options.db,
    agents,
    functionTimeoutMs: 10_000,
    leaseTtlMs: 3_000,
    wrapStore: (store) => bumpRecordingStore(store, bumps),
    onAppend: (key, entry) => appends.push([performance.now(), key.id, entry]),
  });
  const client = new BatonClient({
    store: runtime.deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: runtime.work,
    clock: systemClock,
  });
  const tasks = Array.from({ length: options.children }, (_, i) => ({
    agent: 'long-haul',
    // Long enough to outlast the measurement, short of the 200-step cap of a turn.
    input: { steps: 90, stepMs: 1_500, payloadBytes: 16 },
    description: `long ${i}`,
  }));
  const parent = await runtime.submit('dispatcher', { tasks });
  const drained = runtime.drain(options.children + 1);
  for (const deadline = Date.now() + 120_000; ; ) {
    const listed = await client.tasks(parent.id).catch(() => []);
    const running = await Promise.all(
      listed.map((t) => runtime.deps.store.getSession({ tenant: parent.tenant, agent: t.agent, id: t.taskId })),
    );
    const allRunning = listed.every((t) => t.status === 'running') && running.every((r) => r?.owner !== undefined);
    if (listed.length === options.children && allRunning) break;
    if (Date.now() > deadline)
      throw new Error(
        `the fan-out children did not all start within 2 minutes: ${listed.length} listed, ${listed.filter((t) => t.status === 'running').length} running, ${running.filter((r) => r?.owner !== undefined).length} holding a lease`,
      );
    await systemClock.sleep(200);
  }
  const [readsBefore, writesBefore] = [runtime.meter.readCount, runtime.meter.writeCount];
  const begun = performance.now();
  const released = await client.release(parent.id, { timeoutS: 60 });
  const ms = performance.now() - begun;
  const during = [...runtime.meter.readsSince(readsBefore), ...runtime.meter.writesSince(writesBefore)];
  if (!released.released) throw new Error('the fan-out release was not carried out');
  await drained;
  const after = (at: number | undefined) => (at === undefined ? Number.NaN : at - begun);
  const since = appends.filter(([at]) => at >= begun);
  const childOutcomes = since.filter(([, id, e]) => id !== parent.id && e.kind === 'outcome').map(([at]) => at);
  const breakdown: ReleaseBreakdown = {
    parentLegMs: after(since.find(([, id, e]) => id === parent.id && e.kind === 'leg')?.[0]),
    cancelsPostedMs: after(bumps.filter(([at, id]) => at >= begun && id !== parent.id).at(-1)?.[0]),
    firstChildOutcomeMs: after(childOutcomes[0]),
    lastChildOutcomeMs: after(childOutcomes.at(-1)),
    releasedEntryMs: after(since.find(([, id, e]) => id === parent.id && e.kind === 'released')?.[0]),
    requests: countByKind(during),
    requestCount: during.length,
  };
  return { ms, cancelled: released.cancelled.length, stragglers: released.stragglers.length, breakdown };
}

/** A store that timestamps every `bump` (a posted event), by session. */
function bumpRecordingStore(store: SessionStore, bumps: [number, string][]): SessionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'bump') return value.bind(target);
      return async (key: SessionKey, ...rest: unknown[]) => {
        const result = await (value as (...args: unknown[]) => Promise<unknown>).call(target, key, ...rest);
        bumps.push([performance.now(), key.id]);
        return result;
      };
    },
  });
}
