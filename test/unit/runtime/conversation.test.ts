import { describe, expect, it } from 'vitest';
import type { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { type AgentDefinition, defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { TurnRefusedError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { acceptTurn } from '../../../lib/runtime/turn-intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/** Answers `turn N: TEXT`, N counting the turn inputs in the transcript. */
function echo(messages: readonly ChatMessage[]) {
  const texts = messages.filter((m) => m.role === 'user').flatMap((m) => m.content.filter((c) => c.type === 'text'));
  const last = texts.at(-1);
  return { final: `turn ${texts.length}: ${last?.type === 'text' ? last.text : ''}` };
}

const chat = defineAgent({
  name: 'chat',
  instructions: 'Echo.',
  conversation: true,
  model: scriptedModel({ maxDurationMs: 1_000, script: echo }),
});

const keyOf = (agent: string, ticketId: string): SessionKey => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

async function startConversation(agent: AgentDefinition = chat) {
  const test = makeTestDeps([agent, lookupAgent()]);
  await acceptTicket(ticketBody('chat', 'T1', 'hello'), undefined, test.deps);
  await drain(test.deps);
  const key = keyOf('chat', 'T1');
  const send = (turnId: string, input: unknown, more: { ifLastTurn?: string; maxPendingInputs?: number } = {}) =>
    acceptTurn({ key, turnId, ticketId: turnId, input, sweepGraceMs: 1_500, ...more }, test.deps);
  return { ...test, key, send };
}

describe('conversations', () => {
  it('goes idle between turns, holding no lease, and gives each turn its own outcome and result', async () => {
    // Arrange
    const { deps, store, results, key, send } = await startConversation();
    const idle = await store.getSession(key);

    // Act
    await send('T2', 'again');
    await drain(deps);

    // Assert
    expect(idle).toMatchObject({ state: 'idle', conversation: true });
    expect(idle?.owner).toBeUndefined();
    expect(idle?.sweepAt).toBeUndefined();
    expect(results.bodies.map((r) => [r.turnId, r.status, r.output])).toEqual([
      ['T1', 'completed', 'turn 1: hello'],
      ['T2', 'completed', 'turn 2: again'],
    ]);
    expect((await store.getTurn(key, 'T2'))?.outcome).toMatchObject({ status: 'completed', output: 'turn 2: again' });
    expect(await store.getSession(key)).toMatchObject({ state: 'idle', activeTurnId: 'T2', turnQueue: [] });
  });

  it('runs a turn sent to an idle session in one leg: acquire, input (with the marker), steps, outcome, publish, end (recording the publish)', async () => {
    // Arrange
    const { deps, store, key, send } = await startConversation();
    const writesBefore = { ...store.writes };
    const seqBefore = (await store.readJournal(key)).length;

    // Act
    await send('T2', 'again');
    const outcomes = await drain(deps);

    // Assert: no leg only to hand the turn over; the turn's leg ends it in its release.
    expect(outcomes).toEqual(['finished']);
    const wrote = (op: keyof typeof store.writes) => store.writes[op] - writesBefore[op];
    expect([wrote('putTurn'), wrote('enqueueTurn'), wrote('acquire'), wrote('endTurn'), wrote('release')]).toEqual([
      1, 1, 1, 1, 0,
    ]);
    expect(wrote('setTurnOutcome')).toBe(1);
    const turn = (await store.readJournal(key)).slice(seqBefore).map((e) => e.kind);
    expect(turn).toEqual(['input', 'model', 'outcome']);
    expect(await store.getSession(key)).toMatchObject({ state: 'idle', publishedTurnId: 'T2' });
    expect(wrote('append')).toBe(turn.length);
  });

  it('reads the record once and the journal once from a turn sent to an idle session to its first model call', async () => {
    // Arrange: count the store's reads; the model notes them when it is called.
    const reads = { getSession: 0, getTurn: 0, readJournal: 0, getLatestSnapshot: 0 };
    const atModelCall: (typeof reads)[] = [];
    const noting = defineAgent({
      ...chat,
      model: scriptedModel({
        maxDurationMs: 1_000,
        script: (messages) => {
          atModelCall.push({ ...reads });
          return echo(messages);
        },
      }),
    });
    const { deps, store, send } = await startConversation(noting);
    for (const name of Object.keys(reads) as (keyof typeof reads)[]) {
      const read = (store[name] as (...args: unknown[]) => unknown).bind(store);
      (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        reads[name]++;
        return read(...args);
      };
    }
    atModelCall.length = 0;
    const fresh = () => Object.fromEntries(Object.keys(reads).map((k) => [k, 0])) as typeof reads;

    // Act: a small input, then one too large to ride on the record.
    Object.assign(reads, fresh());
    await send('T2', 'again');
    await drain(deps);
    Object.assign(reads, fresh());
    await send('T3', 'x'.repeat(2_000));
    await drain(deps);

    // Assert: the acceptance reads the record once; the leg reads it once (before its acquire),
    // the journal once, no turn item for a small input and no snapshot.
    expect(atModelCall[0]).toEqual({ getSession: 2, getTurn: 0, readJournal: 1, getLatestSnapshot: 0 });
    expect(atModelCall[1]).toEqual({ getSession: 2, getTurn: 1, readJournal: 1, getLatestSnapshot: 0 });
  });

  it('still runs a turn the previous version queued behind an ended turn on an idle session', async () => {
    // Arrange: what the enqueue of the previous version left: the ended turn active, the new one queued.
    const { deps, store, results, key } = await startConversation();
    await store.putTurn(key, { turnId: 'T2', ticketId: 'T2', input: 'old', inputHash: 'h', createdAt: 1 });
    const meta = store.rawItem(key, 'META')!;
    store.putRawItem(key, 'META', {
      ...meta,
      state: 'queued',
      turnQueue: ['T2'],
      lastTurnId: 'T2',
      pendingVersion: Number(meta.pendingVersion) + 1,
      sweepAt: deps.clock.now() + 1_500,
      sweepShard: '0',
    });
    await deps.workQueue.sendKick({ v: 1, session: key, reason: 'first', turnId: 'T2' });

    // Act
    await drain(deps);

    // Assert: a leg ends T1 and hands T2 over, as before; the next runs it.
    expect(results.bodies.map((r) => [r.turnId, r.output])).toEqual([
      ['T1', 'turn 1: hello'],
      ['T2', 'turn 2: old'],
    ]);
    expect(await store.getSession(key)).toMatchObject({ state: 'idle', activeTurnId: 'T2', turnQueue: [] });
  });

  it('runs turns sent while one runs one at a time, in the order they were accepted', async () => {
    // Arrange
    const { deps, results, send } = await startConversation();

    // Act
    await send('T2', 'two');
    await send('T3', 'three');
    await send('T4', 'four');
    await drain(deps);

    // Assert
    expect(results.bodies.map((r) => r.output)).toEqual([
      'turn 1: hello',
      'turn 2: two',
      'turn 3: three',
      'turn 4: four',
    ]);
  });

  it('runs a turn sent on the previous result, before its leg ended that turn, in that same leg', async () => {
    // Arrange: T3 arrives as a chat client sends it — on T2's result, before T2's leg's endTurn.
    const { deps, store, results, key, send } = await startConversation();
    let armed = true;
    store.beforeWrite = async (operation) => {
      if (operation !== 'endTurn' || !armed) return;
      armed = false;
      await send('T3', 'three');
    };
    await send('T2', 'two');
    const writesBefore = { ...store.writes };

    // Act
    const outcomes = await drain(deps);

    // Assert: the leg that ended T2 went on to T3 under its lease; T3's own kick found it held.
    expect(results.bodies.map((r) => r.output)).toEqual(['turn 1: hello', 'turn 2: two', 'turn 3: three']);
    expect(outcomes.filter((o) => o !== 'dropped')).toEqual(['finished']);
    const wrote = (op: keyof typeof store.writes) => store.writes[op] - writesBefore[op];
    expect([wrote('acquire'), wrote('advanceTurn'), wrote('endTurn')]).toEqual([1, 1, 2]);
    const journal = await store.readJournal(key);
    const t3 = journal.filter((e) => e.turnId === 'T3').map((e) => e.kind);
    // No marker for T3: the leg marked the journal once, for T2.
    expect(t3).toEqual(['input', 'model', 'outcome']);
    expect(journal.find((e) => e.kind === 'input' && e.turnId === 'T3')?.data).not.toHaveProperty('leg');
    expect(await store.getSession(key)).toMatchObject({ state: 'idle', activeTurnId: 'T3', publishedTurnId: 'T3' });
    expect((await store.getSession(key))?.owner).toBeUndefined();
  });

  it('hands the next queued turn to a new leg when the finishing leg’s budget cannot fit its first step', async () => {
    // Arrange: each model call takes 600 ms, so a leg of 1,700 ms (200 reserved) fits one call
    // (1,000 ms at most) at its start and not at the end of its turn.
    let clock: ManualClock | undefined;
    const slow = defineAgent({
      ...chat,
      model: scriptedModel({
        maxDurationMs: 1_000,
        script: (messages) => {
          clock?.advance(600);
          return echo(messages);
        },
      }),
    });
    const { deps, store, results, send, ...test } = await startConversation(slow);
    clock = test.clock;
    await send('T2', 'two');
    await send('T3', 'three');
    const writesBefore = { ...store.writes };

    // Act
    await drain(deps, { budgetMs: 1_700 });

    // Assert
    const wrote = (op: keyof typeof store.writes) => store.writes[op] - writesBefore[op];
    expect([wrote('acquire'), wrote('advanceTurn'), wrote('endTurn')]).toEqual([2, 0, 2]);
    expect(results.bodies.map((r) => r.output)).toEqual(['turn 1: hello', 'turn 2: two', 'turn 3: three']);
  });

  it('stamps the leg marker that starts a turn with that turn’s id, not the previous one’s', async () => {
    // Arrange
    const { deps, store, key, send } = await startConversation();

    // Act
    await send('T2', 'two');
    await drain(deps);

    // Assert
    const journal = await store.readJournal(key);
    const startT2 = journal.findIndex((e) => e.kind === 'input' && e.turnId === 'T2');
    // The leg that starts T2 carries its marker on T2's input.
    expect(journal[startT2]).toMatchObject({ turnId: 'T2', data: { leg: { reason: 'wake' } } });
    expect(journal[startT2 - 1]?.turnId).toBe('T1');
    // Every leg marker carries the turn of the entries written after it.
    journal.forEach((entry, i) => {
      const next = journal[i + 1];
      if (entry.kind === 'leg' && next && next.kind !== 'leg') expect(entry.turnId).toBe(next.turnId);
    });
  });

  it('takes a turn sent twice with the same id once', async () => {
    // Arrange
    const { deps, results, send } = await startConversation();

    // Act
    const first = await send('T2', 'again');
    const second = await send('T2', 'again');
    await drain(deps);
    const late = await send('T2', 'again');
    await drain(deps);

    // Assert
    expect([first.queued, second.queued, late.queued]).toEqual([true, false, false]);
    expect(results.bodies.filter((r) => r.turnId === 'T2')).toHaveLength(1);
  });

  it('refuses a stale view, a full queue, a one-shot session and an unknown one, each with a clear error', async () => {
    // Arrange
    const { deps, send } = await startConversation();
    await acceptTicket(ticketBody('lookup-agent', 'L1', { ids: [] }), undefined, deps);
    const oneShot = keyOf('lookup-agent', 'L1');

    // Act
    const stale = send('T2', 'x', { ifLastTurn: 'T0' }).catch((e: unknown) => e);
    // The session is idle: T3 becomes its active turn at once, T4 waits behind it.
    await send('T3', 'y', { ifLastTurn: 'T1' });
    await send('T4', 'z');
    const full = send('T5', 'w', { maxPendingInputs: 1 }).catch((e: unknown) => e);
    const refusedOneShot = acceptTurn(
      { key: oneShot, turnId: 'L2', ticketId: 'L2', input: {}, sweepGraceMs: 1 },
      deps,
    ).catch((e: unknown) => e);
    const unknown = acceptTurn(
      { key: { ...oneShot, id: 'nope' }, turnId: 'X', ticketId: 'X', input: {}, sweepGraceMs: 1 },
      deps,
    ).catch((e: unknown) => e);

    // Assert
    expect(await stale).toMatchObject({ reason: 'stale', message: expect.stringMatching(/stale view.*T1/) });
    expect(await full).toMatchObject({ reason: 'full', message: expect.stringMatching(/1 turns waiting/) });
    expect(await refusedOneShot).toBeInstanceOf(TurnRefusedError);
    expect(await refusedOneShot).toMatchObject({
      reason: 'one-shot',
      message: expect.stringMatching(/conversation: true/),
    });
    expect(await unknown).toMatchObject({ reason: 'not-found' });
  });

  it('records a turn refused by an ended session as failed with the refusal, so it never lists as queued', async () => {
    // Arrange: the conversation is cancelled.
    const { deps, store, workQueue, clock, key, send } = await startConversation();
    await store.bump(key, { now: clock.now(), cancel: true, sweepAt: clock.now() });
    await workQueue.sendKick({ v: 1, session: key, reason: 'cancel' });
    await drain(deps);

    // Act
    const refused = await send('T2', 'too late').catch((e: unknown) => e);
    const resent = await send('T2', 'too late').catch((e: unknown) => e);

    // Assert
    expect(refused).toMatchObject({ reason: 'finished', message: expect.stringMatching(/has ended \(\w+\)/) });
    expect((await store.getTurn(key, 'T2'))?.outcome).toMatchObject({
      status: 'failed',
      error: expect.stringMatching(/turn T2 refused \(finished\): session .* has ended \(\w+\)/),
    });
    // A resend of the same id gets the same answer.
    expect(resent).toMatchObject({ reason: 'finished', message: (refused as Error).message });
  });

  it('takes a further turn as a ticket that names the session', async () => {
    // Arrange
    const { deps, results, key } = await startConversation();

    // Act
    await acceptTicket(
      JSON.stringify({ v: 1, ticketId: 'T2', agent: 'chat', sessionId: key.id, input: 'by queue' }),
      undefined,
      deps,
    );
    await drain(deps);

    // Assert
    expect(results.bodies.at(-1)).toMatchObject({ sessionId: key.id, turnId: 'T2', output: 'turn 2: by queue' });
  });

  it('counts the step cap per turn, so a long conversation is not capped', async () => {
    // Arrange
    const capped = defineAgent({ ...chat, name: 'capped', limits: { maxSteps: 1 } });
    const { deps, results } = makeTestDeps([capped]);
    await acceptTicket(ticketBody('capped', 'C1', 'one'), undefined, deps);
    await drain(deps);
    const key = keyOf('capped', 'C1');

    // Act
    for (const id of ['C2', 'C3']) {
      await acceptTurn({ key, turnId: id, ticketId: id, input: id, sweepGraceMs: 1_500 }, deps);
      await drain(deps);
    }

    // Assert
    expect(results.bodies.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
  });
});
