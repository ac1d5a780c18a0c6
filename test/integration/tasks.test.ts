import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskInfo } from '../../lib/client/baton-client.ts';
import { TurnRefusedError } from '../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../lib/core/ids.ts';
import type { Result } from '../../lib/core/messages.ts';
import { TEST_AGENTS_MODULE } from '../fixtures/agents/registry.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { waitFor } from '../fixtures/wait-for.ts';

const DISPATCHER = 'dispatcher';
const parentKey = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: DISPATCHER,
  id: deriveSessionId('default', DISPATCHER, ticketId),
});

/** A long-haul task of `steps` chunks of `stepMs` each: it spans several legs and renewals. */
const longTask = (description: string, steps: number, stepMs: number) => ({
  agent: 'long-haul',
  input: { steps, stepMs, payloadBytes: 16 },
  description,
});
const quickTask = (description: string, text: string) => ({ agent: 'support-desk', input: { text }, description });

/**
 * Background tasks with two worker processes over the shared store; this test process is a third
 * that reads, continues and releases. Whichever worker runs a child, every reader sees the truth.
 */
describe('background tasks on the local stack with two workers', { timeout: 180_000 }, () => {
  let t: TestStack;

  beforeAll(async () => {
    t = await startTestStack({ handlerEnv: { BATON_AGENTS_MODULE: TEST_AGENTS_MODULE } });
  });
  afterAll(async () => {
    await t?.stop();
  });

  const resultOf = async (ticketId: string): Promise<Result> =>
    (await t.awaitResults((rs) => rs.some((r) => r.ticketId === ticketId), 90_000)).find(
      (r) => r.ticketId === ticketId,
    )!;

  /** Polls the tasks of a session from this process until `done`, keeping every status seen. */
  async function watchTasks(sessionId: string, done: (tasks: TaskInfo[]) => boolean, what: string) {
    const seen = new Map<string, string[]>();
    const last = await waitFor(
      async () => {
        const tasks = await t.client.tasks(sessionId).catch(() => undefined);
        for (const task of tasks ?? []) {
          const statuses = seen.get(task.description) ?? [];
          if (statuses.at(-1) !== task.status) statuses.push(task.status);
          seen.set(task.description, statuses);
        }
        return tasks && done(tasks) ? tasks : undefined;
      },
      { what, timeoutMs: 90_000, pollMs: 100 },
    );
    return { last, seen };
  }

  it('reports a task running on a worker as running elsewhere, delivers its result to any reader, and continues it from another process', async () => {
    // Arrange
    const key = parentKey('fan-1');
    await t.client.submit({
      agent: DISPATCHER,
      ticketId: 'fan-1',
      input: { tasks: [longTask('long', 8, 600), quickTask('quick', 'hello')] },
    });

    // Act: read from this process while the workers run the children.
    const running = await watchTasks(
      key.id,
      (tasks) => tasks.some((task) => task.description === 'long' && task.status === 'running'),
      'the long task to be running',
    );
    const longTaskId = running.last.find((task) => task.description === 'long')!.taskId;
    const child = await t.store.getSession({ tenant: 'default', agent: 'long-haul', id: longTaskId });
    const finished = await watchTasks(
      key.id,
      (tasks) => tasks.length === 2 && tasks.every((task) => task.status !== 'running'),
      'both tasks to finish',
    );
    const answer = await resultOf('fan-1');
    const quick = finished.last.find((task) => task.description === 'quick')!;
    const quickKey: SessionKey = { tenant: 'default', agent: 'support-desk', id: quick.taskId };
    const firstTurn = quick.turnId;
    await t.client.send(key.id, { continue: { taskId: quick.taskId, input: { text: 'again' } } }, { id: 'fan-1-2' });
    const continued = await resultOf('fan-1-2');
    const late = await t.store.setTurnOutcome(quickKey, firstTurn, { status: 'failed', error: 'late', at: 0 });

    // Assert
    expect(child?.parent).toEqual(key);
    expect(child?.state).not.toBe('idle');
    // Longer than the 3 s lease and over several legs: renewals kept it alive, no recovery needed.
    const childAfter = await t.store.getSession({ tenant: 'default', agent: 'long-haul', id: longTaskId });
    expect(childAfter?.recovered).toBe(0);
    expect(answer.output).toMatchObject({
      long: { status: 'completed', output: 'fetched 8 chunks' },
      quick: { status: 'completed', output: 'turn 1: hello' },
    });
    // Every status any reader saw went running → completed, never through lost.
    for (const statuses of [...running.seen.values(), ...finished.seen.values()])
      expect(statuses.every((s) => s === 'running' || s === 'completed')).toBe(true);
    expect(finished.seen.get('long')).toEqual(['running', 'completed']);
    expect(continued.output).toMatchObject({ [quick.taskId]: { status: 'completed', output: 'turn 2: again' } });
    expect(late.status).toBe('completed');
    const afterwards = await t.client.tasks(key.id);
    expect(afterwards.find((task) => task.taskId === quick.taskId)).toMatchObject({
      status: 'completed',
      output: 'turn 2: again',
    });
    expect((await t.client.status(quick.taskId))?.parent).toBe(key.id);
    expect((await t.client.status(key.id))?.tasks).toEqual({ completed: 2 });
  });

  it('recovers a task whose worker died, reporting it running (never lost) until it completes', async () => {
    // Arrange
    const key = parentKey('fan-2');
    await t.client.submit({ agent: DISPATCHER, ticketId: 'fan-2', input: { tasks: [longTask('long', 10, 500)] } });
    const started = await watchTasks(key.id, (tasks) => tasks[0]?.status === 'running', 'the task to be running');
    const childKey: SessionKey = { tenant: 'default', agent: 'long-haul', id: started.last[0]!.taskId };
    await waitFor(async () => (await t.store.getSession(childKey))?.owner, { what: 'the child to hold a lease' });

    // Act
    for (const worker of t.stack.supervisor.workers()) process.kill(worker.pid, 'SIGKILL');
    const done = await watchTasks(key.id, (tasks) => tasks[0]?.status !== 'running', 'the task to finish');
    const answer = await resultOf('fan-2');

    // Assert
    expect([...started.seen.values(), ...done.seen.values()].flat().every((s) => s !== 'lost')).toBe(true);
    expect(done.last[0]).toMatchObject({ status: 'completed', output: 'fetched 10 chunks' });
    expect((await t.store.getSession(childKey))?.recovered).toBeGreaterThanOrEqual(1);
    expect(answer.output).toMatchObject({ long: { status: 'completed' } });
  });

  it('releases from another process: cancels the task running on a worker, keeps finished results, refuses new work, and answers a concurrent release with the same outcome', async () => {
    // Arrange
    const key = parentKey('fan-3');
    await t.client.submit({
      agent: DISPATCHER,
      ticketId: 'fan-3',
      input: { tasks: [longTask('long', 100, 500), quickTask('quick', 'hi')] },
    });
    const before = await watchTasks(
      key.id,
      (tasks) =>
        tasks.some((task) => task.description === 'quick' && task.status === 'completed') &&
        tasks.some((task) => task.description === 'long' && task.status === 'running'),
      'the quick task to finish while the long one runs',
    );
    const long = before.last.find((task) => task.description === 'long')!;
    await waitFor(
      async () => (await t.store.getSession({ tenant: 'default', agent: 'long-haul', id: long.taskId }))?.owner,
      {
        what: 'the long task to hold a lease on a worker',
      },
    );

    // Act
    const [first, second] = await Promise.all([
      t.client.release(key.id, { timeoutS: 20 }),
      t.client.release(key.id, { timeoutS: 5 }),
    ]);
    const afterwards = await t.client.tasks(key.id);
    const refused = await t.client
      .send(key.id, { tasks: [quickTask('late', 'x')] }, { id: 'fan-3-2' })
      .catch((error: unknown) => error);
    const again = await t.client.release(key.id);

    // Assert
    expect(first).toEqual({ sessionId: key.id, released: true, cancelled: [long.taskId], stragglers: [] });
    expect(second).toEqual(first);
    expect(again).toEqual(first);
    expect(afterwards.map((task) => [task.description, task.status])).toEqual([
      ['long', 'cancelled'],
      ['quick', 'completed'],
    ]);
    expect(afterwards.find((task) => task.description === 'quick')?.output).toBe('turn 1: hi');
    expect(refused).toBeInstanceOf(TurnRefusedError);
    expect((refused as Error).message).toMatch(/was released/);
    const child = await t.store.getSession({ tenant: 'default', agent: 'long-haul', id: long.taskId });
    expect(child?.state).toBe('cancelled');
    expect(child?.owner).toBeUndefined();
  });

  it('leaves no running child when a release races the starts', async () => {
    // Arrange
    const key = parentKey('fan-4');
    await t.client.submit({
      agent: DISPATCHER,
      ticketId: 'fan-4',
      input: { tasks: [longTask('a', 50, 500), longTask('b', 50, 500), longTask('c', 50, 500)] },
    });
    await waitFor(() => t.store.getSession(key), { what: 'the dispatcher session to exist' });

    // Act
    const released = await t.client.release(key.id, { timeoutS: 10 });
    const answer = await resultOf('fan-4');
    const tasks = await t.client.tasks(key.id);
    const children = await Promise.all(
      tasks.map((task) => t.store.getSession({ tenant: 'default', agent: 'long-haul', id: task.taskId })),
    );

    // Assert
    expect(released.released).toBe(true);
    expect(tasks.every((task) => task.status !== 'running')).toBe(true);
    expect(children.every((c) => c?.state === 'cancelled' && c.owner === undefined)).toBe(true);
    const statuses = Object.values(answer.output as Record<string, { status: string }>).map((r) => r.status);
    expect(statuses.every((s) => s === 'cancelled' || s === 'failed')).toBe(true);
  });
});
