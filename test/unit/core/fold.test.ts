import { describe, expect, it } from 'vitest';
import { CorruptStateError } from '../../../lib/core/errors.ts';
import { foldJournal } from '../../../lib/core/fold.ts';
import { nextAction } from '../../../lib/core/next-action.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const NOW = 10_000;
const call = (id: string, name = 'lookup') => ({ id, name, input: { id } });

describe('the journal fold', () => {
  it('asks for the turn input first when the active turn has not been journaled', () => {
    const view = foldJournal(journal().leg().entries());
    expect(nextAction(view, 't1', NOW)).toEqual({ kind: 'start-turn' });
  });

  it('asks the model after the input and after every tool result', () => {
    const afterInput = foldJournal(journal().leg().add('input', { input: 'hi' }).entries());
    expect(nextAction(afterInput, 't1', NOW).kind).toBe('model');

    const afterTool = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'hi' })
        .add('model', { toolCalls: [call('c1')], stopReason: 'tool_use', usage })
        .add('tool', { callId: 'c1', tool: 'lookup', ok: true, output: 1 })
        .entries(),
    );
    expect(nextAction(afterTool, 't1', NOW).kind).toBe('model');
  });

  it('lists only the tool calls that have no result yet, in call order', () => {
    const view = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'hi' })
        .add('model', { toolCalls: [call('a'), call('b'), call('c')], stopReason: 'tool_use', usage })
        .add('tool', { callId: 'b', tool: 'lookup', ok: true, output: 1 })
        .entries(),
    );
    const action = nextAction(view, 't1', NOW);
    expect(action.kind === 'tools' && action.calls.map((p) => p.call.id)).toEqual(['a', 'c']);
    expect(action.kind === 'tools' && action.calls[0]?.modelSeq).toBe(3);
  });

  it('reconciles a once-only call whose watermark has no result instead of running it again', () => {
    const view = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'refund' })
        .add('model', { toolCalls: [call('r1', 'refund')], stopReason: 'tool_use', usage })
        .add('intent', { callId: 'r1', tool: 'refund', idempotencyKey: 'k' })
        .entries(),
    );
    expect(nextAction(view, 't1', NOW)).toMatchObject({
      kind: 'reconcile',
      call: { call: { id: 'r1' }, intentSeq: 4 },
    });
  });

  it('settles a reconciled call as done, reruns it on notDone and parks it on unknown', () => {
    const base = () =>
      journal()
        .leg()
        .add('input', { input: 'refund' })
        .add('model', { toolCalls: [call('r1', 'refund')], stopReason: 'tool_use', usage })
        .add('intent', { callId: 'r1', tool: 'refund', idempotencyKey: 'k' });
    const done = foldJournal(base().add('reconciled', { callId: 'r1', verdict: 'done', output: 'ok' }).entries());
    expect(nextAction(done, 't1', NOW).kind).toBe('model');
    const notDone = foldJournal(base().add('reconciled', { callId: 'r1', verdict: 'notDone' }).entries());
    const rerun = nextAction(notDone, 't1', NOW);
    expect(rerun.kind === 'tools' && rerun.calls.map((p) => [p.call.id, p.intentSeq])).toEqual([['r1', undefined]]);
    const unknown = foldJournal(base().add('reconciled', { callId: 'r1', verdict: 'unknown' }).entries());
    expect(nextAction(unknown, 't1', NOW)).toEqual({ kind: 'parked', callId: 'r1' });
  });

  it('finishes on a model answer without tool calls, then publishes, then is done', () => {
    const answered = journal()
      .leg()
      .add('input', { input: 'hi' })
      .add('model', { text: 'bye', toolCalls: [], stopReason: 'end_turn', usage });
    expect(nextAction(foldJournal(answered.entries()), 't1', NOW)).toEqual({ kind: 'finish', text: 'bye' });
    answered.add('outcome', { status: 'completed', output: 'bye' });
    expect(nextAction(foldJournal(answered.entries()), 't1', NOW).kind).toBe('publish');
    answered.add('published', {});
    expect(nextAction(foldJournal(answered.entries()), 't1', NOW).kind).toBe('done');
  });

  it('waits for a retry until its time, then asks the model again', () => {
    const view = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'hi' })
        .add('error', { source: 'model', message: 'throttled', attempt: 1, retryAt: NOW + 500 })
        .entries(),
    );
    expect(nextAction(view, 't1', NOW)).toEqual({ kind: 'wait-retry', retryAt: NOW + 500 });
    expect(nextAction(view, 't1', NOW + 501).kind).toBe('model');
    expect(view.failedAttempts).toBe(1);
  });

  it('counts steps, legs and token usage', () => {
    const view = foldJournal(
      journal()
        .leg()
        .add('input', { input: 'hi' })
        .add('model', { toolCalls: [call('a')], stopReason: 'tool_use', usage })
        .epoch(2)
        .leg('continuation')
        .add('tool', { callId: 'a', tool: 'lookup', ok: true, output: 1 })
        .add('model', { text: 'done', toolCalls: [], stopReason: 'end_turn', usage })
        .entries(),
    );
    expect(view).toMatchObject({ legs: 2, steps: 3, usage: { inputTokens: 20, outputTokens: 10 }, legEpoch: 2 });
  });

  it('rejects an entry written by an epoch older than the leg marker before it', () => {
    const entries = journal().epoch(2).leg().epoch(1).add('input', { input: 'late write of a stale owner' }).entries();
    expect(() => foldJournal(entries)).toThrow(CorruptStateError);
  });

  it('fences stale owners from an input that carries its leg’s marker, and counts that leg', () => {
    const marker = {
      owner: 'owner-2',
      reason: 'first' as const,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    };
    const marked = journal().leg().add('outcome', { status: 'completed' }, 't1').epoch(2);
    marked.add('input', { input: 'next turn', leg: marker }, 't2');
    expect(foldJournal(marked.entries())).toMatchObject({ legEpoch: 2, legs: 2, turnId: 't2' });
    const stale = marked.epoch(1).add('published', {}, 't1').entries();
    expect(() => foldJournal(stale)).toThrow(/epoch 1 after the leg marker of epoch 2/);
    // The same input without the marker fences nothing: the stale write folds.
    const unmarked = journal().leg().add('outcome', { status: 'completed' }, 't1').epoch(2);
    unmarked.add('input', { input: 'next turn' }, 't2').epoch(1).add('published', {}, 't1');
    expect(foldJournal(unmarked.entries()).legEpoch).toBe(1);
  });

  it('rejects a journal with a gap', () => {
    const entries = journal().leg().add('input', { input: 'x' }).entries();
    expect(() => foldJournal([entries[0]!, { ...entries[1]!, seq: 3 }])).toThrow(/gap/);
  });

  it('gives the same next action when folded in one pass or from a partial fold', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'hi' })
      .add('model', { toolCalls: [call('a'), call('b')], stopReason: 'tool_use', usage })
      .add('tool', { callId: 'a', tool: 'lookup', ok: true, output: 1 })
      .entries();
    const whole = foldJournal(entries);
    const resumed = foldJournal(entries.slice(2), foldJournal(entries.slice(0, 2)));
    expect(resumed).toEqual(whole);
  });
});
