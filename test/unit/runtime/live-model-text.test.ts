import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV4, simulateReadableStream } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { AiSdkModelClient } from '../../../lib/adapters/ai-sdk/ai-sdk-model-client.ts';
import { MemoryLiveEvents } from '../../../lib/adapters/memory/memory-live-events.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { LiveEvent } from '../../../lib/ports/live-events.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const usage = {
  inputTokens: { total: 8, noCache: 8, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 3, text: 3, reasoning: undefined },
};
const streamOf = (deltas: string[]): LanguageModelV4StreamPart[] => [
  { type: 'stream-start', warnings: [] },
  { type: 'text-start', id: 't' },
  ...deltas.map((delta) => ({ type: 'text-delta' as const, id: 't', delta })),
  { type: 'text-end', id: 't' },
  { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
];

describe('streaming model output', () => {
  it('shows partial text to a live follower without journaling it; the journal keeps the whole answer', async () => {
    const model = new MockLanguageModelV4({
      doStream: async () => ({
        stream: simulateReadableStream({ chunks: streamOf(['Every ', 'id ', 'was ', 'found.']), chunkDelayInMs: 5 }),
      }),
    });
    const live = new MemoryLiveEvents();
    const agent = { ...lookupAgent(), model: new AiSdkModelClient({ model, maxDurationMs: 5_000, stream: true }) };
    const { deps, store, results } = makeTestDeps([agent], { live });
    await acceptTicket(ticketBody('lookup-agent', 'S-1', {}), undefined, deps);
    const key = { tenant: 'default', agent: 'lookup-agent', id: deriveSessionId('default', 'lookup-agent', 'S-1') };

    const seen: LiveEvent[] = [];
    const journaledWhenSeen: Promise<boolean>[] = [];
    live.subscribe(key, (event) => {
      seen.push(event);
      journaledWhenSeen.push(store.readJournal(key).then((j) => j.some((e) => e.seq === event.seq)));
    });
    await drain(deps);

    expect(seen.map((e) => e.text)).toEqual(['Every ', 'Every id ', 'Every id was ', 'Every id was found.']);
    const journal = await store.readJournal(key);
    const entry = journal.find((e) => e.kind === 'model');
    expect(entry).toMatchObject({ data: { text: 'Every id was found.', stopReason: 'end_turn' } });
    expect(new Set(seen.map((e) => e.seq))).toEqual(new Set([entry?.seq]));
    // Each partial was live before the model entry existed, and none of them was journaled.
    expect(await Promise.all(journaledWhenSeen)).toEqual([false, false, false, false]);
    expect(journal.filter((e) => e.kind === 'model')).toHaveLength(1);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'Every id was found.' })]);
  });
});
