import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { sweep } from '../../../lib/runtime/sweeper.ts';
import { invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

describe('the sweeper', () => {
  it('kicks a session whose owner died, and only once its lease has expired', async () => {
    // Arrange: a leg dies (its lease stays) before the turn finishes.
    const clock = new ManualClock();
    const { deps, store, workQueue, total } = makeTestDeps([lookupAgent({ modelLatencyMs: 50, clock })], { clock });
    const { key } = await acceptTicket(ticketBody('lookup-agent', 'S-1', { ids: ['a', 'b'] }), undefined, deps);
    const [first] = workQueue.receive();
    const dying = {
      ...deps,
      failpoint: async (name: string) => {
        if (name === 'after-marker') throw new Error('killed');
      },
    };
    await expect(runKick(first!.body, invocation(60_000, clock), dying)).rejects.toThrow('killed');
    const options = { windowMs: 1, intervalMs: 10, stalledAfterMs: 60_000, remainingMs: () => 60_000 };

    // Act + Assert: while the lease is fresh, nothing is kicked.
    expect(await sweep(options, deps)).toMatchObject({ kicked: 0 });
    clock.advance(deps.config.leaseTtlMs + 50);
    expect(await sweep(options, deps)).toMatchObject({ kicked: 1 });
    const kick = workQueue.receive()[0]!.body;
    expect(kick).toMatchObject({ reason: 'recovery', session: key });

    // The kicked recovery finishes the turn; then the session is no longer watched.
    expect(await runKick(kick, invocation(60_000, clock), deps)).toBe('finished');
    expect((await store.getSession(key))?.state).toBe('completed');
    expect(await sweep(options, deps)).toMatchObject({ kicked: 0 });
    expect(total('StalledSessions')).toBe(0);
  });

  it('counts a session overdue for longer than the stall threshold as stalled', async () => {
    const { deps, total, clock } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'S-2', { ids: [] }), undefined, deps);
    clock.advance(deps.config.sweepGraceMs + 20);
    await sweep({ windowMs: 1, intervalMs: 10, stalledAfterMs: 10, remainingMs: () => 60_000 }, deps);
    expect(total('StalledSessions')).toBe(1);
  });

  it('polls every interval within its window while a session is due, and stops before the invocation runs out', async () => {
    const { deps, clock } = makeTestDeps([lookupAgent()]);
    // A ticket whose kick is lost: due once the grace passes, and no leg ever takes it.
    await acceptTicket(ticketBody('lookup-agent', 'S-3', { ids: [] }), undefined, deps);
    clock.advance(deps.config.sweepGraceMs + 20);
    const polls = await sweep(
      { windowMs: 250, intervalMs: 50, stalledAfterMs: 1_000, remainingMs: () => 60_000 },
      deps,
    );
    expect(polls).toMatchObject({ idle: false });
    expect(polls.polls).toBeGreaterThanOrEqual(3);
    const short = await sweep(
      { windowMs: 10_000, intervalMs: 50, stalledAfterMs: 1_000, remainingMs: () => 1_000 },
      deps,
    );
    expect(short.polls).toBe(1);
  });

  it('polls once and ends when nothing is leased, pending or due within its window', async () => {
    // Arrange: an empty deployment, then one session due only after the window.
    const { deps, clock } = makeTestDeps([lookupAgent()]);
    const options = { windowMs: 55_000, intervalMs: 5_000, stalledAfterMs: 60_000, remainingMs: () => 70_000 };
    const started = clock.now();

    // Act + Assert: one poll, no time spent.
    expect(await sweep(options, deps)).toEqual({ polls: 1, kicked: 0, idle: true });
    expect(clock.now()).toBe(started);
    await acceptTicket(ticketBody('lookup-agent', 'S-4', { ids: [] }), undefined, deps);
    expect(await sweep({ ...options, windowMs: deps.config.sweepGraceMs - 1 }, deps)).toEqual({
      polls: 1,
      kicked: 0,
      idle: true,
    });
  });

  it('keeps polling for a session that comes due within its window, and kicks it when it does', async () => {
    // Arrange: a ticket whose kick is lost, due after the grace.
    const { deps, clock, workQueue, lines } = makeTestDeps([lookupAgent()]);
    const { key } = await acceptTicket(ticketBody('lookup-agent', 'S-5', { ids: [] }), undefined, deps);
    workQueue.receive();
    const started = clock.now();

    // Act: a window longer than the grace, polled every 100 ms.
    const swept = await sweep(
      { windowMs: 5_000, intervalMs: 100, stalledAfterMs: 60_000, remainingMs: () => 70_000 },
      deps,
    );

    // Assert: kicked on the first poll after its sweepAt, and watched until the window ended.
    expect(swept).toMatchObject({ kicked: 1, idle: false });
    expect(swept.polls).toBeGreaterThan(deps.config.sweepGraceMs / 100);
    expect(clock.now() - started).toBeGreaterThanOrEqual(4_900);
    expect(workQueue.receive()[0]?.body).toMatchObject({ reason: 'recovery', session: key });
    // Each log line counts its own poll's kicks: one kick, then polls that kicked nothing.
    const sweepLines = lines.filter((l) => l.message === 'sweep');
    expect(sweepLines.map((l) => l.kicked)).toEqual([1]);
  });
});
