import { describe, expect, it } from 'vitest';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { acceptTurn } from '../../../lib/runtime/turn-intake.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/**
 * A sent result is recorded by the release (or endTurn) that follows it, not by a `published`
 * journal entry: a crash between the two sends it again, once, under the same ids; nothing after
 * the release sends it again.
 */

/** The worker dies where the test says: nothing after it runs. */
class ProcessKilled extends Error {}

const AGENT = 'support-desk';
const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: AGENT,
  id: deriveSessionId('default', AGENT, ticketId),
});

async function conversation(ticketId: string) {
  const test = makeTestDeps([supportDesk({ workMs: 5 })]);
  const key = keyOf(ticketId);
  await acceptTicket(ticketBody(AGENT, ticketId, { text: 'hello' }), undefined, test.deps);
  await drain(test.deps);
  const send = (turnId: string, text: string) =>
    acceptTurn({ key, turnId, ticketId: turnId, input: { text }, sweepGraceMs: 1_500 }, test.deps);
  return { ...test, key, send };
}

describe('the published result recorded on the release', () => {
  it('sends a result again, under the same ids, when its leg dies between the send and endTurn; then never again', async () => {
    // Arrange: the worker dies as it ends T2, after T2's result went out.
    const { deps, store, results, clock, key, send } = await conversation('P1');
    await send('T2', 'again');
    let crashed = false;
    store.beforeWrite = (operation) => {
      if (operation === 'endTurn' && !crashed) {
        crashed = true;
        throw new ProcessKilled();
      }
    };
    await expect(drain(deps)).rejects.toThrow(ProcessKilled);
    const sentBeforeCrash = results.bodies.filter((r) => r.turnId === 'T2').length;

    // Act: a recovery after the lease expired, a duplicate kick, then the next turn.
    clock.advance(deps.config.leaseTtlMs + 50);
    const recovered = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    const duplicate = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    await send('T3', 'later');
    await drain(deps);

    // Assert: T2's result twice (at least once, the same message), one outcome; T3 once.
    expect(sentBeforeCrash).toBe(1);
    expect(recovered).toBe('finished');
    expect(duplicate).not.toBe('finished');
    const t2 = results.bodies.filter((r) => r.turnId === 'T2');
    expect(t2).toHaveLength(2);
    const same = { ticketId: 'T2', turnId: 'T2', sessionId: key.id, status: 'completed', output: 'turn 2: again' };
    expect(t2).toEqual([expect.objectContaining(same), expect.objectContaining(same)]);
    expect(results.bodies.filter((r) => r.turnId === 'T3')).toEqual([
      expect.objectContaining({ status: 'completed', output: 'turn 3: later' }),
    ]);
    const journal = await store.readJournal(key);
    expect(journal.filter((e) => e.kind === 'outcome' && e.turnId === 'T2')).toHaveLength(1);
    expect(journal.filter((e) => e.kind === 'published')).toEqual([]);
    expect(await store.getSession(key)).toMatchObject({ state: 'idle', activeTurnId: 'T3', publishedTurnId: 'T3' });
  });

  it('does not send an ended turn’s result again when a cancel wakes its idle session', async () => {
    // Arrange: T2 ended; the session is idle, its record says T2 was published.
    const { deps, store, results, clock, key, send } = await conversation('P2');
    await send('T2', 'again');
    await drain(deps);
    const sent = results.bodies.length;

    // Act
    await store.bump(key, { now: clock.now(), cancel: true, sweepAt: clock.now() + 1_000 });
    await deps.workQueue.sendKick({ v: 1, session: key, reason: 'wake' });
    await drain(deps);

    // Assert: the cancel ended the session, as cancelled; the turn keeps its outcome; no result went out again.
    expect(results.bodies).toHaveLength(sent);
    expect((await store.getSession(key))?.owner).toBeUndefined();
    expect((await store.getSession(key))?.state).toBe('cancelled');
    expect((await store.getTurn(key, 'T2'))?.outcome?.status).toBe('completed');
    expect(await drain(deps)).toEqual([]);
  });
});
