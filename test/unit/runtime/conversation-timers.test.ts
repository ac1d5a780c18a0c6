import { describe, expect, it } from 'vitest';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { MemoryTicketQueue, type MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { type KickOutcome, runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const AGENT = 'support-desk';
const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: AGENT,
  id: deriveSessionId('default', AGENT, ticketId),
});

/** Runs the kicks visible now, and those they send, without moving the clock on to delayed ones. */
async function runReady(deps: RuntimeDeps): Promise<KickOutcome[]> {
  const queue = deps.workQueue as MemoryWorkQueue;
  const outcomes: KickOutcome[] = [];
  for (let ready = queue.receive(); ready.length > 0; ready = queue.receive())
    for (const message of ready) outcomes.push(await runKick(message.body, invocation(60_000, deps.clock), deps));
  return outcomes;
}

function clientOf(deps: RuntimeDeps) {
  return new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });
}

async function parkedReminder(ticketId: string, seconds: number) {
  const test = makeTestDeps([supportDesk({ workMs: 10 })], {
    config: { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 30, sweepGraceMs: 1_500 },
  });
  const started = test.clock.now();
  await acceptTicket(ticketBody(AGENT, ticketId, { text: `remind me in ${seconds} s` }), undefined, test.deps);
  const outcomes = await runReady(test.deps);
  return { ...test, key: keyOf(ticketId), started, outcomes, client: clientOf(test.deps) };
}

describe('durable timers', () => {
  it('parks the session holding no lease, shows wakeAt, and wakes it past the 15-minute delay cap', async () => {
    // Arrange
    const { deps, store, results, key, started, outcomes, client, clock } = await parkedReminder('R1', 3_600);
    const parked = await store.getSession(key);
    const status = await client.status(key.id);
    const resultsWhileParked = results.bodies.length;

    // Act
    const woken = await drain(deps);

    // Assert
    expect(outcomes.at(-1)).toBe('waiting');
    expect(parked).toMatchObject({ state: 'waiting', sweepAt: started + 3_600_000 });
    expect(parked?.owner).toBeUndefined();
    expect(status?.wakeAt).toBe(new Date(started + 3_600_000).toISOString());
    expect(resultsWhileParked).toBe(0);
    // Chained: each 15-minute delayed kick early for its time is sent on again.
    expect(woken.filter((o) => o === 'delayed')).toHaveLength(3);
    expect(results.bodies.map((r) => [r.status, r.output])).toEqual([['completed', 'reminder']]);
    const journal = await store.readJournal(key);
    const timer = journal.find((e) => e.kind === 'timer');
    const result = journal.find((e) => e.kind === 'tool');
    expect(timer?.data).toEqual({ callId: 't1-wait', wakeAt: started + 3_600_000 });
    expect(result!.at).toBeGreaterThanOrEqual(started + 3_600_000);
    expect(clock.now()).toBeGreaterThanOrEqual(started + 3_600_000);
    expect((await store.getSession(key))?.state).toBe('idle');
  });

  it('wakes a parked session for a cancel, which ends the turn long before its timer', async () => {
    // Arrange
    const { deps, results, key, started, client, clock } = await parkedReminder('R2', 7_200);

    // Act
    const requested = await client.cancel(key.id);
    await runReady(deps);

    // Assert
    expect(requested).toBe('requested');
    expect(results.bodies.map((r) => r.status)).toEqual(['cancelled']);
    expect(clock.now()).toBeLessThan(started + 7_200_000);
    expect((await client.status(key.id))?.status).toBe('cancelled');
  });

  it('journals a message sent to a parked turn and parks again until the same time', async () => {
    // Arrange
    const { deps, store, key, started, client } = await parkedReminder('R3', 600);

    // Act
    await client.send(key.id, { text: 'any news?' }, { id: 'note-1', mode: 'inject' });
    const outcomes = await runReady(deps);

    // Assert
    expect(outcomes).toContain('waiting');
    expect((await store.readJournal(key)).filter((e) => e.kind === 'message').map((e) => e.data)).toEqual([
      { text: 'any news?', id: 'note-1' },
    ]);
    expect(await store.getSession(key)).toMatchObject({ state: 'waiting', sweepAt: started + 600_000 });
    expect((await client.status(key.id))?.wakeAt).toBe(new Date(started + 600_000).toISOString());
  });
});
