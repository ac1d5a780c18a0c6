import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { READER_SNAPSHOT_AFTER_ENTRIES } from '../../../lib/client/baton-client.ts';
import type { SessionKey } from '../../../lib/core/ids.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';
import { TaskTool } from '../../../lib/core/tasks.ts';
import { journal, usage } from '../../fixtures/journal.ts';
import { meteredClient } from '../../fixtures/metered-store.ts';

/**
 * A parent session waiting for an approval after `steps` tool rounds, with two background tasks
 * (one finished, one running): every part of its status comes from the journal.
 */
async function longSession(steps: number) {
  const clock = new ManualClock();
  const store = new MemorySessionStore({ clock });
  const key: SessionKey = { tenant: 'default', agent: 'parent', id: `parent-${steps}` };
  const now = clock.now();
  await store.createSession({ key, ticketId: 't1', activeTurnId: 't1', traceId: 'a'.repeat(32), now, sweepAt: now });
  const acquired = await store.acquire(key, { owner: 'o1', until: now + 60_000, now, expectEpoch: 0, recovery: false });
  if (!acquired.ok) throw new Error('acquire refused');
  const j = journal()
    .leg()
    .add('input', { input: { text: 'go' } });
  for (const [taskId, done] of [
    ['task-a', true],
    ['task-b', false],
  ] as const) {
    const child: SessionKey = { tenant: 'default', agent: 'worker', id: taskId };
    await store.createSession({
      key: child,
      ticketId: `task-${taskId}`,
      activeTurnId: `task-${taskId}`,
      traceId: 'b'.repeat(32),
      now,
      sweepAt: now,
      parent: key,
    });
    await store.putTurn(child, {
      turnId: `task-${taskId}`,
      ticketId: `task-${taskId}`,
      input: {},
      inputHash: 'h',
      createdAt: now,
    });
    if (done) await store.setTurnOutcome(child, `task-${taskId}`, { status: 'completed', output: 'ok', at: now });
    const call = { id: `start-${taskId}`, name: TaskTool.start, input: {} };
    j.add('model', { toolCalls: [call], stopReason: 'tool_use', usage }).add('tool', {
      callId: call.id,
      tool: TaskTool.start,
      ok: true,
      output: { taskId, agent: 'worker', description: taskId, turnId: `task-${taskId}`, status: 'running' },
    });
  }
  for (let i = 0; i < steps; i++) {
    const call = { id: `look-${i}`, name: 'lookup', input: { i } };
    j.add('model', { toolCalls: [call], stopReason: 'tool_use', usage }).add('tool', {
      callId: call.id,
      tool: 'lookup',
      ok: true,
      output: i,
    });
  }
  const refund = { id: 'refund-1', name: 'issueRefund', input: { orderId: 'O-1' } };
  j.add('model', { toolCalls: [refund], stopReason: 'tool_use', usage }).add('approval', {
    callId: refund.id,
    tool: refund.name,
    input: refund.input,
  });
  const entries = j.entries();
  for (const entry of entries) await store.append(key, entry);
  await store.release(key, { owner: 'o1', epoch: 1, state: 'waiting', seenVersion: 0, progressed: true });
  const { client, meter } = meteredClient(store, clock);
  return { key, store, client, meter, entries };
}

/** Journal entries one status read costs. */
async function entriesReadBy(read: () => Promise<unknown>, meter: { entries: number }) {
  const before = meter.entries;
  await read();
  return meter.entries - before;
}

describe("a session's status, polled", () => {
  it('reads a bounded number of journal entries per poll, however long the journal', async () => {
    // Arrange
    const short = await longSession(100);
    const long = await longSession(2_000);

    // Act: a first read of each, then a poll.
    const firstShort = await entriesReadBy(() => short.client.status(short.key.id), short.meter);
    const firstLong = await entriesReadBy(() => long.client.status(long.key.id), long.meter);
    const pollShort = await entriesReadBy(() => short.client.status(short.key.id), short.meter);
    const pollLong = await entriesReadBy(() => long.client.status(long.key.id), long.meter);

    // Assert: the first read folds the whole journal (and leaves a snapshot); a poll reads only
    // the snapshot's own entry and what came after it, the same for 200 entries or 4,000.
    console.log(
      `status read cost, journal entries read: first read ${firstShort} / ${firstLong}, each poll after ${pollShort} / ${pollLong} (journals of ${short.entries.length} / ${long.entries.length} entries)`,
    );
    expect(firstLong).toBe(long.entries.length);
    expect(pollShort).toBe(pollLong);
    expect(pollLong).toBeLessThanOrEqual(1);
  });

  it('answers the same from the snapshot and the tail as from the whole journal, and follows new entries', async () => {
    // Arrange
    const { key, store, client, meter, entries } = await longSession(300);
    const whole = await client.status(key.id);

    // Act: more entries after the snapshot the first read left (the refund is decided, more rounds follow).
    const more = journal();
    for (const entry of entries) more.add(entry.kind, entry.data as never);
    more.add('decision', { callId: 'refund-1', approved: true, id: 'decision:refund-1' });
    more.add('tool', { callId: 'refund-1', tool: 'issueRefund', ok: true, output: 'R-1' });
    for (let i = 0; i < 10; i++)
      more
        .add('model', { toolCalls: [{ id: `late-${i}`, name: 'lookup', input: {} }], stopReason: 'tool_use', usage })
        .add('tool', { callId: `late-${i}`, tool: 'lookup', ok: true, output: i });
    more.add('tool', {
      callId: 'late-9',
      tool: TaskTool.clear,
      ok: true,
      output: { taskId: 'task-a' },
    });
    const added = more.entries().slice(entries.length) as JournalEntry[];
    for (const entry of added) await store.append(key, entry);
    const cost = await entriesReadBy(() => client.status(key.id), meter);
    const after = await client.status(key.id);

    // Assert
    expect(whole?.pendingApprovals).toEqual([
      { modelSeq: 607, callId: 'refund-1', tool: 'issueRefund', input: { orderId: 'O-1' } },
    ]);
    expect(whole?.tasks).toEqual({ completed: 1, running: 1 });
    // The snapshot's own entry and the new ones: under the bound, so no new snapshot yet.
    expect(cost).toBe(added.length + 1);
    expect(cost).toBeLessThanOrEqual(READER_SNAPSHOT_AFTER_ENTRIES + 1);
    expect(after?.tasks).toEqual({ running: 1 });
    expect(after?.pendingApprovals).toBeUndefined();
    expect(await client.tasks(key.id)).toEqual([expect.objectContaining({ taskId: 'task-b', status: 'running' })]);
  });
});
