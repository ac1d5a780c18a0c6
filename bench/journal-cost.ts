import { longHaul } from '../examples/long-haul/agent.ts';
import type { AgentDefinition } from '../lib/agent/define-agent.ts';
import type { SessionKey } from '../lib/core/ids.ts';
import type { JournalEntry } from '../lib/core/journal.ts';
import { type BenchDynamoDb, InProcessRuntime } from './in-process-runtime.ts';
import { diffTotals, type MeterTotals } from './request-meter.ts';

/** The agent with its tool runs counted: a resume that re-ran a journaled call would show here. */
export function countingAgent(agent: AgentDefinition): { agent: AgentDefinition; toolRuns: () => number } {
  let runs = 0;
  const tools = agent.tools.map((tool) => ({
    ...tool,
    run: (input: unknown, ctx: Parameters<typeof tool.run>[1]) => {
      runs++;
      return tool.run(input, ctx);
    },
  }));
  return { agent: { ...agent, tools }, toolRuns: () => runs };
}

/** Model calls and tool results are the steps (DESIGN.md); a long-haul tool call is one model step + one tool step. */
const isStep = (entry: JournalEntry) => entry.kind === 'model' || entry.kind === 'tool';

export interface StepWindowCost {
  /** The window's centre step. */
  readonly atStep: number;
  readonly steps: number;
  readonly writesPerStep: number;
  readonly bytesPerStep: number;
  readonly wcuPerStep: number;
}

export interface SessionCost {
  readonly steps: number;
  readonly legs: number;
  readonly totals: MeterTotals;
  readonly windows: StepWindowCost[];
  /** Tool runs the session made vs tool results journaled: equal when nothing ran twice. */
  readonly toolRuns: number;
  readonly toolResults: number;
}

export interface JournalCostOptions {
  readonly db: BenchDynamoDb;
  /** Tool calls of the long-haul session (each is two steps). */
  readonly toolCalls: number;
  readonly payloadBytes: number;
  /** Window centres, in steps. */
  readonly windowsAt: readonly number[];
  readonly windowSteps: number;
  readonly functionTimeoutMs: number;
}

/**
 * Runs one long-haul session through the real runtime and cuts the meter's totals at every
 * step, so the cost of step 50 and of step 500 are read from the same run.
 */
export async function measureSessionCost(options: JournalCostOptions): Promise<SessionCost> {
  const cumulative: MeterTotals[] = [];
  let toolResults = 0;
  const counted = countingAgent(longHaul);
  let runtime: InProcessRuntime | undefined;
  runtime = new InProcessRuntime({
    db: options.db,
    agents: [counted.agent],
    functionTimeoutMs: options.functionTimeoutMs,
    onAppend: (_key: SessionKey, entry: JournalEntry) => {
      if (!isStep(entry) || !runtime) return;
      if (entry.kind === 'tool') toolResults++;
      cumulative.push(runtime.meter.snapshot());
    },
  });
  const before = runtime.meter.snapshot();
  await runtime.submit(longHaul.name, { steps: options.toolCalls, payloadBytes: options.payloadBytes, stepMs: 0 });
  const [result] = await runtime.drain(1);
  if (result?.status !== 'completed') throw new Error(`long-haul session ended ${result?.status}: ${result?.error}`);
  const totals = diffTotals(runtime.meter.snapshot(), before);
  const windows = windowCosts(cumulative, options.windowsAt, options.windowSteps);
  return { steps: result.steps, legs: result.legs, totals, windows, toolRuns: counted.toolRuns(), toolResults };
}

/**
 * Cost per step over the `windowSteps` steps that end at each step of `windowsAt`, from the
 * meter's totals cut after every step (`cumulative[i]` is the total after step i + 1).
 */
export function windowCosts(
  cumulative: readonly MeterTotals[],
  windowsAt: readonly number[],
  windowSteps: number,
): StepWindowCost[] {
  return windowsAt.map((atStep) => {
    const to = Math.min(cumulative.length, atStep);
    const from = Math.max(1, to - windowSteps);
    const cost = diffTotals(cumulative[to - 1]!, cumulative[from - 1]!);
    const steps = to - from;
    return {
      atStep,
      steps,
      writesPerStep: cost.writes / steps,
      bytesPerStep: cost.writeBytes / steps,
      wcuPerStep: cost.wcu / steps,
    };
  });
}

export interface ResumeCost {
  readonly steps: number;
  readonly journalEntries: number;
  readonly reads: number;
  readonly readBytes: number;
  readonly rcu: number;
}

/**
 * What a new owner reads to resume a session of `toolCalls` tool calls: the session record
 * (one GetItem) and the journal (one Query pass, ⌈bytes / 1 MB⌉ pages).
 */
export async function measureResumeCost(options: {
  db: BenchDynamoDb;
  toolCalls: number;
  payloadBytes: number;
  functionTimeoutMs: number;
}): Promise<ResumeCost> {
  const runtime = new InProcessRuntime({
    db: options.db,
    agents: [longHaul],
    functionTimeoutMs: options.functionTimeoutMs,
  });
  const key = await runtime.submit(longHaul.name, {
    steps: options.toolCalls,
    payloadBytes: options.payloadBytes,
    stepMs: 0,
  });
  const [result] = await runtime.drain(1);
  const before = runtime.meter.snapshot();
  await runtime.deps.store.getSession(key);
  const entries = await runtime.deps.store.readJournal(key);
  const cost = diffTotals(runtime.meter.snapshot(), before);
  return {
    steps: result?.steps ?? 0,
    journalEntries: entries.length,
    reads: cost.reads,
    readBytes: cost.readBytes,
    rcu: cost.rcu,
  };
}
