/**
 * The long-haul loop as an AWS Lambda durable function, run on the durable execution SDK's own
 * local runner: what it checkpoints per step and how many operations each invocation replays
 * as the execution grows. Run on its own (`tsx bench/durable-replay.ts`), it prints JSON; the
 * bench runs it in a child process so the runner's checkpoint server and timers stay out of the
 * other figures. Waits use real time: with the runner's fake timers (skipTime) a wait sometimes
 * completes inside the invocation that started it, and the number of invocations varies run to run.
 */
import type { DurableContext, DurableExecutionClient } from '@aws/durable-execution-sdk-js';
import { withDurableExecution } from '@aws/durable-execution-sdk-js';
import { LocalDurableTestRunner } from '@aws/durable-execution-sdk-js-testing';

export interface DurableInvocationFigures {
  /** Steps completed when the invocation started. */
  readonly startStep: number;
  /** Operations handed to the invocation (initial state plus pages it fetched). */
  readonly stateBytes: number;
  /** `context.step` calls answered from the checkpoint log: re-run handler code, not re-run work. */
  readonly replayedSteps: number;
  /** Step bodies that actually ran (new work). */
  readonly executedSteps: number;
  readonly checkpointBytes: number;
  readonly checkpointCalls: number;
}

export interface DurableReplayFigures {
  readonly steps: number;
  readonly invocations: number;
  readonly stepsPerInvocation: number;
  readonly checkpointBytesPerStep: number;
  readonly checkpointCallsPerStep: number;
  readonly totalCheckpointBytes: number;
  readonly totalStateBytes: number;
  readonly totalReplayedSteps: number;
  /** The invocation that ran each step of `atSteps`. */
  readonly at: ReadonlyArray<{ readonly step: number } & DurableInvocationFigures>;
}

interface LongHaulEvent {
  readonly toolCalls: number;
  readonly payloadBytes: number;
  /** Steps per invocation: a wait after that many ends the invocation, as a Baton leg yields. */
  readonly stepsPerInvocation: number;
}

const bytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/** Runs the loop and collects per-invocation figures. */
export async function measureDurableReplay(
  event: LongHaulEvent,
  atSteps: readonly number[],
): Promise<DurableReplayFigures> {
  const invocations: Array<DurableInvocationFigures> = [];
  let current: { -readonly [K in keyof DurableInvocationFigures]: DurableInvocationFigures[K] } | undefined;
  let completedSteps = 0;

  // A model step then a tool step per call, as Baton journals them; each returns what Baton stores.
  const durable = withDurableExecution(async (input: LongHaulEvent, context: DurableContext) => {
    const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      let ran = false;
      const value = await context.step(name, async () => {
        ran = true;
        return fn();
      });
      if (current) {
        if (ran) {
          current.executedSteps++;
          completedSteps++;
        } else current.replayedSteps++;
      }
      return value;
    };
    for (let i = 0; i < input.toolCalls; i++) {
      const call = await step(`model-${i}`, async () => ({
        toolCalls: [{ id: `chunk-${i}`, name: 'fetchChunk', input: { n: i } }],
      }));
      await step(`tool-${i}`, async () => ({
        callId: call.toolCalls[0]?.id,
        output: { n: i, data: 'x'.repeat(input.payloadBytes) },
      }));
      // Deterministic, as replay demands: every stepsPerInvocation / 2 calls (two steps each).
      const legEnds = (i + 1) % Math.max(1, Math.floor(input.stepsPerInvocation / 2)) === 0;
      if (legEnds && i < input.toolCalls - 1) await context.wait(`leg-${i}`, { seconds: 1 });
    }
    return `fetched ${input.toolCalls} chunks`;
  });

  // Wraps each invocation: counts the state it is handed and what it checkpoints.
  const handlerFunction = (async (raw: Record<string, unknown>, lambdaContext: unknown) => {
    current = {
      startStep: completedSteps,
      stateBytes: bytes(raw.InitialExecutionState),
      replayedSteps: 0,
      executedSteps: 0,
      checkpointBytes: 0,
      checkpointCalls: 0,
    };
    invocations.push(current);
    const figures = current;
    const inner = raw.durableExecutionClient as DurableExecutionClient | undefined;
    if (inner) {
      const counted: DurableExecutionClient = {
        getExecutionState: async (params, logger) => {
          const response = await inner.getExecutionState(params, logger);
          figures.stateBytes += bytes(response);
          return response;
        },
        checkpoint: async (params, logger) => {
          figures.checkpointCalls++;
          figures.checkpointBytes += bytes(params);
          return inner.checkpoint(params, logger);
        },
      };
      raw.durableExecutionClient = counted;
    }
    return (durable as (e: unknown, c: unknown) => Promise<unknown>)(raw, lambdaContext);
  }) as unknown as typeof durable;

  await LocalDurableTestRunner.setupTestEnvironment({ skipTime: false });
  try {
    const runner = new LocalDurableTestRunner({ handlerFunction });
    const execution = await runner.run({ payload: event });
    if (execution.getStatus() !== 'SUCCEEDED')
      throw new Error(`durable execution ended ${execution.getStatus()}: ${JSON.stringify(execution.getError())}`);
  } finally {
    await LocalDurableTestRunner.teardownTestEnvironment();
  }
  const steps = completedSteps;
  const sum = (pick: (f: DurableInvocationFigures) => number) => invocations.reduce((s, f) => s + pick(f), 0);
  const totalCheckpointBytes = sum((f) => f.checkpointBytes);
  return {
    steps,
    invocations: invocations.length,
    stepsPerInvocation: event.stepsPerInvocation,
    checkpointBytesPerStep: totalCheckpointBytes / steps,
    checkpointCallsPerStep: sum((f) => f.checkpointCalls) / steps,
    totalCheckpointBytes,
    totalStateBytes: sum((f) => f.stateBytes),
    totalReplayedSteps: sum((f) => f.replayedSteps),
    at: atSteps.map((step) => {
      const invocation = invocations.findLast((f) => f.startStep < step) ?? invocations[0]!;
      return { step, ...invocation };
    }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const toolCalls = Number(process.argv[2] ?? 250);
  const payloadBytes = Number(process.argv[3] ?? 256);
  const stepsPerInvocation = Number(process.argv[4] ?? 50);
  const figures = await measureDurableReplay({ toolCalls, payloadBytes, stepsPerInvocation }, [50, 500]);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  process.exit(0);
}
