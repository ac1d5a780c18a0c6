import { APICallError, type LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AiSdkModelClient } from '../../../../lib/adapters/ai-sdk/ai-sdk-model-client.ts';
import type { MemoryWorkQueue } from '../../../../lib/adapters/memory/memory-queues.ts';
import { deriveSessionId } from '../../../../lib/core/ids.ts';
import { acceptTicket } from '../../../../lib/runtime/intake.ts';
import { runKick } from '../../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../../fixtures/runtime.ts';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
};
const lookupA: LanguageModelV4GenerateResult = {
  content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"id":"a"}' }],
  finishReason: { unified: 'tool-calls', raw: undefined },
  usage,
  warnings: [],
};
const answer: LanguageModelV4GenerateResult = {
  content: [{ type: 'text', text: 'a was found' }],
  finishReason: { unified: 'stop', raw: undefined },
  usage,
  warnings: [],
};
const httpError = (statusCode: number, responseHeaders: Record<string, string> = {}) =>
  new APICallError({
    message: `HTTP ${statusCode}`,
    url: 'https://provider.test',
    requestBodyValues: {},
    statusCode,
    responseHeaders,
  });

/** A mock that answers from a list, throwing the entries that are errors. */
function scripted(replies: (LanguageModelV4GenerateResult | Error)[]) {
  let i = 0;
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const reply = replies[Math.min(i++, replies.length - 1)]!;
      if (reply instanceof Error) throw reply;
      return reply;
    },
  });
}

const keyOf = (ticketId: string) => ({
  tenant: 'default',
  agent: 'lookup-agent',
  id: deriveSessionId('default', 'lookup-agent', ticketId),
});

describe('an agent on an AI SDK model', () => {
  it('runs tools the model asks for and answers, journaling usage', async () => {
    const agent = {
      ...lookupAgent(),
      model: new AiSdkModelClient({ model: scripted([lookupA, answer]), maxDurationMs: 5_000 }),
    };
    const { deps, store, results } = makeTestDeps([agent]);
    await acceptTicket(ticketBody('lookup-agent', 'A-1', {}), undefined, deps);
    await drain(deps);
    expect(results.bodies).toEqual([
      expect.objectContaining({
        status: 'completed',
        output: 'a was found',
        usage: { inputTokens: 20, outputTokens: 4 },
      }),
    ]);
    const tool = (await store.readJournal(keyOf('A-1'))).find((e) => e.kind === 'tool');
    expect(tool?.data).toMatchObject({ ok: true, output: { id: 'a', found: true } });
  });

  it('waits at least the provider retry-after before retrying a rate-limited call', async () => {
    const agent = {
      ...lookupAgent(),
      model: new AiSdkModelClient({
        model: scripted([httpError(429, { 'retry-after': '30' }), answer]),
        maxDurationMs: 5_000,
      }),
    };
    const { deps, store } = makeTestDeps([agent]);
    await acceptTicket(ticketBody('lookup-agent', 'A-2', {}), undefined, deps);
    const before = deps.clock.now();
    // The first kick meets the 429 and leaves the session waiting for its retry.
    const kick = (deps.workQueue as MemoryWorkQueue).receive()[0]!.body;
    expect(await runKick(kick, invocation(), deps)).toBe('waiting');
    const error = (await store.readJournal(keyOf('A-2'))).find((e) => e.kind === 'error');
    if (error?.kind !== 'error') throw new Error('no error entry journaled for the 429');
    expect(error.data).toMatchObject({ attempt: 1, message: expect.stringMatching(/429/) });
    // The policy alone would wait about one second; the provider asked for thirty.
    expect((error.data.retryAt ?? 0) - before).toBeGreaterThanOrEqual(30_000);
  });

  it('fails the turn at once on a terminal provider error', async () => {
    const agent = {
      ...lookupAgent(),
      model: new AiSdkModelClient({ model: scripted([httpError(401)]), maxDurationMs: 5_000 }),
    };
    const { deps, results, store } = makeTestDeps([agent]);
    await acceptTicket(ticketBody('lookup-agent', 'A-3', {}), undefined, deps);
    await drain(deps);
    expect(results.bodies).toEqual([
      expect.objectContaining({
        status: 'failed',
        error: expect.stringMatching(/model mock-provider:mock-model-id: .*401/),
      }),
    ]);
    expect((await store.readJournal(keyOf('A-3'))).some((e) => e.kind === 'error')).toBe(false);
  });
});
