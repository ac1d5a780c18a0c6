import { describe, expect, it } from 'vitest';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { childKey, type LedgerTask } from '../../../lib/core/tasks.ts';
import { readTaskLines, tasksWithEndedTurns } from '../../../lib/runtime/tasks/read-tasks.ts';

const parent = { tenant: 't1', agent: 'dispatcher', id: 'parent' };
const task = (taskId: string): LedgerTask => ({
  taskId,
  agent: 'long-haul',
  description: taskId,
  turnId: `turn-${taskId}`,
  releasedAsStraggler: false,
});
const turn = (t: LedgerTask) => ({ turnId: t.turnId, ticketId: t.turnId, input: {}, inputHash: 'h', createdAt: 1 });

/** A memory store that counts the requests a look sends, by method (a batch read is one request). */
function countingStore() {
  const store = new MemorySessionStore();
  const reads = { getTurns: 0, getSessions: 0 };
  const counted = {
    getTurns: (...args: Parameters<MemorySessionStore['getTurns']>) => {
      reads.getTurns++;
      return store.getTurns(...args);
    },
    getSessions: (...args: Parameters<MemorySessionStore['getSessions']>) => {
      reads.getSessions++;
      return store.getSessions(...args);
    },
  };
  return { store, counted, reads };
}

describe('the turn-only look of a release waiting for its tasks', () => {
  it('returns the tasks whose turn has an outcome or is gone, in one batch read of their turns and no record', async () => {
    // Arrange: one task still on an open turn, one whose turn ended cancelled, one whose turn is gone.
    const { store, counted, reads } = countingStore();
    const [open, ended, gone] = [task('open'), task('ended'), task('gone')] as [LedgerTask, LedgerTask, LedgerTask];
    await store.putTurn(childKey(parent, open), turn(open));
    await store.putTurn(childKey(parent, ended), turn(ended));
    await store.setTurnOutcome(childKey(parent, ended), ended.turnId, { status: 'cancelled', at: 5 });

    // Act
    const found = await tasksWithEndedTurns(counted, parent, [open, ended, gone]);

    // Assert
    expect(found.map((t) => t.taskId)).toEqual(['ended', 'gone']);
    expect(reads).toEqual({ getTurns: 1, getSessions: 0 });
  });

  it('leaves open a task a full read reports finished without its turn’s outcome (its record is gone)', async () => {
    // Arrange: the turn is open, the child's record does not exist: the full read says lost.
    const { store, counted } = countingStore();
    const orphan = task('orphan');
    await store.putTurn(childKey(parent, orphan), turn(orphan));

    // Act
    const [line] = await readTaskLines(counted, parent, [orphan]);
    const ended = await tasksWithEndedTurns(counted, parent, [orphan]);

    // Assert: which is why the release still reads every task in full each second.
    expect(line?.status).toBe('lost');
    expect(ended).toEqual([]);
  });
});
