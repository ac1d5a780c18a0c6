import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AiSdkModelClient } from '../../../lib/adapters/ai-sdk/ai-sdk-model-client.ts';
import { MemoryLiveText } from '../../../lib/adapters/memory/memory-live-text.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { BatonClient, type FollowEvent } from '../../../lib/client/baton-client.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { ModelClient } from '../../../lib/ports/model-client.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { DEFAULT_LIVE_TEXT_POLICY } from '../../../lib/runtime/live-text-writer.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';
import { waitFor } from '../../fixtures/wait-for.ts';

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
    // The entry is the whole response: every delta the model streamed, concatenated.
    expect(models[0]).toMatchObject({
      data: { text: ['Every ', 'id ', 'was ', 'found.'].join(''), stopReason: 'end_turn' },
    });
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

  it('leaves nothing of a crash mid-stream that a follower shows or the journal keeps', async () => {
    const live = new MemoryLiveText();
    const key = { tenant: 'default', agent: 'lookup-agent', id: deriveSessionId('default', 'lookup-agent', 'S-3') };
    let calls = 0;
    const model: ModelClient = {
      id: 'crashing-stream',
      maxDurationMs: 1_000,
      async converse(_request, _signal, sink) {
        calls++;
        if (calls === 1) {
          // The first leg streams part of an answer, then its process dies.
          sink?.text('half an ans');
          await waitFor(async () => (await live.read(key, 2, { now: deps.clock.now() })).length > 0, {
            what: 'the first partial to be stored',
          });
          throw new FailpointCrash('mid-step');
        }
        sink?.text('the whole ');
        sink?.text('answer');
        return {
          text: 'the whole answer',
          toolCalls: [],
          stopReason: 'end_turn',
          usage: { inputTokens: 1, outputTokens: 3 },
        };
      },
    };
    const { deps, store, results, clock } = makeTestDeps([{ ...lookupAgent(), model }], { live });
    await acceptTicket(ticketBody('lookup-agent', 'S-3', {}), undefined, deps);
    await expect(drain(deps)).rejects.toThrow(FailpointCrash);
    clock.advance(deps.config.leaseTtlMs + 50);
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, deps.clock), deps);
    await drain(deps);

    const journal = await store.readJournal(key);
    // The dead leg's partial sits under seq 2 (its marker rode on the input at seq 1), which the
    // recovery's leg marker took: followers read only the seq after the journal's last, so they
    // never show it; and it expires.
    expect(journal.find((e) => e.seq === 2)).toMatchObject({ kind: 'leg', data: { reason: 'recovery' } });
    expect((await live.read(key, 2, { now: deps.clock.now() })).map((c) => c.text)).toEqual(['half an ans']);
    expect(await live.read(key, 2, { now: deps.clock.now() + DEFAULT_LIVE_TEXT_POLICY.ttlMs })).toEqual([]);
    expect(journal.filter((e) => e.kind === 'model').map((e) => e.data)).toEqual([
      expect.objectContaining({ text: 'the whole answer' }),
    ]);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'the whole answer' })]);
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
