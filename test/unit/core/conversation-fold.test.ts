import { describe, expect, it } from 'vitest';
import { foldJournal } from '../../../lib/core/fold.ts';
import { triageInbox } from '../../../lib/core/inbox.ts';
import { decideNext } from '../../../lib/core/next-action.ts';
import { restoreView, takeSnapshot } from '../../../lib/core/snapshot.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const facts = { activeTurnId: 't1', cancelRequested: false, maxSteps: 10, now: 0 };
const pay = { id: 'p1', name: 'pay', input: { amount: 50 } };

describe('the fold of a conversation', () => {
  it('waits on a requested approval and settles it with the decision (entries that name the call id alone)', () => {
    const requested = journal()
      .leg()
      .add('input', { input: 'pay' })
      .add('model', { toolCalls: [pay], stopReason: 'tool_use', usage })
      .add('approval', { callId: 'p1', tool: 'pay', input: pay.input });
    const waiting = foldJournal(requested.entries());
    expect(decideNext(waiting, facts)).toEqual({ kind: 'await-approval', callIds: ['p1'] });

    requested.add('decision', { callId: 'p1', approved: false, reason: 'no', id: 'decision:p1' });
    const decided = foldJournal(requested.entries());
    // Kept under the model entry and the call: a later call reusing the id is not decided by it.
    expect(decided.decisions).toEqual({ '3:p1': { approved: false, reason: 'no' } });
    expect(decided.deliveredIds).toEqual(['decision:p1']);
    expect(decideNext(decided, facts)).toMatchObject({ kind: 'tools' });
  });

  it('unparks a parked call on an operator’s verdict, and counts steps per turn', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'pay' })
      .add('model', { toolCalls: [pay], stopReason: 'tool_use', usage })
      .add('intent', { callId: 'p1', tool: 'pay', idempotencyKey: 'k' })
      .add('reconciled', { callId: 'p1', verdict: 'unknown' });
    const parked = foldJournal(entries.entries());
    expect(decideNext(parked, facts)).toEqual({ kind: 'parked', callId: 'p1' });
    expect(parked.parked).toEqual({ seq: 5, modelSeq: 3, callId: 'p1', tool: 'pay' });
    entries.add('reconciled', { callId: 'p1', verdict: 'done', output: 1, id: 'resolve:p1' });
    const resolved = foldJournal(entries.entries());
    expect(resolved.parked).toBeUndefined();
    expect(resolved.turnSteps).toBe(2);
    entries.add('model', { text: 'ok', toolCalls: [], stopReason: 'end_turn', usage });
    entries.add('input', { input: 'again' }, 't2');
    expect(foldJournal(entries.entries())).toMatchObject({ turnId: 't2', turnSteps: 0, steps: 3, deliveredIds: [] });
  });

  it('applies a decision only to the call it names: model entry, call id, tool and input digest', () => {
    const named = { modelSeq: 3, callId: 'p1', tool: 'pay', digest: 'd'.repeat(64) };
    const requested = journal()
      .leg()
      .add('input', { input: 'pay' })
      .add('model', { toolCalls: [pay], stopReason: 'tool_use', usage })
      .add('approval', { ...named, input: pay.input });
    requested.add('decision', { ...named, modelSeq: 7, approved: true, id: 'x1' });
    requested.add('decision', { ...named, digest: 'e'.repeat(64), approved: true, id: 'x2' });
    requested.add('decision', { ...named, tool: 'refund', approved: true, id: 'x3' });
    const undecided = foldJournal(requested.entries());
    expect(undecided.decisions).toEqual({});
    expect(undecided.awaitingApproval).toEqual([{ seq: 4, input: pay.input, ...named }]);

    requested.add('decision', { ...named, approved: true, id: 'x4' });
    const decided = foldJournal(requested.entries());
    expect(decided.awaitingApproval).toEqual([]);
    expect(decided.decisions).toEqual({ '3:p1': { approved: true, digest: named.digest } });
  });

  it('reopens a finished answer when a message lands after it', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'hi' })
      .add('model', { text: 'done', toolCalls: [], stopReason: 'end_turn', usage });
    expect(decideNext(foldJournal(entries.entries()), facts)).toEqual({ kind: 'finish', text: 'done' });
    entries.add('message', { text: 'also this', id: 'm1' });
    expect(decideNext(foldJournal(entries.entries()), facts)).toEqual({ kind: 'model' });
  });

  it('keeps its conversation fields through a snapshot', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'pay' })
      .add('model', { toolCalls: [pay], stopReason: 'tool_use', usage })
      .add('approval', { callId: 'p1', tool: 'pay', input: pay.input })
      .entries();
    const view = foldJournal(entries);
    expect(restoreView(takeSnapshot(view, entries), entries)).toEqual({ view, fromSnapshot: true });
  });
});

describe('the inbox triage', () => {
  it('delivers messages to a running turn, decisions to awaited calls, and drops what answers nothing', () => {
    const running = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'pay' })
        .add('model', { toolCalls: [pay], stopReason: 'tool_use', usage })
        .add('approval', { callId: 'p1', tool: 'pay', input: pay.input })
        .add('message', { text: 'old', id: 'm0' })
        .entries(),
    );
    const items = [
      { kind: 'message', id: 'm0', text: 'old' },
      { kind: 'message', id: 'm1', text: 'new' },
      { kind: 'decision', id: 'd1', callId: 'p1', modelSeq: 3, tool: 'pay', approved: true },
      { kind: 'decision', id: 'd2', callId: 'other', modelSeq: 3, tool: 'pay', approved: true },
      // An item of an older client names the call id alone: it names no call, and decides nothing.
      { kind: 'decision', id: 'd3', callId: 'p1', approved: true },
      { kind: 'decision', id: 'd4', callId: 'p1', modelSeq: 9, tool: 'pay', approved: true },
      { kind: 'resolve', id: 'r1', callId: 'p1', done: true },
    ] as const;
    const triage = triageInbox(running, items);
    expect(triage.deliver.map((i) => i.id)).toEqual(['m1', 'd1']);
    expect(triage.discard.map((i) => i.id)).toEqual(['m0', 'd2', 'd3', 'd4', 'r1']);
  });

  it('keeps a message for the next turn when the turn already has its outcome', () => {
    const finished = foldJournal(
      journal().leg().add('input', { input: 'x' }).add('outcome', { status: 'completed' }).entries(),
    );
    expect(triageInbox(finished, [{ kind: 'message', id: 'm', text: 'later' }])).toEqual({ deliver: [], discard: [] });
  });
});
