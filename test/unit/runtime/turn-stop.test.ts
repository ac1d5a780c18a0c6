import { describe, expect, it } from 'vitest';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { buildTranscript, UNANSWERED } from '../../../lib/agent/transcript.ts';
import { BatonClient, type StopTurnResult } from '../../../lib/client/baton-client.ts';
import { foldJournal } from '../../../lib/core/fold.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { type InboxItem, stopItem, TURN_STOPPED, triageInbox } from '../../../lib/core/inbox.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
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

function clientOf(deps: RuntimeDeps) {
  return new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });
}

/** A conversation idle after its first turn (`hello`), every step boundary reading the record. */
async function idleConversation(ticketId: string, failpoint?: (name: string) => Promise<void>) {
  const key = keyOf(ticketId);
  const test = makeTestDeps([supportDesk({ workMs: 5 })], {
    config: { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 1, sweepGraceMs: 1_500, inboxLookMs: 0 },
    ...(failpoint ? { failpoint } : {}),
  });
  await acceptTicket(ticketBody(AGENT, ticketId, { text: 'hello' }), undefined, test.deps);
  await drain(test.deps);
  return { ...test, key, client: clientOf(test.deps) };
}

/** Every call the transcript asks for has a result before the next user text: what models require. */
function unansweredCalls(transcript: readonly ChatMessage[]): string[] {
  const open = new Set<string>();
  for (const message of transcript)
    for (const part of message.content) {
      if (part.type === 'toolUse') open.add(part.toolCallId);
      if (part.type === 'toolResult') open.delete(part.toolCallId);
    }
  return [...open];
}

const outcomes = (entries: readonly JournalEntry[], turnId: string) =>
  entries.filter((e) => e.kind === 'outcome' && e.turnId === turnId).map((e) => e.data);

describe('stopping one turn (the chat’s stop)', () => {
  it('ends a running turn cancelled at its next step boundary, leaves the conversation idle, and its next turn runs on a valid transcript', async () => {
    // Arrange: `work 6` is told to stop while its second work call runs.
    let deps: RuntimeDeps | undefined;
    let workSteps = 0;
    const stops: StopTurnResult[] = [];
    const key = keyOf('R1');
    const test = await idleConversation('R1', async (name) => {
      if (name !== 'mid-step' || !deps) return;
      const last = (await deps.store.readJournal(key)).at(-1);
      if (last?.kind !== 'model' || last.turnId !== 'work' || ++workSteps !== 2) return;
      stops.push(await clientOf(deps).stopTurn(key.id, 'work'));
    });
    deps = test.deps;
    await test.client.send(key.id, { text: 'work 6' }, { id: 'work' });

    // Act
    await drain(test.deps);
    const idle = await test.store.getSession(key);
    await test.client.send(key.id, { text: 'after' }, { id: 'after' });
    await drain(test.deps);

    // Assert
    expect(stops).toEqual(['requested']);
    expect(idle).toMatchObject({ state: 'idle', cancelRequested: false, inbox: [] });
    expect(test.results.bodies.map((r) => [r.turnId, r.status, r.output ?? r.error])).toEqual([
      ['R1', 'completed', 'turn 1: hello'],
      ['work', 'cancelled', TURN_STOPPED],
      ['after', 'completed', 'turn 3: after'],
    ]);
    expect(await test.store.getTurn(key, 'work')).toMatchObject({
      outcome: { status: 'cancelled', error: TURN_STOPPED },
    });
    const entries = await test.store.readJournal(key);
    expect(outcomes(entries, 'work')).toEqual([{ status: 'cancelled', error: TURN_STOPPED, stopped: true }]);
    // The call in flight finished; no further work call started.
    expect(entries.filter((e) => e.turnId === 'work' && e.kind === 'tool')).toHaveLength(2);
    const afterInput = entries.findIndex((e) => e.kind === 'input' && e.turnId === 'after');
    expect(unansweredCalls(buildTranscript(entries.slice(0, afterInput + 1)))).toEqual([]);
    expect((await test.store.getSession(key))?.state).toBe('idle');
  });

  it('answers a call the stopped turn asked for and never ran, so the next model call sees a result for it', async () => {
    // Arrange: the stop lands right after the model asked for a call.
    const entries = journal()
      .leg()
      .add('input', { input: 'work' })
      .add('model', { toolCalls: [{ id: 'w1', name: 'work', input: {} }], stopReason: 'tool_use', usage })
      .add('outcome', { status: 'cancelled', error: TURN_STOPPED, stopped: true })
      .add('input', { input: 'next' }, 't2')
      .entries();

    // Act
    const transcript = buildTranscript(entries);

    // Assert
    expect(transcript.at(-1)).toEqual({
      role: 'user',
      content: [
        { type: 'toolResult', toolCallId: 'w1', ok: false, output: { error: UNANSWERED } },
        { type: 'text', text: 'next' },
      ],
    });
  });

  it('ends a queued turn cancelled without running it, and the turns around it run', async () => {
    // Arrange: `work 2` is active (its kick not yet delivered) with two turns queued behind it.
    const test = await idleConversation('Q1');
    const { key, client } = test;
    await client.send(key.id, { text: 'work 2' }, { id: 'work' });
    await client.send(key.id, { text: 'first' }, { id: 'q1' });
    await client.send(key.id, { text: 'second' }, { id: 'q2' });

    // Act
    const stopped = await client.stopTurn(key.id, 'q1');
    await drain(test.deps);

    // Assert
    expect(stopped).toBe('requested');
    expect(test.results.bodies.map((r) => [r.turnId, r.status, r.output ?? r.error])).toEqual([
      ['Q1', 'completed', 'turn 1: hello'],
      ['work', 'completed', 'done 2'],
      ['q1', 'cancelled', TURN_STOPPED],
      ['q2', 'completed', 'turn 4: second'],
    ]);
    const entries = await test.store.readJournal(key);
    expect(entries.filter((e) => e.turnId === 'q1').map((e) => e.kind)).toEqual(['input', 'outcome']);
    expect(await test.store.getSession(key)).toMatchObject({ state: 'idle', inbox: [], turnQueue: [] });
  });

  it('stops a turn that is active but not yet started before it takes a step', async () => {
    // Arrange
    const test = await idleConversation('A1');
    const { key, client } = test;
    await client.send(key.id, { text: 'work 3' }, { id: 'work' });

    // Act
    const stopped = await client.stopTurn(key.id, 'work');
    await drain(test.deps);

    // Assert
    expect(stopped).toBe('requested');
    const entries = await test.store.readJournal(key);
    expect(entries.filter((e) => e.turnId === 'work' && e.kind !== 'leg').map((e) => e.kind)).toEqual([
      'input',
      'outcome',
    ]);
    expect((await test.store.getSession(key))?.state).toBe('idle');
  });

  it('is a no-op for a turn that has ended, and never reaches a later turn', async () => {
    // Arrange
    const test = await idleConversation('F1');
    const { key, client, store } = test;
    const before = await store.getSession(key);

    // Act: a stop of the ended first turn; then one that raced its end and landed late.
    const answer = await client.stopTurn(key.id, 'F1');
    const unknown = await client.stopTurn(key.id, 'no-such-turn');
    const after = await store.getSession(key);
    await client.send(key.id, { text: 'work 2' }, { id: 'later' });
    await store.postInbox(key, {
      item: stopItem('F1'),
      now: test.clock.now(),
      sweepAt: test.clock.now(),
      maxPending: 9,
    });
    await drain(test.deps);

    // Assert
    expect(answer).toBe('already-ended');
    expect(unknown).toBe('not-found');
    expect(after?.pendingVersion).toBe(before?.pendingVersion);
    expect(after?.inbox).toEqual([]);
    expect(test.results.bodies.map((r) => [r.turnId, r.status])).toEqual([
      ['F1', 'completed'],
      ['later', 'completed'],
    ]);
    expect((await store.getSession(key))?.inbox).toEqual([]);
  });

  it('takes the same stop twice as one: one item, one outcome, one result', async () => {
    // Arrange
    const test = await idleConversation('D1');
    const { key, client, store } = test;
    await client.send(key.id, { text: 'work 2' }, { id: 'work' });
    await client.send(key.id, { text: 'next' }, { id: 'next' });

    // Act
    const first = await client.stopTurn(key.id, 'next');
    const second = await client.stopTurn(key.id, 'next');
    const inbox = (await store.getSession(key))?.inbox;
    await drain(test.deps);
    const late = await client.stopTurn(key.id, 'next');

    // Assert
    expect([first, second, late]).toEqual(['requested', 'requested', 'already-ended']);
    expect(inbox).toEqual([stopItem('next')]);
    expect(outcomes(await store.readJournal(key), 'next')).toHaveLength(1);
    expect(test.results.bodies.filter((r) => r.turnId === 'next').map((r) => r.status)).toEqual(['cancelled']);
  });

  it('never lets the stops of queued turns crowd out the approval the running turn waits for (sim seed 2892)', async () => {
    // Arrange: a cap of 2 pending inputs; the running turn waits for an approval, two turns queue behind it.
    const test = await idleConversation('P1');
    const { key, store } = test;
    const client = new BatonClient({
      store: test.deps.store,
      tickets: new MemoryTicketQueue(),
      workQueue: test.deps.workQueue,
      clock: test.deps.clock,
      maxPendingInputs: 2,
    });
    await client.send(key.id, { text: 'refund O-7' }, { id: 'refund' });
    await drain(test.deps);
    await client.send(key.id, { text: 'first' }, { id: 'q1' });
    await client.send(key.id, { text: 'second' }, { id: 'q2' });

    // Act: both queued turns stopped (two items waiting for their turns), then the approval.
    const stops = [await client.stopTurn(key.id, 'q1'), await client.stopTurn(key.id, 'q2')];
    const waiting = (await store.getSession(key))?.inbox.length;
    const approved = await client.approve(key.id, 't2-refund', { approved: true });
    await drain(test.deps);

    // Assert
    expect(stops).toEqual(['requested', 'requested']);
    expect(waiting).toBe(2);
    expect(approved.callId).toBe('t2-refund');
    // The decision landed and the refund turn went on to its end (the refund service's answer is its own).
    const entries = await store.readJournal(key);
    expect(entries.some((e) => e.kind === 'decision' && e.turnId === 'refund' && e.data.approved)).toBe(true);
    expect(test.results.bodies.map((r) => [r.turnId, r.status === 'cancelled'])).toEqual([
      ['P1', false],
      ['refund', false],
      ['q1', true],
      ['q2', true],
    ]);
    expect(await store.getSession(key)).toMatchObject({ state: 'idle', inbox: [] });
  });

  it('leaves a cancel of the session as it was: the conversation ends', async () => {
    // Arrange
    const test = await idleConversation('C1');
    const { key, client } = test;
    await client.send(key.id, { text: 'work 2' }, { id: 'work' });

    // Act
    await client.cancel(key.id);
    await drain(test.deps);

    // Assert
    expect((await test.store.getSession(key))?.state).toBe('cancelled');
    expect(outcomes(await test.store.readJournal(key), 'work')).toEqual([
      { status: 'cancelled', error: 'cancelled by request' },
    ]);
  });
});

describe('triage of a stop', () => {
  const running = foldJournal(
    journal()
      .leg()
      .add('input', { input: 'work' }, 't1')
      .add('model', { toolCalls: [{ id: 'w1', name: 'work', input: {} }], stopReason: 'tool_use', usage })
      .entries(),
  );
  const message: InboxItem = { kind: 'message', id: 'm1', text: 'note' };

  it('delivers a stop of the running turn, and nothing after it in the same pass', () => {
    const triage = triageInbox(running, [stopItem('t1'), message], { activeTurnId: 't1', turnQueue: [] });

    expect(triage).toEqual({ deliver: [stopItem('t1')], discard: [] });
  });

  it('keeps a stop of a turn that has not started, and drops one of a turn that is neither running nor waiting', () => {
    const triage = triageInbox(running, [stopItem('t2'), stopItem('t0')], { activeTurnId: 't1', turnQueue: ['t2'] });

    expect(triage).toEqual({ deliver: [], discard: [stopItem('t0')] });
  });

  it('drops a stop of the turn once it has ended', () => {
    const ended = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'hi' }, 't1')
        .add('outcome', { status: 'completed', output: 'ok' })
        .entries(),
    );

    expect(triageInbox(ended, [stopItem('t1')], { activeTurnId: 't1', turnQueue: [] })).toEqual({
      deliver: [],
      discard: [stopItem('t1')],
    });
  });

  it('holds a stop while an interrupted once-only call waits to be reconciled', () => {
    const interrupted = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'refund' }, 't1')
        .add('model', { toolCalls: [{ id: 'r1', name: 'refund', input: {} }], stopReason: 'tool_use', usage })
        .add('intent', { callId: 'r1', tool: 'refund', idempotencyKey: 'k', digest: 'd' })
        .entries(),
    );

    expect(triageInbox(interrupted, [stopItem('t1')], { activeTurnId: 't1', turnQueue: [] })).toEqual({
      deliver: [],
      discard: [],
    });
  });
});
