import { type ChatMessage, defineAgent, defineTool, scriptedModel, systemClock } from '@baton-run/baton';
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

/**
 * Chunks fetched so far: the last result answers `chunk-<n>`, and the calls go one at a time.
 * Read off the last message, not counted over the transcript: this model stands in for a remote
 * one, and a scan that grows with the session would charge its own cost to the runtime it measures.
 */
function chunksFetched(messages: readonly ChatMessage[]): number {
  const last = messages.at(-1);
  if (last?.role !== 'user') return 0;
  const result = last.content.findLast((c) => c.type === 'toolResult');
  return result?.type === 'toolResult' ? Number(result.toolCallId.slice('chunk-'.length)) + 1 : 0;
}

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
      const toolResults = chunksFetched(messages);
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
