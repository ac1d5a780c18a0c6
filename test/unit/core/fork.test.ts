import { describe, expect, it } from 'vitest';
import { onceOnlyCalls } from '../../../lib/core/fork.ts';
import { forkEffectOf, forkStateOf, markUsed } from '../../../lib/core/fork-state.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const refundCall = (id: string) => ({ id, name: 'refund', input: { orderId: 'O-1' } });

describe('the ledger of an original’s once-only calls', () => {
  it('lists each watermark with the result that closed it, drops a call reconciled as not done, and keeps one whose result is unknown', async () => {
    // Arrange
    const entries = journal()
      .add('model', { toolCalls: [refundCall('a'), refundCall('b'), refundCall('c')], stopReason: 'tool_use', usage })
      .add('intent', { callId: 'a', tool: 'refund', idempotencyKey: 'k-a', digest: 'd1' })
      .add('tool', { callId: 'a', tool: 'refund', ok: true, output: { refundId: 'R-1' } })
      .add('intent', { callId: 'b', tool: 'refund', idempotencyKey: 'k-b', digest: 'd1' })
      .add('reconciled', { callId: 'b', verdict: 'notDone' })
      .add('intent', { callId: 'c', tool: 'refund', idempotencyKey: 'k-c', digest: 'd2' })
      .entries();

    // Act
    const ledger = onceOnlyCalls(entries);

    // Assert
    expect(ledger).toEqual([
      {
        seq: 2,
        tool: 'refund',
        idempotencyKey: 'k-a',
        digest: 'd1',
        result: { ok: true, output: { refundId: 'R-1' } },
      },
      { seq: 6, tool: 'refund', idempotencyKey: 'k-c', digest: 'd2' },
    ]);
  });
});

describe('what a fork does with a once-only call', () => {
  const fork = forkStateOf({
    from: { agent: 'a', id: 'original' },
    cursor: 3,
    effects: 'reuse',
    ledger: [
      { seq: 5, tool: 'refund', idempotencyKey: 'k1', digest: 'd1', result: { ok: true } },
      { seq: 9, tool: 'refund', idempotencyKey: 'k2', digest: 'd1', result: { ok: true } },
    ],
  });
  const call = (modelSeq: number, callId: string, digest = 'd1') => ({ modelSeq, callId, tool: 'refund', digest });

  it('matches the first unanswered original call with the same tool and digest, and the same one again for the call that took it', () => {
    // Arrange
    const used = markUsed(fork, 5, 10, 'x');

    // Act / Assert
    expect(forkEffectOf(fork, call(10, 'x'))).toMatchObject({ kind: 'repeat', original: { seq: 5 } });
    expect(forkEffectOf(used, call(10, 'x'))).toMatchObject({ kind: 'repeat', original: { seq: 5 } });
    expect(forkEffectOf(used, call(12, 'y'))).toMatchObject({ kind: 'repeat', original: { seq: 9 } });
    expect(forkEffectOf(markUsed(used, 9, 12, 'y'), call(14, 'z'))).toEqual({ kind: 'new' });
    expect(forkEffectOf(fork, call(10, 'x', 'other input'))).toEqual({ kind: 'new' });
    expect(forkEffectOf({ ...fork, effects: 'rerun' }, call(10, 'x'))).toEqual({ kind: 'run' });
    expect(forkEffectOf(undefined, call(10, 'x'))).toEqual({ kind: 'run' });
  });
});
