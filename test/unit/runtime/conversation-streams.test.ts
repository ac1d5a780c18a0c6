import { describe, expect, it } from 'vitest';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { journalSk } from '../../../lib/adapters/session-item-codec.ts';
import { BatonClient, type SessionEvent } from '../../../lib/client/baton-client.ts';
import { GoneError, NotFoundError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
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

async function collect(stream: AsyncGenerator<SessionEvent>): Promise<SessionEvent[]> {
  const events: SessionEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

async function twoTurns(ticketId: string) {
  const test = makeTestDeps([supportDesk({ workMs: 5 })]);
  const key = keyOf(ticketId);
  const client = clientOf(test.deps);
  await acceptTicket(ticketBody(AGENT, ticketId, { text: 'hello' }), undefined, test.deps);
  await drain(test.deps);
  await client.send(key.id, { text: 'work 2' }, { id: 'second' });
  await drain(test.deps);
  return { ...test, key, client };
}

describe('per-turn streams', () => {
  it('replays one turn from its input (which carries its leg marker) to its outcome, each entry once, and resumes from a cursor', async () => {
    // Arrange
    const { client, store, key } = await twoTurns('E1');
    const journal = await store.readJournal(key);
    const expected = journal.filter((e) => e.turnId === 'second').map((e) => e.seq);

    // Act
    const whole = await collect(client.events(key.id, { turnId: 'second', follow: true }));
    const resumed = await collect(client.events(key.id, { turnId: 'second', after: whole[2]!.cursor }));

    // Assert
    expect(whole.map((e) => e.seq)).toEqual(expected);
    expect(whole[0]).toMatchObject({ kind: 'input', data: { leg: { reason: 'wake' } } });
    expect(whole.at(-1)?.kind).toBe('outcome');
    // A followed turn the session has moved past ends with its outcome too (the record's publishedTurnId is the later turn's).
    const first = await collect(client.events(key.id, { turnId: 'E1', follow: true }));
    expect(first.at(-1)?.kind).toBe('outcome');
    expect(resumed.map((e) => e.seq)).toEqual(expected.slice(3));
  });

  it('answers an unknown session or turn with not-found, and an expired session or cursor with gone', async () => {
    // Arrange
    const { client, store, key, clock } = await twoTurns('E2');
    for (const seq of [1, 2, 3]) store.putRawItem(key, journalSk(seq), undefined);

    // Act
    const unknownSession = await collect(client.events('nosuchsession')).catch((e: unknown) => e);
    const unknownTurn = await collect(client.events(key.id, { turnId: 'nope' })).catch((e: unknown) => e);
    const expiredCursor = await collect(client.events(key.id, { after: 1 })).catch((e: unknown) => e);
    const fromOldest = await collect(client.events(key.id));
    clock.advance(2 * 24 * 3_600_000);
    const expiredSession = await collect(client.events(key.id)).catch((e: unknown) => e);

    // Assert
    expect(unknownSession).toBeInstanceOf(NotFoundError);
    expect(unknownSession).toMatchObject({ message: 'session nosuchsession not found' });
    expect(unknownTurn).toMatchObject({ message: `session ${key.id} has no turn nope` });
    expect(unknownTurn).toBeInstanceOf(NotFoundError);
    expect(expiredCursor).toBeInstanceOf(GoneError);
    expect(expiredCursor).toMatchObject({ message: expect.stringContaining('its journal now starts at seq 4') });
    expect(fromOldest[0]?.seq).toBe(4);
    expect(expiredSession).toBeInstanceOf(GoneError);
    expect(expiredSession).toMatchObject({ message: expect.stringContaining('past its retention') });
  });
});
