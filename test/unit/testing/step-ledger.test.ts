import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { idempotencyKey, type SessionKey } from '../../../lib/core/ids.ts';
import { StepLedger } from '../../../lib/testing/step-ledger.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const key: SessionKey = { tenant: 'default', agent: 'desk', id: 's1' };
const tool = (effect: 'pure' | 'once') =>
  defineTool({ name: 'refund', description: 'Refunds.', input: z.object({}), effect, run: async () => 'ok' });

/** A store holding a model entry (seq 2) that asked for call c1, then `rest`. */
async function storeWith(rest: (j: ReturnType<typeof journal>) => void) {
  const store = new MemorySessionStore();
  const j = journal()
    .leg()
    .add('model', { toolCalls: [{ id: 'c1', name: 'refund', input: {} }], stopReason: 'tool_use', usage });
  rest(j);
  for (const entry of j.entries()) await store.append(key, entry);
  return store;
}

describe('StepLedger: what a harness action checks after a crash', () => {
  it('reports a call that runs again once its result is journaled', async () => {
    const store = await storeWith((j) => j.add('tool', { callId: 'c1', tool: 'refund', ok: true, output: 'ok' }));
    const ledger = new StepLedger(store);

    await ledger.record(key, tool('pure'), idempotencyKey(key, 2, 'c1'));

    expect(ledger.take()).toEqual([
      expect.objectContaining({
        callId: 'c1',
        detail: 'tool refund (call c1) ran again after its result was journaled at seq 3',
      }),
    ]);
  });

  it('reports a once-only call run a second time with no verdict that the first had not happened', async () => {
    const store = await storeWith((j) =>
      j.add('intent', { callId: 'c1', tool: 'refund', idempotencyKey: idempotencyKey(key, 2, 'c1') }),
    );
    const ledger = new StepLedger(store);

    await ledger.record(key, tool('once'), idempotencyKey(key, 2, 'c1'));
    const first = ledger.take();
    await ledger.record(key, tool('once'), idempotencyKey(key, 2, 'c1'));

    expect(first).toEqual([]);
    expect(ledger.take()).toMatchObject([
      { detail: 'once-only tool refund (call c1) ran 2 times with 0 verdict(s) that it had not happened' },
    ]);
  });

  it('lets a once-only call run again after a notDone verdict, and a pure one whose result never landed', async () => {
    const store = await storeWith((j) =>
      j
        .add('intent', { callId: 'c1', tool: 'refund', idempotencyKey: idempotencyKey(key, 2, 'c1') })
        .add('reconciled', { callId: 'c1', verdict: 'notDone' }),
    );
    const ledger = new StepLedger(store);

    await ledger.record(key, tool('once'), idempotencyKey(key, 2, 'c1'));
    await ledger.record(key, tool('once'), idempotencyKey(key, 2, 'c1'));
    await ledger.record(key, tool('pure'), idempotencyKey(key, 2, 'c2'));
    await ledger.record(key, tool('pure'), idempotencyKey(key, 2, 'c2'));

    expect(ledger.take()).toEqual([]);
    expect(ledger.runsOf(idempotencyKey(key, 2, 'c2'))).toBe(2);
  });
});
