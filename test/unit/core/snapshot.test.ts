import { describe, expect, it } from 'vitest';
import { foldJournal } from '../../../lib/core/fold.ts';
import { FOLD_VERSION, foldFromSnapshot, foldWhole, restoreView, takeSnapshot } from '../../../lib/core/snapshot.ts';
import { TaskTool } from '../../../lib/core/tasks.ts';
import { journal, usage } from '../../fixtures/journal.ts';

const entries = journal()
  .leg()
  .add('input', { input: 'hi' })
  .add('model', { toolCalls: [{ id: 'a', name: 'lookup', input: {} }], stopReason: 'tool_use', usage })
  .add('tool', { callId: 'a', tool: 'lookup', ok: true, output: 1 })
  .add('model', { toolCalls: [{ id: 'b', name: 'lookup', input: {} }], stopReason: 'tool_use', usage })
  .entries();
const snapshotAt = (n: number) => takeSnapshot(foldJournal(entries.slice(0, n)), entries)!;

describe('snapshots of derived state', () => {
  it('resume from a trusted snapshot to the same view as a full fold', () => {
    const restored = restoreView(snapshotAt(3), entries);
    expect(restored.fromSnapshot).toBe(true);
    expect(restored.view).toEqual(foldJournal(entries));
  });

  it('are ignored when written by an older fold version', () => {
    const old = { ...snapshotAt(3), foldVersion: FOLD_VERSION - 1, view: { garbage: true } };
    const restored = restoreView(old, entries);
    expect(restored.fromSnapshot).toBe(false);
    expect(restored.view).toEqual(foldJournal(entries));
  });

  it('are ignored when the journal entry they were folded up to is not the one there now', () => {
    const foreign = { ...snapshotAt(3), entryHash: snapshotAt(2).entryHash };
    expect(restoreView(foreign, entries).fromSnapshot).toBe(false);
    expect(restoreView({ ...snapshotAt(3), seq: 99 }, entries).fromSnapshot).toBe(false);
  });

  it('are ignored when their stored view fails validation', () => {
    const tampered = { ...snapshotAt(3), view: { ...(snapshotAt(3).view as object), steps: -1 } };
    const restored = restoreView(tampered, entries);
    expect(restored.fromSnapshot).toBe(false);
    expect(restored.view.steps).toBe(3);
  });

  it('hold derived state only, never the transcript', () => {
    expect(JSON.stringify(snapshotAt(5).view)).not.toContain('"hi"');
  });

  describe('read from their own entry on (status, tasks)', () => {
    const started = journal()
      .leg()
      .add('input', { input: 'go' })
      .add('model', { toolCalls: [{ id: 's', name: TaskTool.start, input: {} }], stopReason: 'tool_use', usage })
      .add('tool', {
        callId: 's',
        tool: TaskTool.start,
        ok: true,
        output: { taskId: 'c1', agent: 'worker', description: 'd', turnId: 'task-c1', status: 'running' },
      })
      .add('model', { toolCalls: [{ id: 'b', name: 'lookup', input: {} }], stopReason: 'tool_use', usage })
      .add('tool', { callId: 'b', tool: 'lookup', ok: true, output: 2 })
      .entries();
    const at4 = takeSnapshot(foldJournal(started.slice(0, 4)), started)!;

    it('give the fold and the task ledger of the whole journal', () => {
      expect(foldFromSnapshot(at4, started.slice(3))).toEqual(foldWhole(started));
      expect(foldWhole(started).ledger.tasks.map((t) => t.taskId)).toEqual(['c1']);
    });

    it('are not trusted without their ledger, from another entry, or with a ledger of another version', () => {
      const { ledger: _none, ...bare } = at4;
      expect(foldFromSnapshot(bare, started.slice(3))).toBeUndefined();
      expect(foldFromSnapshot(at4, started.slice(2))).toBeUndefined();
      expect(
        foldFromSnapshot({ ...at4, ledger: { ...(at4.ledger as object), version: 0 } }, started.slice(3)),
      ).toBeUndefined();
      expect(foldFromSnapshot(undefined, started)).toBeUndefined();
    });
  });
});
