import { describe, expect, it } from 'vitest';
import type { JournalEntry } from '../../../lib/core/journal.ts';
import { demoBatch } from '../../../lib/demo/demo-batch.ts';
import { ProgressTracker } from '../../../lib/demo/progress-tracker.ts';
import type { SessionRecord, SessionStore } from '../../../lib/ports/session-store.ts';

const entry = (seq: number, kind: JournalEntry['kind'], data: unknown): JournalEntry =>
  ({ seq, kind, epoch: 1, writeId: `w${seq}`, at: seq, data }) as JournalEntry;

/** Just enough of a store to feed the tracker one session's record and journal. */
function storeWith(record: Partial<SessionRecord>, journal: JournalEntry[]): SessionStore {
  return {
    getSession: async () => ({ state: 'running', updatedAt: 5_000, ...record }) as SessionRecord,
    readJournal: async (_key: unknown, after = 0) => journal.filter((e) => e.seq > after),
  } as unknown as SessionStore;
}

describe('ProgressTracker', () => {
  it('derives legs, recoveries, steps and retries from the journal, reading only past its cursor', async () => {
    // Arrange
    const journal = [
      entry(1, 'leg', { owner: 'a', reason: 'first', traceparent: 't' }),
      entry(2, 'input', { input: {} }),
      entry(3, 'model', {
        toolCalls: [{ id: 'c', name: 'lookupOrder', input: {} }],
        stopReason: 'tool_use',
        usage: { inputTokens: 1, outputTokens: 1 },
      }),
      entry(4, 'error', { source: 'tool:lookupOrder', message: '503', attempt: 1 }),
      entry(5, 'leg', { owner: 'b', reason: 'recovery', traceparent: 't' }),
      entry(6, 'tool', { callId: 'c', tool: 'lookupOrder', ok: true, output: {} }),
    ];
    const tracker = new ProgressTracker(storeWith({ state: 'running' }, journal));
    const [ticket] = demoBatch(1, 'demo-t');
    tracker.add(ticket!, 0);

    // Act
    const changed = await tracker.poll();
    const unchanged = await tracker.poll();

    // Assert
    expect(changed).toHaveLength(1);
    expect(unchanged).toHaveLength(0);
    expect(tracker.tickets[0]).toMatchObject({
      legs: 2,
      recoveries: 1,
      steps: 2,
      retries: 1,
      cursor: 6,
      last: 'lookupOrder ok',
    });
  });

  it('marks a ticket finished when its session reaches a terminal state', async () => {
    const tracker = new ProgressTracker(storeWith({ state: 'completed', updatedAt: 9_000 }, []));
    tracker.add(demoBatch(1, 'demo-t')[0]!, 0);
    await tracker.poll();
    expect(tracker.tickets[0]?.finishedAt).toBe(9_000);
  });
});
