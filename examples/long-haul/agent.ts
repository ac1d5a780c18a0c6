import { defineAgent, defineTool, scriptedModel, systemClock, transcriptStats } from '@baton-run/baton';
import * as z from 'zod';

/** `steps` tool calls returning about `payloadBytes` each, then done: the benchmark workload. */
export const LongHaulInput = z.object({
  steps: z.number().int().min(0).max(100_000),
  payloadBytes: z
    .number()
    .int()
    .min(0)
    .max(8 * 1024 * 1024)
    .default(256),
  /** Simulated duration of each tool call. */
  stepMs: z.number().int().min(0).max(60_000).default(0),
  /** Pads the final answer to about this many bytes (answers over the queue limit travel through the bucket). */
  answerBytes: z
    .number()
    .int()
    .min(0)
    .max(4 * 1024 * 1024)
    .default(0),
});

const fetchChunk = defineTool({
  name: 'fetchChunk',
  description: 'Returns chunk n of a long job.',
  input: z.object({ n: z.number().int(), bytes: z.number().int(), ms: z.number().int() }),
  effect: 'pure',
  maxDurationMs: 2_000,
  run: async ({ n, bytes, ms }, ctx) => {
    if (ms > 0) await systemClock.sleep(ms, ctx.signal);
    return { n, data: 'x'.repeat(bytes) };
  },
});

export const longHaul = defineAgent({
  name: 'long-haul',
  instructions: 'Fetch every chunk of the job, one at a time, then report how many you fetched.',
  input: LongHaulInput,
  model: scriptedModel({
    id: 'scripted-long-haul',
    maxDurationMs: 1_000,
    script: (messages) => {
      const first = messages[0]?.content[0];
      const input = LongHaulInput.parse(JSON.parse(first?.type === 'text' ? first.text : '{}'));
      const { toolResults } = transcriptStats(messages);
      if (toolResults >= input.steps) {
        const answer = `fetched ${toolResults} chunks`;
        return { final: input.answerBytes > answer.length ? answer.padEnd(input.answerBytes, '.') : answer };
      }
      return {
        toolCalls: [
          {
            id: `chunk-${toolResults}`,
            name: 'fetchChunk',
            input: { n: toolResults, bytes: input.payloadBytes, ms: input.stepMs },
          },
        ],
      };
    },
  }),
  tools: [fetchChunk],
  limits: { maxSteps: 200_001 },
});
