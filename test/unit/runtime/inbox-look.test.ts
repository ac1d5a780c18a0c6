import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { RUNTIME_DEFAULTS } from '../../../lib/core/resources.ts';
import type { RuntimeConfig, RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const CONFIG: RuntimeConfig = { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 1, sweepGraceMs: 1_500 };
const LOOK_MS = RUNTIME_DEFAULTS.inboxLookMs;
const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: 'lookup-agent',
  id: deriveSessionId('default', 'lookup-agent', ticketId),
});

/** Runs one 10-lookup session (21 steps, one leg) and counts the session-record reads of its leg. */
async function recordReadsOfOneLeg(options: { inboxLookMs?: number; modelLatencyMs?: number }) {
  const test = makeTestDeps([], { config: { ...CONFIG, inboxLookMs: options.inboxLookMs } });
  const agent = lookupAgent({ modelLatencyMs: options.modelLatencyMs ?? 0, clock: test.clock });
  const { deps, store } = makeTestDeps([agent], { clock: test.clock, config: test.deps.config });
  const ids = Array.from({ length: 10 }, (_, i) => `id-${i}`);
  await acceptTicket(ticketBody('lookup-agent', 'R1', { ids }), undefined, deps);
  let reads = 0;
  const getSession = store.getSession.bind(store);
  store.getSession = (key) => {
    reads++;
    return getSession(key);
  };
  const outcomes = await drain(deps);
  const journal = await store.readJournal(keyOf('R1'));
  return { outcomes, reads, steps: journal.filter((e) => e.kind === 'model' || e.kind === 'tool').length };
}

describe('the inbox look at a step boundary', () => {
  it('shares one record read among steps faster than the look interval: the acquire’s', async () => {
    // Arrange / Act
    const everyBoundary = await recordReadsOfOneLeg({ inboxLookMs: 0 });
    const fast = await recordReadsOfOneLeg({});

    // Assert: the acquire reads once; with no interval every boundary after the first reads too
    // (one before each of the 21 steps but the first, and at the turn's start and end).
    expect(everyBoundary.outcomes).toEqual(['finished']);
    expect(fast.outcomes).toEqual(['finished']);
    expect(fast.steps).toBe(21);
    expect(everyBoundary.reads).toBeGreaterThanOrEqual(fast.steps);
    expect(fast.reads).toBe(1);
  });

  it('reads again at the first boundary after the record in hand is as old as the look interval', async () => {
    // Arrange / Act: each model call takes 40 ms, tools none: every third boundary or so is 100 ms on.
    const slow = await recordReadsOfOneLeg({ modelLatencyMs: 40 });

    // Assert: 11 model calls over 440 ms, one read per 100 ms or more of them.
    expect(slow.outcomes).toEqual(['finished']);
    expect(slow.reads - 1).toBeGreaterThanOrEqual(3);
    expect(slow.reads - 1).toBeLessThanOrEqual(Math.ceil((11 * 40) / LOOK_MS));
  });

  it('journals a message sent while fast steps run within the look interval of its send', async () => {
    // Arrange: each lookup takes 30 ms; during the second one another process injects a message.
    let deps: RuntimeDeps | undefined;
    let sentAt: number | undefined;
    let lookups = 0;
    const base = makeTestDeps([]);
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks an id up.',
      input: z.object({ id: z.string() }),
      effect: 'pure',
      maxDurationMs: 1_000,
      run: async ({ id }) => {
        await base.clock.sleep(30);
        if (++lookups === 2) {
          sentAt = base.clock.now();
          const client = new BatonClient({
            store: deps!.store,
            tickets: new MemoryTicketQueue(),
            workQueue: deps!.workQueue,
            clock: deps!.clock,
          });
          await client.send(keyOf('M1').id, 'hurry', { mode: 'inject', id: 'note' });
        }
        return { id, found: true };
      },
    });
    const test = makeTestDeps([lookupAgent({ tools: [lookup] })], { clock: base.clock, config: CONFIG });
    deps = test.deps;
    const ids = Array.from({ length: 10 }, (_, i) => `id-${i}`);
    await acceptTicket(ticketBody('lookup-agent', 'M1', { ids }), undefined, deps);

    // Act
    await drain(deps);

    // Assert: journaled after the lookup in flight, before the turn's answer, within the interval
    // (plus the step in flight when the record turned old).
    const journal = await test.store.readJournal(keyOf('M1'));
    const message = journal.find((e) => e.kind === 'message');
    expect(message).toBeDefined();
    expect(message!.at - sentAt!).toBeLessThanOrEqual(LOOK_MS + 30);
    expect(journal.indexOf(message!)).toBeLessThan(journal.findLastIndex((e) => e.kind === 'model'));
    expect(test.results.bodies.at(-1)).toMatchObject({ status: 'completed', output: 'found 10' });
  });
});
