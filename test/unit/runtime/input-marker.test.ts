import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import type { MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { type JournalEntry, legMarkerOf } from '../../../lib/core/journal.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/**
 * A leg that starts a turn writes no `leg` entry: its marker rides on the turn's input, its first
 * write. These tests show that the input fences a stale owner exactly as a marker did.
 */

const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: 'lookup-agent',
  id: deriveSessionId('default', 'lookup-agent', ticketId),
});

const markerEpochs = (journal: readonly JournalEntry[]) =>
  journal.flatMap((e) => (legMarkerOf(e) ? [[e.kind, e.epoch]] : []));

/** Starts the ticket's first leg with its appends held until `thaw`, and waits (virtual time) until its lease expired. */
async function staleFirstLeg(ticketId: string) {
  const clock = new ManualClock();
  const test = makeTestDeps([lookupAgent({ modelLatencyMs: 50, clock })], { clock });
  const { deps, store } = test;
  await acceptTicket(ticketBody('lookup-agent', ticketId, { ids: ['a', 'b'] }), undefined, deps);
  const key = keyOf(ticketId);
  const [firstKick] = (deps.workQueue as MemoryWorkQueue).receive();
  let thaw: () => void = () => {};
  const thawed = new Promise<void>((resolve) => (thaw = resolve));
  let frozen = false;
  // Frozen as under SIGSTOP (its heartbeat too) right before its first journal write: the input
  // that carries its marker.
  store.beforeWrite = async (operation) => {
    if (operation === 'append') frozen = true;
    if (frozen) await thawed;
  };
  const stale = runKick(firstKick!.body, invocation(60_000, clock), deps);
  const expired = async () => {
    const until = (await store.getSession(key))?.until;
    return frozen && until !== undefined && until < clock.now();
  };
  while (!(await expired())) await clock.flush();
  store.beforeWrite = undefined;
  return { ...test, key, stale, thaw, clock };
}

describe('the leg marker on a turn’s input', () => {
  it('fences a stale owner whose input lands after the new owner’s: it stops and writes nothing', async () => {
    // Arrange: the first owner froze before its input; a recovery takes the turn over.
    const { deps, store, results, key, stale, thaw, clock } = await staleFirstLeg('M-1');

    // Act: the recovery starts the turn (its marker on the input) and finishes it; then the stale owner wakes.
    const recovered = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    thaw();

    // Assert
    expect(recovered).toBe('finished');
    expect(await stale).toBe('lease-lost');
    const journal = await store.readJournal(key);
    expect(journal.every((e) => e.epoch === 2)).toBe(true);
    expect(journal[0]).toMatchObject({ kind: 'input', epoch: 2, data: { leg: { reason: 'recovery' } } });
    expect(journal.filter((e) => e.kind === 'leg')).toEqual([]);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'found 2' })]);
    expect(await drain(deps)).toEqual([]);
  });

  it('marks on its own, and journals the input once, when a stale owner’s input won the seq', async () => {
    // Arrange: the first owner froze before its input; the recovery's input will meet it at seq 1.
    const { deps, store, results, key, clock } = await staleFirstLeg('M-2');
    const staleInput = {
      seq: 1,
      kind: 'input',
      epoch: 1,
      writeId: 'stale-input',
      at: clock.now(),
      turnId: 'M-2',
      data: {
        input: { ids: ['a', 'b'] },
        leg: {
          owner: 'stale',
          reason: 'first',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        },
      },
    } as const satisfies JournalEntry;
    let raced = false;
    store.beforeWrite = async (operation) => {
      if (operation !== 'append' || raced) return;
      raced = true;
      await store.append(key, staleInput);
    };

    // Act
    const recovered = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);

    // Assert: the stale input stands; the recovery's marker follows it alone, then the steps.
    expect(recovered).toBe('finished');
    const journal = await store.readJournal(key);
    expect(markerEpochs(journal)).toEqual([
      ['input', 1],
      ['leg', 2],
    ]);
    expect(journal.filter((e) => e.kind === 'input')).toHaveLength(1);
    expect(journal.slice(1).every((e) => e.epoch === 2)).toBe(true);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'found 2' })]);
  });
});
