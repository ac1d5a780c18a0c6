import { describe, expect, it } from 'vitest';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { Kick } from '../../../lib/core/messages.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const DAY_MS = 24 * 3600 * 1000;
const keyOf = (ticketId: string) => ({
  tenant: 'default',
  agent: 'lookup-agent',
  id: deriveSessionId('default', 'lookup-agent', ticketId),
});

/** A session whose lease a leg holds right now (acquired, not released), as while a step runs. */
async function sessionWithLiveLease(ticketId: string) {
  const test = makeTestDeps([lookupAgent()]);
  await acceptTicket(ticketBody('lookup-agent', ticketId, { ids: ['a'] }), undefined, test.deps);
  test.workQueue.receive();
  const key = keyOf(ticketId);
  const now = test.clock.now();
  const held = await test.store.acquire(key, {
    owner: 'live-owner',
    until: now + 60_000,
    now,
    expectEpoch: 0,
    recovery: false,
  });
  if (!held.ok) throw new Error('could not take the lease for the test');
  return { ...test, key, epoch: held.record.epoch };
}

describe('forged kicks', () => {
  it('cannot take a live lease with a continuation that guesses the epoch but not the yielding leg’s nonce', async () => {
    // Arrange
    const { deps, store, key, epoch, clock, lines, total } = await sessionWithLiveLease('T-forged');

    // Act: the epoch is a small counter anyone can guess.
    const forged = await runKick(
      { v: 1, session: key, reason: 'continuation', fromEpoch: epoch },
      invocation(60_000, clock),
      deps,
    );
    const withWrongNonce = await runKick(
      { v: 1, session: key, reason: 'continuation', fromEpoch: epoch, handoff: 'f'.repeat(32) },
      invocation(60_000, clock),
      deps,
    );

    // Assert: the live owner keeps its lease, and the refusals are warnings an operator sees.
    expect([forged, withWrongNonce]).toEqual(['dropped', 'dropped']);
    expect(await store.getSession(key)).toMatchObject({ owner: 'live-owner', epoch });
    const refusals = lines.filter(
      (l) => l.level === 'warn' && l.message.startsWith('continuation without its hand-off'),
    );
    expect(refusals.map((l) => l.sessionId)).toEqual([key.id, key.id]);
    expect(total('ForgedKicksRefused')).toBe(2);
  });

  it('binds a real continuation to a nonce stored when its leg yields, and lets it take over', async () => {
    // Arrange: a lookup of six ids in a 1.5 s invocation yields to a continuation.
    const { deps, store, workQueue, clock } = makeTestDeps([lookupAgent({ modelLatencyMs: 150 })]);
    await acceptTicket(ticketBody('lookup-agent', 'T-yield', { ids: ['a', 'b', 'c', 'd', 'e', 'f'] }), undefined, deps);
    const [first] = workQueue.receive();

    // Act
    expect(await runKick(first!.body, invocation(1_500, clock), deps)).toBe('yielded');
    const [continuation] = workQueue.receive();

    // Assert
    expect(continuation?.body).toMatchObject({
      reason: 'continuation',
      handoff: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect((await store.getSession(keyOf('T-yield')))?.handoff).toBe(continuation?.body.handoff);
    expect(await runKick(continuation!.body, invocation(60_000, clock), deps)).not.toBe('dropped');
    const legs = (await store.readJournal(keyOf('T-yield'))).filter((e) => e.kind === 'leg');
    expect(legs.at(-1)?.data).toMatchObject({ reason: 'continuation' });
  });

  it('drops a delayed kick whose notBefore lies beyond the cap, without re-sending it', async () => {
    const { deps, workQueue, key, clock } = await sessionWithLiveLease('T-far');
    const sentBefore = workQueue.sent.length;

    const outcome = await runKick(
      { v: 1, session: key, reason: 'retry', notBefore: clock.now() + 365 * DAY_MS },
      invocation(60_000, clock),
      deps,
    );

    expect(outcome).toBe('dropped');
    expect(workQueue.sent).toHaveLength(sentBefore);
  });

  it('re-sends a delayed kick only for a session that waits for exactly that time', async () => {
    // Arrange: a session waiting for a retry at `retryAt`.
    const { deps, store, workQueue, key, epoch, clock } = await sessionWithLiveLease('T-wait');
    const retryAt = clock.now() + DAY_MS;
    await store.release(key, {
      owner: 'live-owner',
      epoch,
      state: 'waiting',
      seenVersion: 1,
      sweepAt: retryAt,
      progressed: false,
    });
    const ghost = keyOf('T-never-submitted');
    const sentBefore = workQueue.sent.length;

    // Act
    const forGhost = await runKick(
      { v: 1, session: ghost, reason: 'retry', notBefore: retryAt },
      invocation(60_000, clock),
      deps,
    );
    const otherTime = await runKick(
      { v: 1, session: key, reason: 'retry', notBefore: retryAt + 60_000 },
      invocation(60_000, clock),
      deps,
    );
    const real = await runKick(
      { v: 1, session: key, reason: 'retry', notBefore: retryAt },
      invocation(60_000, clock),
      deps,
    );

    // Assert
    expect([forGhost, otherTime, real]).toEqual(['dropped', 'dropped', 'delayed']);
    expect(workQueue.sent.slice(sentBefore).map((s) => s.body)).toEqual([
      { v: 1, session: key, reason: 'retry', notBefore: retryAt },
    ]);
  });

  it.each([
    ['a key separator', 'abcdefghijklmnopqrstuvwx#y'],
    ['upper case', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'],
    ['the wrong length', 'abcdefghijklmnop'],
  ])('refuses a kick whose session id has %s, naming the field', (_what, id) => {
    const parsed = Kick.safeParse({ v: 1, session: { tenant: 'default', agent: 'lookup-agent', id }, reason: 'first' });

    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({
      path: ['session', 'id'],
      message: 'session id must be 26 base32 characters',
    });
  });
});
