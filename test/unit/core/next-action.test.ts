import { describe, expect, it } from 'vitest';
import { foldJournal } from '../../../lib/core/fold.ts';
import { decideNext, isCrashLoop, nextWakeAt, recoveriesWithoutProgress } from '../../../lib/core/next-action.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const NOW = 10_000;
const facts = { activeTurnId: 't1', cancelRequested: false, maxSteps: 2, now: NOW };

describe("a leg's next action", () => {
  it('ends an unfinished turn as cancelled before anything else, and only publishes a finished one', () => {
    const started = foldJournal(journal().leg().entries());
    expect(decideNext(started, { ...facts, cancelRequested: true })).toEqual({ kind: 'cancel' });
    const finished = foldJournal(
      journal().leg().add('input', { input: 'hi' }).add('outcome', { status: 'completed', output: 'x' }).entries(),
    );
    expect(decideNext(finished, { ...facts, cancelRequested: true })).toEqual({ kind: 'publish' });
  });

  it('fails the turn at the step cap instead of calling the model again', () => {
    const entries = journal().leg().add('input', { input: 'hi' });
    expect(decideNext(foldJournal(entries.entries()), facts)).toEqual({ kind: 'model' });
    entries
      .add('model', { toolCalls: [{ id: 'c1', name: 'lookup', input: {} }], stopReason: 'tool_use', usage })
      .add('tool', { callId: 'c1', tool: 'lookup', ok: true, output: 1 });
    expect(decideNext(foldJournal(entries.entries()), facts)).toEqual({ kind: 'step-limit', maxSteps: 2 });
  });

  it('counts a crash loop only for a recovery of an unfinished turn past the cap', () => {
    const open = foldJournal(journal().leg().add('input', { input: 'hi' }).entries());
    const done = foldJournal(
      journal().leg().add('input', { input: 'hi' }).add('outcome', { status: 'completed' }).entries(),
    );
    expect(isCrashLoop(open, true, 4, 3)).toBe(true);
    expect(isCrashLoop(open, true, 3, 3)).toBe(false);
    expect(isCrashLoop(open, false, 4, 3)).toBe(false);
    expect(isCrashLoop(done, true, 4, 3)).toBe(false);
  });

  it('caps the counted recoveries by the legs since the journal last progressed', () => {
    // Epoch 2 journaled the input and died before a renewal could clear the count; 3 and 4 only wrote markers.
    const entries = journal()
      .epoch(2)
      .leg('recovery')
      .add('input', { input: 'hi' })
      .epoch(3)
      .leg('recovery')
      .epoch(4)
      .leg('recovery')
      .entries();
    expect(recoveriesWithoutProgress(4, 4, entries)).toBe(2);
    expect(recoveriesWithoutProgress(1, 4, entries)).toBe(1);
    expect(recoveriesWithoutProgress(4, 4, journal().epoch(4).leg('recovery').entries())).toBe(4);
  });

  it('parks on a durable timer until it is due, then journals its call’s result', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'remind me' })
      .add('model', {
        toolCalls: [
          { id: 'w1', name: 'wait', input: { seconds: 5 } },
          { id: 'l1', name: 'lookup', input: {} },
        ],
        stopReason: 'tool_use',
        usage,
      })
      .add('timer', { callId: 'w1', wakeAt: NOW + 5_000 });
    const parked = foldJournal(entries.entries());
    // The other call of the same model step runs; the timer's call waits.
    expect(decideNext(parked, facts)).toMatchObject({ kind: 'tools', calls: [{ call: { id: 'l1' } }] });
    entries.add('tool', { callId: 'l1', tool: 'lookup', ok: true, output: 1 });
    const waiting = foldJournal(entries.entries());
    expect(decideNext(waiting, facts)).toEqual({ kind: 'wait-timer', wakeAt: NOW + 5_000 });
    expect(nextWakeAt(waiting)).toBe(NOW + 5_000);
    expect(decideNext(waiting, { ...facts, now: NOW + 5_000 })).toMatchObject({
      kind: 'wake',
      call: { call: { id: 'w1' } },
    });
    expect(decideNext(waiting, { ...facts, cancelRequested: true })).toEqual({ kind: 'cancel' });
  });

  it('denies an undecided approval by default once its timeout passes, and not before', () => {
    const entries = journal()
      .leg()
      .add('input', { input: 'pay' })
      .add('model', { toolCalls: [{ id: 'p1', name: 'pay', input: {} }], stopReason: 'tool_use', usage })
      .add('approval', { callId: 'p1', tool: 'pay', input: {}, expiresAt: NOW + 60_000 });
    const waiting = foldJournal(entries.entries());
    expect(decideNext(waiting, facts)).toEqual({ kind: 'await-approval', callIds: ['p1'], wakeAt: NOW + 60_000 });
    expect(decideNext(waiting, { ...facts, now: NOW + 60_000 })).toEqual({ kind: 'approval-timeout', callId: 'p1' });
    entries.add('decision', { callId: 'p1', approved: false, reason: 'approval timed out' });
    const denied = foldJournal(entries.entries());
    expect(denied.decisions['3:p1']).toEqual({ approved: false, reason: 'approval timed out', byDefault: true });
    expect(denied.awaitingApproval).toEqual([]);
    expect(nextWakeAt(denied)).toBeUndefined();
  });
});
