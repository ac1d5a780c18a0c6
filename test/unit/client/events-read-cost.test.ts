import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { MemoryStreamSlots } from '../../../lib/adapters/memory/memory-stream-slots.ts';
import { createApiHandler } from '../../../lib/api/api-handler.ts';
import type { CallerResolver } from '../../../lib/api/caller.ts';
import { parseSse } from '../../../lib/api/sse.ts';
import type { SessionEvent } from '../../../lib/client/baton-client.ts';
import { TURN_CLOCK_ALLOWANCE_MS } from '../../../lib/client/journal-pages.ts';
import type { SessionKey } from '../../../lib/core/ids.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';
import { ALL_ROLES } from '../../../lib/core/roles.ts';
import { meteredClient } from '../../fixtures/metered-store.ts';

/** A caller that may do everything with every tenant. */
const anyCaller: CallerResolver = () => ({ principal: 'test', tenants: 'all', roles: ALL_ROLES });

const STEP_MS = 2_000;
/** Between a turn's result and the next turn being sent: someone reads the answer. */
const THINK_MS = 30_000;

/**
 * A conversation of `turns` turns of `perTurn` entries each (a leg marker, the input, model and
 * tool steps and the outcome), one entry every STEP_MS; each turn is sent
 * THINK_MS after the one before ended, or `sentAheadMs` earlier (queued while that one ran).
 * `workerSkewMs` sets the workers' clocks behind the sender's.
 */
async function conversation(turns: number, perTurn: number, workerSkewMs = 0, sentAheadMs = 0) {
  const clock = new ManualClock();
  const store = new MemorySessionStore({ clock });
  const key: SessionKey = {
    tenant: 'default',
    agent: 'chat',
    id: `chat-${turns}x${perTurn}-${workerSkewMs}-${sentAheadMs}`,
  };
  const start = clock.now();
  await store.createSession({
    key,
    ticketId: 'turn-0',
    activeTurnId: 'turn-0',
    traceId: 'a'.repeat(32),
    now: start,
    sweepAt: start,
  });
  const entries: JournalEntry[] = [];
  let at = start;
  const add = (kind: JournalEntry['kind'], data: unknown, turnId: string) => {
    at += STEP_MS;
    const seq = entries.length + 1;
    entries.push({ seq, kind, epoch: 1, writeId: `w${seq}`, at: at - workerSkewMs, turnId, data } as JournalEntry);
  };
  for (let t = 0; t < turns; t++) {
    const turnId = `turn-${t}`;
    await store.putTurn(key, {
      turnId,
      ticketId: turnId,
      input: { t },
      inputHash: `h${t}`,
      createdAt: at - sentAheadMs,
    });
    add('leg', { owner: 'o1', reason: 'wake', traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` }, turnId);
    add('input', { input: { t } }, turnId);
    for (let i = 0; i < perTurn - 3; i++) add('message', { text: `turn ${t} step ${i}` }, turnId);
    add('outcome', { status: 'completed', output: `answer ${t}` }, turnId);
    at += THINK_MS;
  }
  for (const entry of entries) await store.append(key, entry);
  const { client, metered, meter } = meteredClient(store, clock);
  return { key, store: metered, client, meter, entries, clock };
}

async function collect(stream: AsyncGenerator<SessionEvent>): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

/** What `read` costs in journal reads and entries. */
async function costOf<T>(meter: { reads: number; entries: number }, read: () => Promise<T>) {
  const before = { ...meter };
  const value = await read();
  return { value, reads: meter.reads - before.reads, entries: meter.entries - before.entries };
}

/** Requests that answer at once: they take no stream slot. */
const NO_WAIT = { eventsWaitMs: 0, eventsPollMs: 10, streams: new MemoryStreamSlots(), streamsPerCaller: 4 };

const seqs = (events: readonly { seq: number }[]) => events.map((e) => e.seq);

/** GET /sessions/{id}/events on the API handler over the conversation's client and store. */
function eventsApi({ key, client, store, clock }: Awaited<ReturnType<typeof conversation>>) {
  const api = createApiHandler({
    services: { ...NO_WAIT, client, store, clock },
    resolveCaller: anyCaller,
  });
  return async (query: string, headers: Record<string, string> = {}) => {
    const answer = await api({
      requestContext: { http: { method: 'GET' } },
      rawPath: `/sessions/${key.id}/events`,
      rawQueryString: query,
      headers,
    } as unknown as LambdaFunctionURLEvent);
    return parseSse(typeof answer === 'string' ? answer : String(answer.body));
  };
}

describe('the events stream, read in pages', () => {
  it('reads a page of 200 from cursor 0 of a 4,000-entry session, not the 4,000', async () => {
    // Arrange
    const { key, client, meter, store, entries } = await conversation(20, 200);
    const record = await store.getSession(key);
    if (!record) throw new Error('setup: no session');

    // Act
    const first = await costOf(meter, () => client.eventsAfter(record, 0, 200));
    const middle = await costOf(meter, () => client.eventsAfter(record, 2_000, 200));
    const last = await costOf(meter, () => client.eventsAfter(record, 3_950, 200));

    // Assert
    console.log(
      `events page of 200 in a ${entries.length}-entry session: ${first.entries} entries read from cursor 0, ${middle.entries} from 2000, ${last.entries} from 3950`,
    );
    expect(seqs(first.value)).toEqual(seqs(entries.slice(0, 200)));
    expect(first).toMatchObject({ reads: 1, entries: 200 });
    expect(seqs(middle.value)).toEqual(seqs(entries.slice(2_000, 2_200)));
    expect(middle).toMatchObject({ reads: 1, entries: 200 });
    expect(last).toMatchObject({ reads: 1, entries: 50 });
  });

  it('streams the whole journal once, page by page, and a follower reconnecting reads only what is new', async () => {
    // Arrange
    const { key, client, meter, entries } = await conversation(20, 200);

    // Act
    const whole = await costOf(meter, () => collect(client.events(key.id)));
    const resumed = await costOf(meter, () => collect(client.events(key.id, { after: 3_990 })));

    // Assert: every entry once; reads of at most a page each; the reconnect pays its 10 (and the
    // oldest entry, which proves the cursor is still retained).
    expect(seqs(whole.value)).toEqual(seqs(entries));
    expect(whole.entries).toBe(entries.length);
    expect(whole.reads).toBe(entries.length / 200 + 1);
    expect(seqs(resumed.value)).toEqual(seqs(entries.slice(3_990)));
    expect(resumed.entries).toBe(10);
  });

  it("opens a long session's console with one page: the API's first events response reads 200 entries", async () => {
    // Arrange
    const session = await conversation(20, 200);
    const { meter, entries } = session;
    const get = eventsApi(session);

    // Act: the console's EventSource opens with live=true and no cursor, then reconnects with Last-Event-ID.
    const opened = await costOf(meter, () => get('live=true'));
    const firstIds = opened.value.flatMap((e) => (e.event === 'entry' ? [Number(e.id)] : []));
    const next = await costOf(meter, () => get('live=true', { 'last-event-id': String(firstIds.at(-1)) }));
    const nextIds = next.value.flatMap((e) => (e.event === 'entry' ? [Number(e.id)] : []));

    // Assert
    console.log(
      `console opening a ${entries.length}-entry session: first events response read ${opened.entries} entries, the next ${next.entries}`,
    );
    expect(firstIds).toEqual(seqs(entries.slice(0, 200)));
    expect(opened.entries).toBe(200);
    expect(nextIds).toEqual(seqs(entries.slice(200, 400)));
    expect(next.entries).toBe(200);
  });
});

describe('a per-turn stream', () => {
  it("reads about the turn's own entries, not the turns before it, and shows exactly them", async () => {
    // Arrange
    const { key, client, meter, entries } = await conversation(20, 200);
    const turn = (t: number) => entries.filter((e) => e.turnId === `turn-${t}`);

    // Act
    const late = await costOf(meter, () => collect(client.events(key.id, { turnId: 'turn-17' })));
    const first = await costOf(meter, () => collect(client.events(key.id, { turnId: 'turn-0' })));

    // Assert: two pages (the turn's 200 entries, starting a few entries before it — those written
    // within the clock allowance before it was sent — and ending within the next turn's) and a
    // search of about 2·log2(3,400) single entries; from cursor 0 the old stream read all 4,000.
    const search = 2 * Math.ceil(Math.log2(entries.length)) + 1;
    console.log(
      `per-turn stream of turn 17 of 20 (200 entries each): ${late.entries} entries read in ${late.reads} reads`,
    );
    expect(seqs(late.value)).toEqual(seqs(turn(17)));
    expect(late.value.at(-1)?.kind).toBe('outcome');
    expect(late.entries).toBeLessThanOrEqual(2 * 200 + search);
    expect(seqs(first.value)).toEqual(seqs(turn(0)));
    expect(first.entries).toBeLessThanOrEqual(2 * 200 + search);
  });

  it('shows every entry of each turn, from any cursor, whatever the workers’ clocks say within the allowance', async () => {
    // Arrange: workers' clocks run behind the sender's (entries seem written before their turn was sent).
    const behind = await conversation(6, 40, TURN_CLOCK_ALLOWANCE_MS / 2);
    const ahead = await conversation(6, 40, -TURN_CLOCK_ALLOWANCE_MS);

    for (const { key, client, entries } of [behind, ahead])
      for (let t = 0; t < 6; t++) {
        const expected = seqs(entries.filter((e) => e.turnId === `turn-${t}`));
        for (const after of [0, expected[0]! - 1, expected[5]!, expected.at(-1)!]) {
          // Act
          const shown = await collect(client.events(key.id, { turnId: `turn-${t}`, after }));

          // Assert
          expect(seqs(shown), `turn-${t} after ${after}`).toEqual(expected.filter((seq) => seq > after));
        }
      }
  });

  it('through the API, pages past the entries of a turn that ran while it was queued, and ends after its result', async () => {
    // Arrange: each turn was sent as the one before it started, so the search stops a turn early.
    const session = await conversation(20, 200, 0, 400_000);
    const { meter, entries } = session;
    const get = eventsApi(session);
    const expected = seqs(entries.filter((e) => e.turnId === 'turn-17'));

    // Act: as HttpBatonClient does: after the last cursor seen (an entry's, or a `cursor` event's).
    const shown: number[] = [];
    const costs: number[] = [];
    let cursor = 0;
    let ended = false;
    let moved = 0;
    for (let request = 0; !ended && request < 10; request++) {
      const answer = await costOf(meter, () => get(`after=${cursor}&turn=turn-17`));
      costs.push(answer.entries);
      for (const event of answer.value) {
        if (event.event === 'entry') shown.push(Number(event.id));
        if (event.id !== undefined) cursor = Number(event.id);
        if (event.event === 'end') ended = true;
        if (event.event === 'cursor') moved++;
      }
    }

    // Assert: the first response read the queued-behind turn and moved the cursor past it.
    console.log(
      `per-turn stream through the API, turn queued behind another: entries read per response ${costs.join(', ')}`,
    );
    expect(shown).toEqual(expected);
    expect(ended).toBe(true);
    expect(moved).toBeGreaterThan(0);
    expect(costs.every((cost) => cost <= 200 + 2 * Math.ceil(Math.log2(entries.length)) + 1)).toBe(true);
    expect(costs.reduce((a, b) => a + b, 0)).toBeLessThan(800);
  });

  it('through the API, answers an unknown turn with not_found', async () => {
    // Arrange
    const session = await conversation(2, 10);
    const get = eventsApi(session);

    // Act
    const api = createApiHandler({
      services: { ...session, ...NO_WAIT },
      resolveCaller: anyCaller,
    });
    const answer = await api({
      requestContext: { http: { method: 'GET' } },
      rawPath: `/sessions/${session.key.id}/events`,
      rawQueryString: 'turn=nope',
      headers: {},
    } as unknown as LambdaFunctionURLEvent);

    // Assert
    expect(typeof answer === 'string' ? answer : answer.statusCode).toBe(404);
    expect(await get('turn=turn-1').then((events) => events.at(-1)?.event)).toBe('end');
  });
});
