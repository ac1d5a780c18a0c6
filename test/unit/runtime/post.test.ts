import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { post } from '../../../lib/runtime/protocol/post.ts';

const key = { tenant: 't1', agent: 'long-haul', id: 'a'.repeat(26) };

/** A session created at `clock`'s now, its lease held until `heldForMs` later when given. */
async function session(heldForMs?: number) {
  const clock = new ManualClock();
  const store = new MemorySessionStore();
  const workQueue = new MemoryWorkQueue({ clock });
  const now = clock.now();
  await store.createSession({ key, ticketId: 'T1', activeTurnId: 'T1', traceId: 'a'.repeat(32), now, sweepAt: now });
  if (heldForMs !== undefined) {
    const acquired = await store.acquire(key, {
      owner: 'leg-1',
      until: now + heldForMs,
      now,
      expectEpoch: 0,
      recovery: false,
    });
    expect(acquired.ok).toBe(true);
  }
  return { store, workQueue, deps: { store, workQueue, clock, sweepGraceMs: 5_000 } };
}

describe('post', () => {
  it('kicks a session whose lease is free, so that a worker takes it for the event', async () => {
    const { deps, workQueue } = await session();

    const posted = await post(deps, key, { kind: 'cancel' });

    expect(posted.ok).toBe(true);
    expect(workQueue.receive().map((m) => m.body.reason)).toEqual(['cancel']);
  });

  it('sends no kick to a held lease — the holder meets the bump — but keeps the sweeper watching', async () => {
    const { deps, store, workQueue } = await session(30_000);

    const posted = await post(deps, key, { kind: 'cancel' });

    expect(posted.ok).toBe(true);
    expect(workQueue.pendingCount).toBe(0);
    const record = await store.getSession(key);
    expect(record?.cancelRequested).toBe(true);
    expect(record?.pendingVersion).toBeGreaterThan(0);
    // Should the holder die before it looks, the sweeper recovers the session for the event.
    expect(record?.sweepAt).toBeDefined();
  });

  it('kicks a held lease about to run out: its holder may be dead, and the kick must not arrive too late', async () => {
    const { deps, workQueue } = await session(500);

    await post(deps, key, { kind: 'child-outcome' });

    expect(workQueue.receive().map((m) => m.body.reason)).toEqual(['wake']);
  });
});
