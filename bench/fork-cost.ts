import { longHaul } from '../examples/long-haul/agent.ts';
import { agentRegistry } from '../lib/agent/define-agent.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import { forkSession } from '../lib/runtime/fork.ts';
import { checkUpgrade, liveSessionsForCheck } from '../lib/versions/upgrade-check.ts';
import { type BenchDynamoDb, InProcessRuntime } from './in-process-runtime.ts';
import { diffTotals, type MeterTotals } from './request-meter.ts';

/** What reading a session to resume it costs: the record and one journal query pass. */
export interface ResumeReads {
  readonly journalEntries: number;
  readonly reads: number;
  readonly readBytes: number;
  readonly rcu: number;
}

/** Check-upgrade over `sessions` live sessions: reading them (records and journals), and folding them. */
export interface CheckUpgradeFigure {
  readonly sessions: number;
  readonly readMs: number;
  readonly foldMs: number;
  readonly reads: number;
}

export interface ForkFigures {
  /** Steps of the original session (model calls and tool results). */
  readonly steps: number;
  /** The seq the fork keeps the original's history up to (near its end: the longest prefix). */
  readonly cursor: number;
  /** What making the fork cost: its writes (O(1)), the original's journal it read to check the cursor, its time. */
  readonly fork: MeterTotals & { readonly ms: number };
  readonly resumeFork: ResumeReads;
  readonly resumeOriginal: ResumeReads;
  readonly checkUpgrade: CheckUpgradeFigure[];
}

/**
 * A long-haul session of `toolCalls` tool calls (2 × toolCalls + 1 steps), forked near its end:
 * the fork's cost, what resuming it reads beside resuming the original, and `check-upgrade`'s
 * time over N live sessions (forks of the same session, each a 500-step history to fold).
 */
export async function measureForkCost(options: {
  db: BenchDynamoDb;
  toolCalls: number;
  payloadBytes: number;
  functionTimeoutMs: number;
  checkSessions: readonly number[];
}): Promise<ForkFigures> {
  const runtime = new InProcessRuntime({
    db: options.db,
    agents: [longHaul],
    functionTimeoutMs: options.functionTimeoutMs,
  });
  const { store } = runtime.deps;
  const key = await runtime.submit(longHaul.name, {
    steps: options.toolCalls,
    payloadBytes: options.payloadBytes,
    stepMs: 0,
  });
  const [result] = await runtime.drain(1);
  if (result?.status !== 'completed') throw new Error(`long-haul session ended ${result?.status}: ${result?.error}`);
  const original = (await store.getSession(key))!;
  const entries = await store.readJournal(key);
  // The last tool result before the answer: the fork goes on with the turn from there (no new input).
  const cursor = entries.findLast((e) => e.kind === 'tool')!.seq;
  const forkDeps = { store, workQueue: runtime.work, clock: runtime.deps.clock, sweepGraceMs: 60_000 };

  const before = runtime.meter.snapshot();
  const started = performance.now();
  const forked = await forkSession(forkDeps, { original, cursor, ticketId: 'bench-fork', effects: 'reuse' });
  const ms = performance.now() - started;
  const fork = { ...diffTotals(runtime.meter.snapshot(), before), ms };

  const resumeReads = async (of: SessionKey): Promise<ResumeReads> => {
    const from = runtime.meter.snapshot();
    await store.getSession(of);
    const journal = await store.readJournal(of);
    const cost = diffTotals(runtime.meter.snapshot(), from);
    return { journalEntries: journal.length, reads: cost.reads, readBytes: cost.readBytes, rcu: cost.rcu };
  };
  const resumeFork = await resumeReads({ ...key, id: forked.sessionId });
  const resumeOriginal = await resumeReads(key);

  // Live sessions to check: forks of the original (one is there already), never run.
  const registry = agentRegistry([longHaul]);
  const checks: CheckUpgradeFigure[] = [];
  let made = 1;
  for (const sessions of options.checkSessions) {
    for (; made < sessions; made++)
      await forkSession(forkDeps, { original, cursor, ticketId: `bench-fork-${made}`, effects: 'reuse' });
    const from = runtime.meter.snapshot();
    const readStarted = performance.now();
    const live = await liveSessionsForCheck(store, sessions);
    const readMs = performance.now() - readStarted;
    const foldStarted = performance.now();
    const breaks = checkUpgrade(live, registry);
    const foldMs = performance.now() - foldStarted;
    if (live.length !== sessions || breaks.length > 0)
      throw new Error(`check-upgrade read ${live.length} of ${sessions} sessions and found ${breaks.length} breaks`);
    checks.push({ sessions, readMs, foldMs, reads: diffTotals(runtime.meter.snapshot(), from).reads });
  }
  return { steps: result.steps, cursor, fork, resumeFork, resumeOriginal, checkUpgrade: checks };
}
