import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AiSdkModelClient } from '../../../lib/adapters/ai-sdk/ai-sdk-model-client.ts';
import { MemoryLiveText } from '../../../lib/adapters/memory/memory-live-text.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { BatonClient, type FollowEvent } from '../../../lib/client/baton-client.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const usage = {
  inputTokens: { total: 8, noCache: 8, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};

/** A stream that sends `first`, waits for `gate`, then sends the rest and finishes. */
function gatedStream(first: string, rest: string[], gate: Promise<void>): ReadableStream<LanguageModelV4StreamPart> {
  const parts: LanguageModelV4StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    { type: 'text-start', id: 't' },
    { type: 'text-delta', id: 't', delta: first },
  ];
  const after: LanguageModelV4StreamPart[] = [
    ...rest.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
    { type: 'text-end', id: 't' },
    { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
  ];
  let opened = false;
  return new ReadableStream({
    async pull(controller) {
      if (!opened) {
        opened = true;
        for (const part of parts) controller.enqueue(part);
        return;
      }
      await gate;
      for (const part of after) controller.enqueue(part);
      controller.close();
    },
  });
}

describe('streaming model output', () => {
  it('shows a follower partial text before the model entry, which alone is journaled, whole', async () => {
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const model = new MockLanguageModelV4({
      doStream: async () => ({ stream: gatedStream('Every ', ['id ', 'was ', 'found.'], gate) }),
    });
    const live = new MemoryLiveText();
    const agent = { ...lookupAgent(), model: new AiSdkModelClient({ model, maxDurationMs: 5_000, stream: true }) };
    const { deps, store, results } = makeTestDeps([agent], { live });
    await acceptTicket(ticketBody('lookup-agent', 'S-1', {}), undefined, deps);
    const key = { tenant: 'default', agent: 'lookup-agent', id: deriveSessionId('default', 'lookup-agent', 'S-1') };
    const client = new BatonClient({
      store,
      live,
      tickets: new MemoryTicketQueue(),
      workQueue: deps.workQueue,
      clock: deps.clock,
    });

    const seen: FollowEvent[] = [];
    const follow = (async () => {
      for await (const event of client.events(key.id, { follow: true, live: true, pollMs: 100 })) {
        seen.push(event);
        // The model holds the rest of its answer until the follower has seen the first part.
        if (event.kind === 'model-text') open();
      }
    })();
    await drain(deps);
    await follow;

    const journal = await store.readJournal(key);
    // The follower saw each entry once, in order.
    expect(seen.filter((e) => e.kind !== 'model-text').map((e) => e.seq)).toEqual(journal.map((e) => e.seq));
    const models = journal.filter((e) => e.kind === 'model');
    expect(models).toHaveLength(1);
    expect(models[0]).toMatchObject({ data: { text: 'Every id was found.', stopReason: 'end_turn' } });
    const partials = seen.filter((e) => e.kind === 'model-text');
    expect(partials[0]).toEqual({ kind: 'model-text', seq: models[0]?.seq, turnId: 'S-1', chunk: 0, text: 'Every ' });
    // Every partial came before the model entry, and together they are a beginning of it.
    const entryAt = seen.findIndex((e) => e.kind === 'model');
    expect(seen.findLastIndex((e) => e.kind === 'model-text')).toBeLessThan(entryAt);
    expect(
      'Every id was found.'.startsWith(partials.map((p) => (p.kind === 'model-text' ? p.text : '')).join('')),
    ).toBe(true);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'Every id was found.' })]);
  });

  it('writes no live text for a model that does not stream', async () => {
    const live = new MemoryLiveText();
    const { deps, results } = makeTestDeps([lookupAgent()], { live });
    await acceptTicket(ticketBody('lookup-agent', 'S-2', { ids: ['a', 'b'] }), undefined, deps);
    await drain(deps);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed' })]);
    expect(live.writes).toBe(0);
  });
});
