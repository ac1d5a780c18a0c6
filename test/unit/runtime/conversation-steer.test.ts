import { describe, expect, it } from 'vitest';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { buildTranscript, UNANSWERED } from '../../../lib/agent/transcript.ts';
import { BatonClient, type Sent } from '../../../lib/client/baton-client.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { journal, usage } from '../../fixtures/journal.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const AGENT = 'support-desk';
const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: AGENT,
  id: deriveSessionId('default', AGENT, ticketId),
});

function clientOf(deps: RuntimeDeps, maxPendingInputs?: number) {
  return new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
    maxPendingInputs,
  });
}

/**
 * A conversation whose `work 6` turn is told, from another process while its second work call
 * runs, something queued and then something steering.
 */
async function steeredConversation(ticketId: string) {
  let deps: RuntimeDeps | undefined;
  let toolSteps = 0;
  const sent: Sent[] = [];
  const key = keyOf(ticketId);
  const test = makeTestDeps([supportDesk({ workMs: 5 })], {
    // Every step boundary reads the record (no look interval), so the steer lands at the first one.
    config: { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 1, sweepGraceMs: 1_500, inboxLookMs: 0 },
    failpoint: async (name) => {
      if (name !== 'mid-step') return;
      const journal = await deps!.store.readJournal(key);
      if (journal.at(-1)?.kind !== 'model' || journal.at(-1)?.turnId !== 'work') return;
      // The second work call is in flight.
      if (++toolSteps !== 2) return;
      sent.push(await clientOf(deps!).send(key.id, { text: 'later' }, { id: 'queued' }));
      sent.push(await clientOf(deps!).send(key.id, { text: 'stop that' }, { id: 'steer', mode: 'steer' }));
    },
  });
  deps = test.deps;
  await acceptTicket(ticketBody(AGENT, ticketId, { text: 'hello' }), undefined, deps);
  await drain(deps);
  await clientOf(deps).send(key.id, { text: 'work 6' }, { id: 'work' });
  await drain(deps);
  return { ...test, key, sent };
}

describe('steering', () => {
  it('winds the running turn down at its next step boundary as superseded and runs the steering turn at once, ahead of the queue', async () => {
    // Arrange / Act
    const { store, results, key, sent } = await steeredConversation('S1');

    // Assert
    expect(sent.map((s) => s.mode)).toEqual(['queue', 'steer']);
    expect(results.bodies.map((r) => [r.turnId, r.status, r.output ?? r.error])).toEqual([
      ['S1', 'completed', 'turn 1: hello'],
      ['work', 'superseded', 'superseded by turn steer'],
      ['steer', 'completed', 'turn 3: stop that'],
      ['queued', 'completed', 'turn 4: later'],
    ]);
    const entries = await store.readJournal(key);
    const work = entries.filter((e) => e.turnId === 'work').map((e) => e.kind);
    // The call in flight finished and stays in the transcript; no further work call started.
    expect(work.filter((k) => k === 'tool')).toHaveLength(2);
    expect(work.filter((k) => k !== 'leg').at(-1)).toBe('outcome');
    const steerInput = entries.findIndex((e) => e.kind === 'input' && e.turnId === 'steer');
    const transcript = buildTranscript(entries.slice(0, steerInput + 1));
    const results2 = transcript.flatMap((m) => m.content.filter((c) => c.type === 'toolResult'));
    expect(results2.map((c) => (c.type === 'toolResult' ? c.toolCallId : ''))).toEqual(['t2-w1', 't2-w2']);
  });

  it('refuses an input past the pending-inputs cap with a clear error, and queues a steer sent to an idle session', async () => {
    // Arrange
    const test = makeTestDeps([supportDesk({ workMs: 5 })]);
    const key = keyOf('S2');
    await acceptTicket(ticketBody(AGENT, 'S2', { text: 'hello' }), undefined, test.deps);
    await drain(test.deps);
    const client = clientOf(test.deps, 2);

    // Act
    const idleSteer = await client.send(key.id, { text: 'first' }, { id: 'a', mode: 'steer' });
    await drain(test.deps);
    // The session is idle: b becomes its active turn at once; c and d wait behind it, at the cap.
    await client.send(key.id, { text: 'second' }, { id: 'b' });
    await client.send(key.id, { text: 'third' }, { id: 'c' });
    await client.send(key.id, { text: 'fourth' }, { id: 'd' });
    const refused = await client.send(key.id, { text: 'fifth' }, { id: 'e', mode: 'steer' }).catch((e: unknown) => e);
    await drain(test.deps);

    // Assert
    expect(idleSteer.mode).toBe('queue');
    expect(refused).toMatchObject({
      reason: 'full',
      message: expect.stringContaining('its limit of pending inputs (2)'),
    });
    expect(test.results.bodies.map((r) => [r.turnId, r.status])).toEqual([
      ['S2', 'completed'],
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
      ['d', 'completed'],
    ]);
  });

  it('answers a call its turn never ran, so the next turn’s transcript has a result for every call', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'work' })
      .add('model', { toolCalls: [{ id: 'w1', name: 'work', input: {} }], stopReason: 'tool_use', usage })
      .add('outcome', { status: 'superseded', error: 'superseded by turn t2' })
      .add('input', { input: 'stop' }, 't2')
      .entries();

    const transcript = buildTranscript(entries);

    expect(transcript.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'toolResult', toolCallId: 'w1', ok: false, output: { error: UNANSWERED } },
        { type: 'text', text: 'stop' },
      ],
    });
  });
});
