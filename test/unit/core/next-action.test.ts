import { describe, expect, it } from 'vitest';
import { foldJournal } from '../../../lib/core/fold.ts';
import { decideNext, isCrashLoop } from '../../../lib/core/next-action.ts';
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
});
