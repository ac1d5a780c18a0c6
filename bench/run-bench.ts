import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startBenchDatabase } from './bench-database.ts';
import { type BundleReport, measureBundles } from './bundle.ts';
import { type ConversationFigures, measureConversationCost } from './conversation-cost.ts';
import type { DurableReplayFigures } from './durable-replay.ts';
import { type FairShareFigures, measureFairShare } from './fair-share.ts';
import { type FanOutFigures, measureFanOut } from './fan-out.ts';
import { type ForkFigures, measureForkCost } from './fork-cost.ts';
import { measureFullRewrite } from './full-rewrite-baseline.ts';
import { type HarnessFigures, measureHarness } from './harness.ts';
import { measureResumeCost, measureSessionCost, type ResumeCost, type SessionCost } from './journal-cost.ts';
import { LIVE_TEXT_POLICY, type LiveTextCost, measureLiveTextCost } from './live-text-cost.ts';
import { AWS_PRICES, measurePriceWorkloads, type PriceReport, priceReport, priceRows } from './price.ts';
import { measureRecovery, type RecoveryFigures } from './recovery.ts';
import {
  combineRawWrites,
  combineThroughput,
  meanRate,
  measureRawConditionalWrites,
  measureThroughput,
  median,
  type RawWriteFigures,
  type ThroughputFigures,
  warmUntilSteady,
} from './throughput.ts';
import { type LatencyFigure, measureTurnLatency, type TurnLatencyFigures } from './turn-latency.ts';

export const BENCH_SECTIONS = [
  'fork',
  'journal',
  'resume',
  'conversation',
  'stream',
  'durable',
  'throughput',
  'latency',
  'fanout',
  'fairness',
  'recovery',
  'bundle',
  'price',
  'harness',
] as const;
export type BenchSection = (typeof BENCH_SECTIONS)[number];

/** The workload: a long-haul session of 250 tool calls = 501 steps (a model call and a tool result per call, and the answer). */
export const BENCH_WORKLOAD = {
  toolCalls: 250,
  payloadBytes: 256,
  windowsAt: [50, 500],
  windowSteps: 40,
  /** A short simulated function timeout, so the 500-step session runs over several legs. */
  functionTimeoutMs: 6_000,
  resumeToolCalls: [25, 250],
  /** Live sessions (forks of the 501-step session) check-upgrade reads and folds in the fork section. */
  forkCheckSessions: [10, 100],
  throughputConcurrency: 4,
  /** Tool calls of each throughput session: the workload's session, ~3 s of 4 at once here. */
  throughputToolCalls: 250,
  /** Rounds of the throughput sessions, each between two runs of raw writes. */
  throughputRounds: 3,
  rawWriteMs: 5_000,
  /** Raw writes run and discarded until DynamoDB Local's rate is steady (at least the first, at most the second), before the throughput section measures anything. */
  rawWarmUpMinMs: 30_000,
  rawWarmUpMaxMs: 60_000,
  /** Runs of the throughput sessions discarded before the section measures them (warm-up, as the raw side's). */
  throughputWarmUpRuns: 3,
  recoverySamples: 5,
  /** Turns sent to an idle conversation, and messages injected into a running turn, in the latency section. */
  latencyTurns: 20,
  latencyInjectSamples: 20,
  latencyWorkMs: 20,
  /** Streamed responses (output tokens) whose live text cost is measured, at a typical 50 tokens/s (40,000: near a 15-minute invocation). */
  streamTokens: [100, 1_000, 10_000, 40_000],
  streamTokensPerSecond: 50,
  /** Background tasks of one dispatcher in the fan-out section. */
  fanOutChildren: 100,
  /**
   * Fair sharing: tenant A submits this many sessions, then tenant B a few, with A limited to
   * `limit` at once and legs bounded by `concurrency` (a reserved concurrency); each session is
   * `steps` tool calls of `stepMs`.
   */
  fairness: { aSessions: 200, bSessions: 5, limit: 10, concurrency: 20, steps: 3, stepMs: 100 },
  /** A durable function's invocation ends at a wait (or a timeout); one every 50 steps stands for a leg. */
  durableStepsPerInvocation: 50,
  /** The conversation: 20 turns of `work 10` (21 steps each), an idle period, injected messages. */
  conversationTurns: 20,
  conversationWorkPerTurn: 10,
  /**
   * A second conversation of longer turns (101 steps each), to show where ≤ 1.05 writes per step
   * holds; then a new turn on it, which holds 505 steps: its reads up to the first model call.
   */
  conversationLongerTurns: { turns: 5, workPerTurn: 50 },
  conversationWorkMs: 20,
  conversationIdleMs: 5_000,
  conversationInjectSamples: 5,
  /** Turns of `work 1` a chat client sends, each on the previous result. */
  conversationChatTurns: 10,
  /** Fresh processes per bundle whose import time is the median. */
  coldImportRuns: 5,
  /** Short one-shot sessions (a tool call and an answer) run one after another through the test harness. */
  harnessSessions: 100,
} as const;

export interface BenchReport {
  readonly machine: { cpu: string; cores: number; memoryGiB: number; node: string; platform: string };
  /** 1-minute load average when the bench started and ended: other work on the machine skews every figure. */
  readonly load: { start: number; end: number };
  readonly workload: typeof BENCH_WORKLOAD;
  readonly journal?: { baton: SessionCost; fullRewrite: SessionCost; bytesRatio: number } | undefined;
  readonly resume?: ResumeCost[] | undefined;
  readonly fork?: ForkFigures | undefined;
  readonly conversation?: ConversationFigures | undefined;
  readonly stream?: LiveTextCost[] | undefined;
  readonly durable?: DurableReplayFigures | { unavailable: string } | undefined;
  readonly throughput?:
    | {
        baton: ThroughputFigures;
        raw: RawWriteFigures;
        ratio: number;
        ratios: readonly number[];
        /** Steps per second of each round, and writes per second of each raw run around them. */
        rounds: readonly number[];
        raws: readonly number[];
        /** Raw writes run before, until DynamoDB Local's rate was steady. */
        warmUpSeconds: number;
      }
    | undefined;
  readonly fanout?: FanOutFigures | undefined;
  readonly fairness?: FairShareFigures | undefined;
  readonly recovery?: RecoveryFigures | { unavailable: string } | undefined;
  readonly latency?: TurnLatencyFigures | undefined;
  readonly bundle?: BundleReport | { unavailable: string } | undefined;
  readonly price?: PriceReport | undefined;
  readonly harness?: HarnessFigures | undefined;
  readonly seconds: number;
}

export interface RunBenchOptions {
  readonly sections: readonly BenchSection[];
  readonly progress: (line: string) => void;
  readonly signal?: AbortSignal;
}

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs the chosen sections on one DynamoDB Local; each figure is counted at the client. */
export async function runBench(options: RunBenchOptions): Promise<BenchReport> {
  const started = performance.now();
  const w = BENCH_WORKLOAD;
  const want = (s: BenchSection) => options.sections.includes(s) && !options.signal?.aborted;
  const report: { -readonly [K in keyof BenchReport]: BenchReport[K] } = {
    machine: machine(),
    load: { start: loadavg()[0] ?? 0, end: 0 },
    workload: w,
    seconds: 0,
  };
  const needsDb = (
    [
      'fork',
      'journal',
      'resume',
      'conversation',
      'stream',
      'throughput',
      'latency',
      'fanout',
      'fairness',
      'recovery',
      'price',
    ] as const
  ).some(want);
  const db = needsDb ? await startBenchDatabase() : undefined;
  try {
    // First, on an empty table: check-upgrade reads every live session, and later sections leave some.
    if (db && want('fork')) {
      options.progress(
        `fork: a ${w.toolCalls * 2 + 1}-step long-haul session forked near its end, resumes compared, check-upgrade over ${w.forkCheckSessions.join(' and ')} live forks`,
      );
      report.fork = await measureForkCost({
        db,
        toolCalls: w.toolCalls,
        payloadBytes: w.payloadBytes,
        functionTimeoutMs: w.functionTimeoutMs,
        checkSessions: w.forkCheckSessions,
      });
    }
    if (db && want('journal')) {
      options.progress(
        `journal: one ${w.toolCalls * 2 + 1}-step long-haul session through the runtime, then the full-rewrite baseline`,
      );
      const baton = await measureSessionCost({ db, ...w });
      const fullRewrite = await measureFullRewrite({ db, ...w });
      report.journal = { baton, fullRewrite, bytesRatio: fullRewrite.totals.writeBytes / baton.totals.writeBytes };
    }
    if (db && want('resume')) {
      options.progress(`resume: read cost of sessions of ${w.resumeToolCalls.join(' and ')} tool calls`);
      report.resume = [];
      for (const toolCalls of w.resumeToolCalls) {
        report.resume.push(
          await measureResumeCost({
            db,
            toolCalls,
            payloadBytes: w.payloadBytes,
            functionTimeoutMs: w.functionTimeoutMs,
          }),
        );
      }
    }
    if (db && want('conversation')) {
      options.progress(
        `conversation: ${w.conversationTurns} turns of work ${w.conversationWorkPerTurn}, an idle ${w.conversationIdleMs / 1000} s, ${w.conversationInjectSamples} injected messages`,
      );
      report.conversation = await measureConversationCost({
        db,
        turns: w.conversationTurns,
        workPerTurn: w.conversationWorkPerTurn,
        longerTurns: w.conversationLongerTurns,
        workMs: w.conversationWorkMs,
        idleMs: w.conversationIdleMs,
        injectSamples: w.conversationInjectSamples,
        chatTurns: w.conversationChatTurns,
        functionTimeoutMs: w.functionTimeoutMs,
      });
    }
    if (db && want('stream')) {
      options.progress(`stream: live text writes of streamed responses of ${w.streamTokens.join(', ')} tokens`);
      report.stream = await measureLiveTextCost({
        db,
        tokens: w.streamTokens,
        tokensPerSecond: w.streamTokensPerSecond,
      });
    }
    if (want('durable')) {
      options.progress('durable: the same loop on the durable execution SDK local runner (real-time waits, ~15 s)');
      report.durable = runDurableChild(w.toolCalls, w.payloadBytes, w.durableStepsPerInvocation);
    }
    if (db && want('throughput')) {
      options.progress(
        `throughput: raw conditional writes until DynamoDB Local is warm, then ${w.throughputRounds} rounds of ${w.throughputConcurrency} sessions at once (zero-latency model) between runs of raw writes`,
      );
      const itemBytes = report.journal ? Math.round(report.journal.baton.windows[0]!.bytesPerStep) : 600;
      const rawRun = () =>
        measureRawConditionalWrites({
          db,
          concurrency: w.throughputConcurrency,
          itemBytes,
          durationMs: w.rawWriteMs / 2,
        });
      // DynamoDB Local's JVM compiles its hot paths over the first 20–30 s of writes: measured
      // before then, each side's rate says when it ran.
      const warm = await warmUntilSteady({
        db,
        concurrency: w.throughputConcurrency,
        itemBytes,
        minMs: w.rawWarmUpMinMs,
        maxMs: w.rawWarmUpMaxMs,
      });
      // The same for Baton's side: the runtime's code (and DynamoDB Local's reads, updates and
      // queries, which raw writes never warm) is compiled during its first sessions, which ran
      // at under half the steps per second of the runs after them. One run of the same sessions
      // goes first and is discarded, as a warm function's environment has run many.
      const sessions = () =>
        measureThroughput({
          db,
          concurrency: w.throughputConcurrency,
          toolCalls: w.throughputToolCalls,
          payloadBytes: w.payloadBytes,
          functionTimeoutMs: w.functionTimeoutMs,
        });
      for (let run = 0; run < w.throughputWarmUpRuns; run++) await sessions();
      // Rounds of Baton's sessions between runs of raw writes, each round's rate against the
      // raw runs either side of it: a machine whose load drifts treats both sides alike, and
      // the median of the rounds' ratios is the figure, its spread printed beside it.
      const raws = [await rawRun()];
      const rounds: ThroughputFigures[] = [];
      for (let round = 0; round < w.throughputRounds; round++) {
        rounds.push(await sessions());
        raws.push(await rawRun());
      }
      const ratios = rounds.map((r, i) => r.stepsPerSecond / meanRate([raws[i]!, raws[i + 1]!]));
      report.throughput = {
        baton: combineThroughput(rounds),
        raw: combineRawWrites(raws),
        ratio: median(ratios),
        ratios,
        rounds: rounds.map((r) => r.stepsPerSecond),
        raws: raws.map((r) => r.writesPerSecond),
        warmUpSeconds: warm.seconds,
      };
    }
    if (db && want('latency')) {
      options.progress(
        `latency: ${w.latencyTurns} turns sent to an idle conversation, ${w.latencyInjectSamples} messages injected into a running turn (DynamoDB Local, fauxqs)`,
      );
      report.latency = await measureTurnLatency({
        emulators: db.emulators,
        turns: w.latencyTurns,
        injectSamples: w.latencyInjectSamples,
        workMs: w.latencyWorkMs,
      });
    }
    if (db && want('fanout')) {
      options.progress(
        `fanout: a dispatcher with ${w.fanOutChildren} background tasks, then a release of as many running`,
      );
      report.fanout = await measureFanOut({ db, children: w.fanOutChildren });
    }
    if (db && want('fairness')) {
      const f = w.fairness;
      options.progress(
        `fairness: tenant A submits ${f.aSessions} sessions, then tenant B ${f.bSessions}; A limited to ${f.limit} at once, then unlimited (in process, DynamoDB Local)`,
      );
      report.fairness = await measureFairShare({ db, ...f });
    }
    if (db && want('recovery')) {
      options.progress(`recovery: kill -9 of the owner mid-step, ${w.recoverySamples} times, on the local stack`);
      report.recovery = await measureRecovery({
        emulators: db.emulators,
        samples: w.recoverySamples,
        log: options.progress,
      }).catch((error: unknown) => ({
        unavailable: (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' '),
      }));
    }
    if (db && want('price')) {
      options.progress(
        'price: the requests of 1,000 steps of long-haul, of a 5-step chat turn, of an idle conversation',
      );
      report.price = priceReport(await measurePriceWorkloads({ db, functionTimeoutMs: w.functionTimeoutMs }));
    }
    if (want('bundle')) {
      options.progress(
        `bundle: esbuild of functions/*.ts as the construct bundles them; cold import, median of ${w.coldImportRuns} fresh processes`,
      );
      report.bundle = await measureBundles(w.coldImportRuns).catch((error: unknown) => ({
        unavailable: (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' '),
      }));
    }
    if (want('harness')) {
      options.progress(`harness: ${w.harnessSessions} short sessions through baton/testing (in memory, manual clock)`);
      report.harness = await measureHarness({ sessions: w.harnessSessions });
    }
  } finally {
    await db?.stop();
  }
  report.seconds = (performance.now() - started) / 1000;
  report.load = { ...report.load, end: loadavg()[0] ?? 0 };
  return report;
}

function runDurableChild(
  toolCalls: number,
  payloadBytes: number,
  stepsPerInvocation: number,
): DurableReplayFigures | { unavailable: string } {
  const result = spawnSync(
    process.execPath,
    [
      '--import',
      import.meta.resolve('tsx'),
      fileURLToPath(new URL('./durable-replay.ts', import.meta.url)),
      String(toolCalls),
      String(payloadBytes),
      String(stepsPerInvocation),
    ],
    { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  if (result.status !== 0)
    return { unavailable: `the durable runner failed: ${(result.stderr || String(result.error)).slice(0, 400)}` };
  return JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as DurableReplayFigures;
}

function machine(): BenchReport['machine'] {
  const all = cpus();
  return {
    cpu: all[0]?.model.trim() ?? 'unknown',
    cores: all.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const dec = (n: number, digits = 2) => n.toFixed(digits);

/** The report as the table docs/PERFORMANCE.md shows. */
export function formatBenchReport(report: BenchReport): string[] {
  const rows: Array<[string, string, string]> = [];
  const section = (title: string) => rows.push([`— ${title}`, '', '']);
  const {
    fork,
    journal,
    resume,
    conversation,
    stream,
    durable,
    throughput,
    latency,
    fanout,
    fairness,
    recovery,
    bundle,
    price,
    harness,
  } = report;
  if (journal) {
    section('journal cost (DynamoDB Local, counted at the client)');
    for (const [i, window] of journal.baton.windows.entries()) {
      const base = journal.fullRewrite.windows[i]!;
      rows.push([
        `writes per step at step ${window.atStep}`,
        dec(window.writesPerStep),
        `full rewrite ${dec(base.writesPerStep)}`,
      ]);
      rows.push([
        `bytes written per step at step ${window.atStep}`,
        int(window.bytesPerStep),
        `full rewrite ${int(base.bytesPerStep)}`,
      ]);
      rows.push([
        `WCU per step at step ${window.atStep}`,
        dec(window.wcuPerStep),
        `full rewrite ${dec(base.wcuPerStep)}`,
      ]);
    }
    rows.push([
      `total bytes written, ${journal.baton.steps}-step session`,
      int(journal.baton.totals.writeBytes),
      `full rewrite ${int(journal.fullRewrite.totals.writeBytes)} (${dec(journal.bytesRatio, 0)}× more)`,
    ]);
    rows.push([
      'total writes / WCU',
      `${int(journal.baton.totals.writes)} / ${int(journal.baton.totals.wcu)}`,
      `full rewrite ${int(journal.fullRewrite.totals.writes)} / ${int(journal.fullRewrite.totals.wcu)}`,
    ]);
    rows.push(['legs of the session', String(journal.baton.legs), '']);
    rows.push([
      'tool calls run / journaled',
      `${journal.baton.toolRuns} / ${journal.baton.toolResults}`,
      'nothing ran twice',
    ]);
  }
  if (resume) {
    section('resume read cost (GetItem + one journal query pass)');
    for (const r of resume) {
      rows.push([
        `resume at step ${r.steps}`,
        `${r.reads} requests, ${int(r.readBytes)} B, ${dec(r.rcu, 1)} RCU`,
        `${r.journalEntries} entries, 0 re-executed`,
      ]);
    }
  }
  if (fork) {
    const f = fork;
    section(`fork of a ${f.steps}-step session at seq ${f.cursor} (DynamoDB Local, counted at the client)`);
    rows.push([
      'making the fork: writes / WCU',
      `${f.fork.writes} / ${dec(f.fork.wcu, 1)}`,
      'the turn, the forked entry, the record: O(1)',
    ]);
    rows.push([
      'making the fork: reads, time',
      `${f.fork.reads} requests, ${int(f.fork.readBytes)} B; ${int(f.fork.ms)} ms`,
      "the original's journal, to check the cursor",
    ]);
    for (const [what, r] of [
      ['resume the fork', f.resumeFork],
      ['resume the original', f.resumeOriginal],
    ] as const)
      rows.push([
        what,
        `${r.reads} requests, ${int(r.readBytes)} B, ${dec(r.rcu, 1)} RCU`,
        `${r.journalEntries} entries`,
      ]);
    for (const c of f.checkUpgrade)
      rows.push([
        `check-upgrade over ${c.sessions} live ${f.steps}-step sessions`,
        `${int(c.readMs + c.foldMs)} ms`,
        `reading ${int(c.readMs)} ms (${c.reads} requests), folding ${int(c.foldMs)} ms`,
      ]);
  }
  if (conversation) {
    const c = conversation;
    section(`conversation: ${c.turns} turns, ${c.steps} steps (DynamoDB Local, counted at the client)`);
    rows.push(['writes per step, all of it', dec(c.writesPerStep), 'intake, turn hand-over, legs and steps']);
    rows.push([`writes per step within turn ${c.turns}`, dec(c.lastTurnWritesPerStep), 'its steps only']);
    for (const t of c.turnCosts) {
      const perTurn = t.steps / (t.turns - 1);
      rows.push([
        `turn of work ${t.workPerTurn} (${dec(perTurn, 0)} steps): writes per step`,
        dec(t.medianWritesPerStep),
        `= 1 + F/${dec(perTurn, 0)}, F = ${t.fixedWritesMedian} writes (${dec(t.fixedWcuMedian, 1)} WCU) per turn; ≤ 1.05 from ${t.stepsFor105} steps per turn`,
      ]);
      rows.push([
        `  turns 2–${t.turns}, mean`,
        `${dec(t.writesPerStep)} per step`,
        `F = ${dec(t.fixedWritesPerTurn, 1)}; ${t.turnsThatYielded} turn(s) yielded to a continuation`,
      ]);
    }
    const median = c.turnCosts[0];
    if (median) {
      const byKind = Object.entries(median.fixedByKind);
      rows.push([
        '  F by request and item',
        `${median.fixedWritesMedian} writes`,
        byKind.map(([kind, n]) => `${kind} ${n.writes}`).join(', '),
      ]);
      rows.push([
        '  the same in WCU',
        `${dec(median.fixedWcuMedian, 1)} WCU`,
        byKind.map(([kind, n]) => `${kind} ${dec(n.wcu, 1)}`).join(', '),
      ]);
    }
    const r = c.newTurnReads;
    const read = (x: { requests: number; bytes: number; rcu: number }) =>
      `${x.requests} requests, ${int(x.bytes)} B, ${dec(x.rcu, 1)} RCU`;
    rows.push([
      `new turn on a ${r.priorSteps}-step session: intake reads`,
      read(r.intake),
      'refusal checks and the enqueue',
    ]);
    rows.push([
      '  acceptance → first model call',
      read(r.toFirstModelCall),
      'target: one record read, one journal pass',
    ]);
    for (const [target, x] of Object.entries(r.byTarget)) if (x.requests > 0) rows.push([`    ${target}`, read(x), '']);
    rows.push([
      `idle, a sweeper run of a ${dec(c.idle.periodMs / 1000, 0)} s window (${c.idle.sweeps} poll${c.idle.sweeps === 1 ? '' : 's'})`,
      `${c.idle.writes} writes, ${c.idle.kicks} kicks`,
      'target 0 and 0; nothing to watch, one poll',
    ]);
    const sorted = [...c.injectLatencyMs].sort((a, b) => a - b);
    rows.push([
      'inject → journaled message, median / max',
      `${int(sorted[Math.floor(sorted.length / 2)] ?? 0)} / ${int(sorted.at(-1) ?? 0)} ms`,
      'in process on DynamoDB Local; bounded by the step in flight',
    ]);
    rows.push([
      'legs per turn: to an idle session / on the result / queued',
      `${dec(c.legsPerTurn.toIdle)} / ${dec(c.legsPerTurn.onResult)} / ${dec(c.legsPerTurn.queued)}`,
      `target ≤ 1; ${c.legsPerTurn.turns} turns of work 1 sent on each result, then ${c.legsPerTurn.turns} at once`,
    ]);
  }
  if (stream) {
    const p = LIVE_TEXT_POLICY;
    section(
      `live text of a streamed response (${report.workload.streamTokensPerSecond} tokens/s; gap ${p.minIntervalMs} ms doubling every ${p.writesPerDoubling} writes, cap ${p.maxWrites})`,
    );
    for (const s of stream)
      rows.push([
        `${int(s.tokens)} tokens (${dec(s.streamSeconds, 0)} s, ${int(s.chars)} chars)`,
        `${s.writes} writes, ${dec(s.wcu, 0)} WCU`,
        `${int(s.writeBytes)} B written; ${int(s.liveChars)} chars live; late joiner reads ${dec(s.fullReadRcu, 1)} RCU`,
      ]);
    rows.push([
      'with streaming off',
      '0 writes',
      'the journal figures above are a non-streaming agent with the store wired',
    ]);
  }
  if (durable) {
    section('AWS Lambda durable function, SDK local runner, same loop');
    if ('unavailable' in durable) rows.push(['durable runner', 'unavailable', durable.unavailable]);
    else {
      rows.push([
        'checkpointed bytes per step',
        int(durable.checkpointBytesPerStep),
        `${dec(durable.checkpointCallsPerStep)} checkpoint calls per step`,
      ]);
      for (const at of durable.at) {
        rows.push([
          `invocation running step ${at.step}`,
          `replays ${at.replayedSteps} operations`,
          `${dec(at.replayedSteps / Math.max(1, at.executedSteps))} replayed per new step; state in ${int(at.stateBytes)} B`,
        ]);
      }
      rows.push([
        `total over ${durable.steps} steps, ${durable.invocations} invocations`,
        `${int(durable.totalReplayedSteps)} replayed`,
        `${int(durable.totalCheckpointBytes)} B checkpointed`,
      ]);
    }
  }
  if (throughput) {
    section(`local throughput, ${throughput.baton.concurrency} sessions at once, zero-latency model`);
    rows.push([
      'Baton steps per second',
      dec(throughput.baton.stepsPerSecond, 0),
      `${dec(throughput.baton.writesPerStep)} writes per step`,
    ]);
    rows.push([
      'raw conditional writes per second',
      dec(throughput.raw.writesPerSecond, 0),
      `same DynamoDB Local, concurrency ${throughput.raw.concurrency}, after ${dec(throughput.warmUpSeconds, 0)} s of writes to warm it`,
    ]);
    rows.push([
      'ratio',
      dec(throughput.ratio),
      `median of ${throughput.ratios.length} rounds (${throughput.ratios.map((r) => dec(r)).join(', ')}); target ≥ 0.85`,
    ]);
    rows.push([
      'DynamoDB requests per step',
      dec(throughput.baton.requestsPerStep),
      Object.entries(throughput.baton.requestsPerStepByKind)
        .map(([kind, n]) => `${kind} ${dec(n, 3)}`)
        .join(', '),
    ]);
    rows.push([
      'CPU of the runtime’s process per step',
      `${dec(throughput.baton.cpuMsPerStep)} ms`,
      `raw write ${dec(throughput.raw.cpuMsPerWrite)} ms; DynamoDB Local’s own CPU not counted`,
    ]);
  }
  if (latency) {
    section(
      `latency of a turn, local stack (DynamoDB Local, fauxqs, long-polling pollers), zero-latency model; p50 / p99 of ${latency.turns} turns`,
    );
    const latencyRows = (title: string, f: LatencyFigure) => {
      rows.push([title, `${dec(f.p50Ms, 1)} / ${dec(f.p99Ms, 1)} ms`, 'target ≤ 100 ms p50']);
      const b = f.breakdown;
      rows.push([
        '  median parts',
        `${dec(b.queueHopMs, 1)} + ${dec(b.storeMs, 1)} + ${dec(b.queueSendMs, 1)} + ${dec(b.otherMs, 1)} ms`,
        'queue hop + store requests + queue sends + the rest',
      ]);
      rows.push([
        '  requests per sample',
        dec(
          Object.values(b.requests).reduce((sum, n) => sum + n, 0),
          1,
        ),
        Object.entries(b.requests)
          .map(([kind, n]) => `${kind} ${dec(n, 1)}`)
          .join(', '),
      ]);
    };
    latencyRows('send accepted → first model call', latency.sendToFirstModelCall);
    latencyRows('last model answer → result on the queue', latency.lastAnswerToResult);
    rows.push([
      '  then → a consumer’s long poll has it',
      `${dec(latency.resultToConsumerMs.p50Ms, 1)} / ${dec(latency.resultToConsumerMs.p99Ms, 1)} ms`,
      'fauxqs',
    ]);
    latencyRows(`message injected → journaled by the running turn`, latency.injectToSeen);
    rows.push([
      '  the step in flight meanwhile',
      `${latency.workMs} ms`,
      'a `work` call; the inbox look is every 100 ms',
    ]);
  }
  if (fanout) {
    section(`fan-out: one parent, ${fanout.children} background tasks (in process, DynamoDB Local)`);
    rows.push([
      'parent writes per child outcome',
      dec(fanout.parentWritesPerChildOutcome),
      `${dec(fanout.parentWritesPerChild)} per child over the whole run; target O(1)`,
    ]);
    rows.push(['last child outcome → parent’s next step', `${int(fanout.lastOutcomeToParentStepMs)} ms`, '']);
    rows.push([
      `release of ${fanout.children} running tasks`,
      `${int(fanout.releaseMs)} ms`,
      `${fanout.releaseCancelled} cancelled, ${fanout.releaseStragglers} stragglers; lease TTL 3 s`,
    ]);
    const b = fanout.releaseBreakdown;
    rows.push([
      '  release → parent’s leg / cancels posted',
      `${int(b.parentLegMs)} / ${int(b.cancelsPostedMs)} ms`,
      'the release kick taken; every child’s record bumped',
    ]);
    rows.push([
      '  → first / last child cancelled',
      `${int(b.firstChildOutcomeMs)} / ${int(b.lastChildOutcomeMs)} ms`,
      'each child sees its cancel at its next renewal (TTL/3)',
    ]);
    rows.push(['  → `released` journaled', `${int(b.releasedEntryMs)} ms`, 'then the client’s poll sees it']);
    rows.push([
      '  DynamoDB requests of the release',
      int(b.requestCount),
      Object.entries(b.requests)
        .sort(([, x], [, y]) => y - x)
        .slice(0, 5)
        .map(([kind, n]) => `${kind} ${n}`)
        .join(', '),
    ]);
  }
  if (fairness) {
    section(
      `fairness: tenant A submits ${fairness.aSessions} sessions, then tenant B ${fairness.bSessions} (in process, DynamoDB Local, ${fairness.concurrency} legs at once)`,
    );
    for (const run of fairness.runs) {
      const a = run.limit === undefined ? 'A unlimited' : `A limited to ${run.limit}`;
      rows.push([
        `${a}: B submitted → B's first step`,
        `${int(run.bFirstStepMs)} ms`,
        `all of B done in ${int(run.bDoneMs)} ms`,
      ]);
      rows.push([
        `${a}: A's total time`,
        `${int(run.aTotalMs)} ms`,
        `${run.aCompleted} completed, ${run.aFailedOrLost} failed or lost; at most ${run.aMostAtOnce} of A's sessions at once; ${run.aSlotWaits} waits in line`,
      ]);
    }
  }
  if (recovery) {
    section('recovery: kill -9 of the owner mid-step → next journal append by another worker');
    if ('unavailable' in recovery) rows.push(['recovery', 'unavailable', recovery.unavailable]);
    else {
      rows.push([
        'recovery latency p50 / max',
        `${int(recovery.p50Ms)} / ${int(recovery.maxMs)} ms`,
        `lease TTL ${recovery.leaseTtlMs} ms + sweep ${recovery.sweepIntervalMs} ms`,
      ]);
      rows.push([
        'samples (ms)',
        recovery.samples.map((s) => `${int(s.ms)}${s.sweeperHostKilled ? '*' : ''}`).join(', '),
        recovery.samples.some((s) => s.sweeperHostKilled) ? '* the owner was also the local sweeper host' : '',
      ]);
    }
  }
  if (bundle) {
    section(
      `function bundles (esbuild, minified ESM split into chunks, as the construct builds them); KiB read at init of all; cold import, median of ${report.workload.coldImportRuns}`,
    );
    if ('unavailable' in bundle) rows.push(['bundle', 'unavailable', bundle.unavailable]);
    else {
      for (const b of bundle.functions)
        rows.push([
          `${b.function}, ${b.variant === 'aws-sdk-external' ? 'SDK external' : 'all bundled'}`,
          `${int(b.initBytes / 1024)} of ${int(b.bytes / 1024)} KiB`,
          `cold import ${int(b.coldImportMs)} ms (CPU ${int(b.coldImportCpuMs)} ms)`,
        ]);
      rows.push([
        'step, SDK external, X-Ray on (as in Lambda)',
        `${int(bundle.stepWithXrayMs)} ms`,
        'the X-Ray SDK loads during init',
      ]);
      rows.push([
        'Bedrock agent: its first model call adds',
        `${int(bundle.bedrockFirstCallMs)} ms`,
        'loading the Bedrock SDK and building its client, once per cold start',
      ]);
    }
  }
  if (price) {
    section(
      `price of orchestration: AWS list prices, ${AWS_PRICES.region}, ${AWS_PRICES.date}, beside the peers' published prices`,
    );
    rows.push(...priceRows(price));
  }
  if (harness) {
    section('test harness (baton/testing): the real runtime on the in-memory twins, manual clock');
    rows.push([
      `${harness.sessions} short sessions, one after another`,
      `${int(harness.ms)} ms`,
      `CPU ${int(harness.cpuMs)} ms; ${dec(harness.msPerSession)} ms a session of ${harness.stepsPerSession} steps; target: under 1 s`,
    ]);
  }
  const figures = rows.filter(([, b, c]) => b !== '' || c !== '');
  const w0 = Math.max(...figures.map((r) => r[0].length));
  const w1 = Math.max(...figures.map((r) => r[1].length));
  const { machine: m } = report;
  return [
    `Baton bench — ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, Node ${m.node}, ${m.platform}; ${dec(report.seconds, 0)} s; load ${dec(report.load.start, 1)} → ${dec(report.load.end, 1)}`,
    ...rows.map(([a, b, c]) => (b === '' && c === '' ? a : `  ${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`)),
  ];
}
