import { describe, expect, it } from 'vitest';
import type { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryStreamSlots } from '../../../lib/adapters/memory/memory-stream-slots.ts';
import type { Caller } from '../../../lib/api/caller.ts';
import { ALL_ROLES } from '../../../lib/core/roles.ts';
import { memoryApi } from '../../fixtures/memory-api.ts';

const ROLE = 'arn:aws:iam::111122223333:role/Viewer';
/** A session of the Viewer role: each request may come under a new session name, as an attacker's would. */
const viewer = (session: string): Caller => ({
  principal: `arn:aws:sts::111122223333:assumed-role/Viewer/${session}`,
  grantee: ROLE,
  tenants: 'all',
  roles: ALL_ROLES,
});

/** Moves the manual clock from sleep to sleep until every request has answered (the long polls end). */
async function settle<T>(clock: ManualClock, requests: Promise<T>[]): Promise<T[]> {
  let done = false;
  const all = Promise.all(requests).finally(() => {
    done = true;
  });
  while (!done) {
    await clock.flush();
    if (!done) clock.advanceToNextSleep();
  }
  return all;
}

/** An API whose events requests wait 5 s by default, with a bound of `limit` streams per caller. */
async function streamingApi(limit: number) {
  let session = 0;
  const streams = new MemoryStreamSlots();
  const api = memoryApi({
    resolveCaller: () => viewer(`s${session++}`),
    eventsWaitMs: 5_000,
    streams,
    streamsPerCaller: limit,
  });
  const key = { tenant: 'default', agent: 'chat', id: 'S-streams' };
  const now = api.clock.now();
  await api.store.createSession({
    key,
    ticketId: 't0',
    activeTurnId: 't0',
    traceId: 'a'.repeat(32),
    now,
    sweepAt: now,
  });
  const events = (query = '') => api.call('GET', `/sessions/${key.id}/events`, { query });
  return { ...api, events, streams };
}

describe('event streams per caller (issue 23 item 8)', () => {
  it('refuses a stream over the caller’s bound with 429 naming it, counting every session of one role together', async () => {
    // Arrange: four streams of the role held open, each under a session name of its own.
    const { events, clock } = await streamingApi(4);
    const held = [events(), events(), events(), events()];

    // Act
    const fifth = await events();

    // Assert
    expect(fifth.status).toBe(429);
    expect(fifth.json.error).toEqual({
      code: 'too_many_streams',
      message: expect.stringMatching(
        new RegExp(
          `^${ROLE} has 4 event streams open, the most one caller may hold at once; close one, or retry in \\d+ s$`,
        ),
      ),
    });
    expect((await settle(clock, held)).map((a) => a.status)).toEqual([200, 200, 200, 200]);
  });

  it('frees a stream’s slot when it answers, so the caller may open the next', async () => {
    const { events, clock } = await streamingApi(1);
    expect((await settle(clock, [events()]))[0]?.status).toBe(200);
    expect((await settle(clock, [events()]))[0]?.status).toBe(200);
    expect((await settle(clock, [events(), events()])).map((a) => a.status)).toEqual([200, 429]);
  });

  it('takes no slot for a request that does not wait, and frees the slot of one that fails', async () => {
    const { events, call, clock } = await streamingApi(1);
    const held = events();
    const quick = await Promise.all([events('waitMs=0'), events('waitMs=0'), events('waitMs=0')]);
    expect(quick.map((a) => a.status)).toEqual([200, 200, 200]);
    expect((await settle(clock, [held]))[0]?.status).toBe(200);
    expect((await call('GET', '/sessions/nope/events', {})).status).toBe(404);
    expect((await settle(clock, [events()]))[0]?.status).toBe(200);
  });

  it('bounds how long one request may hold its stream: at most 20 s', async () => {
    const { events } = await streamingApi(4);
    const tooLong = await events('waitMs=25000');
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error?.message).toMatch(/waitMs/);
  });
});
