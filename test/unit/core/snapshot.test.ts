import { describe, expect, it } from 'vitest';
import { foldJournal } from '../../../lib/core/fold.ts';
import { FOLD_VERSION, restoreView, takeSnapshot } from '../../../lib/core/snapshot.ts';
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
});
