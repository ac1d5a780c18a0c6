import { describe, expect, it } from 'vitest';
import { journalSk } from '../../../lib/adapters/session-item-codec.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { JOURNAL_FORMAT_VERSION } from '../../../lib/core/journal.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { newerFormatDelayMs } from '../../../lib/runtime/protocol/newer-format.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { acceptTurn } from '../../../lib/runtime/turn-intake.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const chat = defineAgent({
  name: 'chat',
  instructions: 'Echo.',
  conversation: true,
  model: scriptedModel({ maxDurationMs: 1_000, script: () => ({ final: 'ok' }) }),
});

const key: SessionKey = { tenant: 'default', agent: 'chat', id: deriveSessionId('default', 'chat', 'T1') };

/** A conversation idle after its first turn, and a second turn accepted whose kick waits in the queue. */
async function conversationWithQueuedTurn(journalFormat?: number) {
  const test = makeTestDeps([chat]);
  if (journalFormat !== undefined) Object.assign(test.deps, { config: { ...test.deps.config, journalFormat } });
  await acceptTicket(ticketBody('chat', 'T1', 'hello'), undefined, test.deps);
  await drain(test.deps);
  await acceptTurn({ key, turnId: 'T2', ticketId: 'T2', input: 'again', sweepGraceMs: 1_500 }, test.deps);
  return test;
}

describe('journal formats', () => {
  it('stamps every entry this build writes with its format', async () => {
    // Arrange
    const { store } = await conversationWithQueuedTurn();

    // Act
    const entries = await store.readJournal(key);

    // Assert
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e) => e.v === JOURNAL_FORMAT_VERSION)).toBe(true);
    expect(store.rawItem(key, journalSk(1))).toMatchObject({ v: JOURNAL_FORMAT_VERSION });
  });

  it('writes format 1 entries exactly as before when configured as an older build', async () => {
    // Arrange
    const { store } = await conversationWithQueuedTurn(1);

    // Act
    const raw = store.rawItem(key, journalSk(1));

    // Assert: no `v` attribute, no agent version: what today's readers expect.
    expect(raw).not.toHaveProperty('v');
    expect((await store.readJournal(key))[0]).toMatchObject({ kind: 'input', data: { input: 'hello' } });
    expect(JSON.parse(String(raw?.data))).not.toHaveProperty('agentVersion');
  });

  it('leaves a session whose journal holds an entry of an unknown newer format to a newer worker', async () => {
    // Arrange: a newer build journaled a kind this one has never heard of.
    const test = await conversationWithQueuedTurn();
    const { store, clock, workQueue } = test;
    const before = await store.readJournal(key);
    const seq = before.length + 1;
    store.putRawItem(key, journalSk(seq), {
      seq,
      kind: 'hologram',
      epoch: 99,
      writeId: 'w-new',
      at: clock.now(),
      v: 7,
      futureAttribute: true,
      data: '{"shape":"unknown"}',
    });
    const [kick] = workQueue.receive().map((m) => m.body);

    // Act
    const outcome = await runKick(kick!, invocation(60_000, clock), test.deps);

    // Assert: nothing journaled, nothing failed; the lease is free, the session queued, a kick delayed.
    expect(outcome).toBe('delayed');
    expect(store.sortKeys(key).filter((sk) => sk.startsWith('J#'))).toHaveLength(seq);
    const record = await store.getSession(key);
    expect(record).toMatchObject({ state: 'queued', activeTurnId: 'T2' });
    expect(record?.owner).toBeUndefined();
    expect((await store.getTurn(key, 'T2'))?.outcome).toBeUndefined();
    expect(workQueue.pendingCount).toBe(1);
    expect(workQueue.nextVisibleAt).toBeGreaterThanOrEqual(clock.now() + newerFormatDelayMs(test.deps.config) - 1_000);
    expect(test.total('NewerJournalFormat')).toBe(1);
    expect(test.lines.some((l) => l.level === 'error')).toBe(false);
  });

  it('leaves a record holding an inbox item of a kind it does not know to a newer worker: nothing taken, nothing failed, the kick back after a lease', async () => {
    // Arrange: a newer build posted an item of a kind this one has never heard of.
    const test = await conversationWithQueuedTurn();
    const { store, clock, workQueue } = test;
    const record = store.rawItem(key, 'META')!;
    store.putRawItem(key, 'META', { ...record, inbox: [JSON.stringify({ kind: 'hologram', id: 'h1', turnId: 'T2' })] });
    const [kick] = workQueue.receive().map((m) => m.body);

    // Act
    const outcome = await runKick(kick!, invocation(60_000, clock), test.deps);

    // Assert
    expect(outcome).toBe('delayed');
    expect(store.rawItem(key, 'META')).toMatchObject({ epoch: record.epoch });
    expect((await store.getTurn(key, 'T2'))?.outcome).toBeUndefined();
    expect(workQueue.pendingCount).toBe(1);
    expect(workQueue.nextVisibleAt).toBeGreaterThanOrEqual(clock.now() + newerFormatDelayMs(test.deps.config) - 1_000);
    expect(test.total('NewerJournalFormat')).toBe(1);
    expect(test.lines.some((l) => l.level === 'error')).toBe(false);
    // An item of a known kind that fails its schema is still corrupt state, not a newer build's.
    store.putRawItem(key, 'META', { ...record, inbox: [JSON.stringify({ kind: 'stop', id: 's' })] });
    await expect(store.getSession(key)).rejects.toThrow(/inbox item 0 failed validation/);
  });

  it('lets an older worker leave a newer worker’s session and the newer one finish it (a rolling deploy)', async () => {
    // Arrange: the first turn ran on the new build (format 2); an old build (format 1) runs beside it.
    const test = await conversationWithQueuedTurn();
    const old = makeTestDeps([chat], {
      store: test.store,
      workQueue: test.workQueue,
      results: test.results,
      clock: test.clock,
    });
    Object.assign(old.deps, { config: { ...old.deps.config, journalFormat: 1 } });
    const [kick] = test.workQueue.receive().map((m) => m.body);

    // Act: the old worker takes the kick first, then the new one drains what it left.
    const byOld = await runKick(kick!, invocation(60_000, test.clock), old.deps);
    await drain(test.deps);

    // Assert
    expect(byOld).toBe('delayed');
    expect(old.total('NewerJournalFormat')).toBe(1);
    expect(await test.store.getTurn(key, 'T2')).toMatchObject({ outcome: { status: 'completed', output: 'ok' } });
    const entries = await test.store.readJournal(key);
    expect(entries.filter((e) => e.kind === 'input').map((e) => e.turnId)).toEqual(['T1', 'T2']);
    expect(entries.every((e) => e.v === JOURNAL_FORMAT_VERSION)).toBe(true);
  });
});
