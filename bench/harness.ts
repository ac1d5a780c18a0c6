import { z } from 'zod';
import { defineAgent } from '../lib/agent/define-agent.ts';
import { defineTool } from '../lib/agent/define-tool.ts';
import { scriptedModel, toolResults } from '../lib/agent/scripted-model.ts';
import { createTestBaton } from '../lib/testing/index.ts';

export interface HarnessFigures {
  readonly sessions: number;
  /** Steps each session journals: a model call, a tool result, the answer. */
  readonly stepsPerSession: number;
  /** Wall time of the sessions, the harness's creation included; the first run warms the modules up and is not counted. */
  readonly ms: number;
  /** CPU time of the process over the same stretch: what a machine with a core to spare would take. */
  readonly cpuMs: number;
  readonly msPerSession: number;
}

/** A short session: the model looks one id up through a tool, then answers. */
const shortAgent = defineAgent({
  name: 'short',
  instructions: 'Look the id up.',
  tools: [
    defineTool({
      name: 'lookup',
      description: 'Looks an id up.',
      input: z.object({ id: z.string() }),
      effect: 'pure',
      maxDurationMs: 1_000,
      run: async ({ id }) => ({ id, found: true }),
    }),
  ],
  model: scriptedModel({
    maxDurationMs: 1_000,
    script: (transcript) =>
      toolResults(transcript).size > 0
        ? { final: 'found' }
        : { toolCalls: [{ id: 'c1', name: 'lookup', input: { id: '1' } }] },
  }),
});

async function runSessions(count: number): Promise<void> {
  const baton = createTestBaton({ agents: [shortAgent] });
  for (let i = 0; i < count; i++) {
    const run = await baton.start('short', { n: i });
    if ((await run.output()) !== 'found') throw new Error(`session ${i} did not complete`);
  }
}

/**
 * How long the test harness (baton/testing) takes to run `sessions` short one-shot sessions one
 * after the other through the real runtime on the in-memory twins: what a user's test suite pays.
 */
export async function measureHarness(options: { sessions: number }): Promise<HarnessFigures> {
  await runSessions(5);
  const started = performance.now();
  const cpu = process.cpuUsage();
  await runSessions(options.sessions);
  const ms = performance.now() - started;
  const { user, system } = process.cpuUsage(cpu);
  return {
    sessions: options.sessions,
    stepsPerSession: 3,
    ms,
    cpuMs: (user + system) / 1000,
    msPerSession: ms / options.sessions,
  };
}
