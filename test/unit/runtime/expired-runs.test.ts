import { describe, expect, it } from 'vitest';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { newSessionExpiry } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const DAY_MS = 86_400_000;

describe('a session id whose earlier run expired (its record gone, some items left)', () => {
  it('is not resumed over what is left: the new run fails, naming the remnants, and appends nothing', async () => {
    // Arrange: a run that finished; a retention later its record expired, its later items not yet.
    const { deps, store, clock, results } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-1', { ids: ['a'] }), undefined, deps);
    await drain(deps);
    const key = { tenant: 'default', agent: 'lookup-agent', id: deriveSessionId('default', 'lookup-agent', 'T-1') };
    clock.advance(DAY_MS + 60_000);
    store.expireItems(Math.floor(clock.now() / 1000));
    const left = await store.readJournal(key);
    expect(left.length).toBeGreaterThan(0);
    expect(await store.getSession(key)).toBeUndefined();

    // Act: a new record for the same id (as intake writes once the ticket's turn item is gone too).
    const now = clock.now();
    await store.createSession({
      key,
      ticketId: 'T-1',
      activeTurnId: 'T-1',
      activeInput: { turnId: 'T-1', input: { ids: ['a'] } },
      traceId: '0af7651916cd43dd8448eb211c80319c',
      now,
      sweepAt: now + 1_500,
      ...newSessionExpiry(deps.config, now),
      conversation: false,
    });
    const outcome = await runKick({ v: 1, session: key, reason: 'first' }, invocation(60_000, clock), deps);

    // Assert
    expect(outcome).toBe('finished');
    expect((await store.getSession(key))?.state).toBe('failed');
    expect(results.bodies.at(-1)?.error).toMatch(/what is left of an earlier run of this session id, which expired/);
    expect(await store.readJournal(key)).toEqual(left);
  });
});
