import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dispatcher } from '../../../examples/dispatcher/agent.ts';
import type { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryTicketQueue, type MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, toolResults } from '../../../lib/agent/scripted-model.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { TurnRefusedError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { RELEASED_STRAGGLER_ERROR, TaskTool } from '../../../lib/core/tasks.ts';
import type { ModelRequest } from '../../../lib/ports/model-client.ts';
import type { TurnRead } from '../../../lib/ports/session-store.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { type KickOutcome, runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/** A child agent that works `ms` of (manual) time in steps of up to 10 s, then answers `did <job>`. */
function worker(clock: ManualClock, name = 'worker') {
  return defineAgent({
    name,
    instructions: 'Do the job.',
    input: z.object({ job: z.string(), ms: z.number().int().nonnegative() }),
    model: scriptedModel({
      maxDurationMs: 1_000,
      script: (messages) => {
        const inputs = messages
          .filter((m) => m.role === 'user')
          .flatMap((m) => m.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])));
        const input = JSON.parse(inputs[0] ?? '{}') as { job: string; ms: number };
        const turns = inputs.length;
        const done = toolResults(messages);
        let worked = 0;
        let k = 1;
        for (; done.has(`work-${turns}-${k}`); k++)
          worked += (done.get(`work-${turns}-${k}`)?.output as { worked?: number } | undefined)?.worked ?? 0;
        if (worked < input.ms)
          return {
            toolCalls: [{ id: `work-${turns}-${k}`, name: 'work', input: { ms: Math.min(10_000, input.ms - worked) } }],
          };
        return { final: turns === 1 ? `did ${input.job}` : `did ${input.job} again: ${inputs.at(-1)}` };
      },
    }),
    tools: [
      defineTool({
        name: 'work',
        description: 'Works for a while.',
        input: z.object({ ms: z.number().int() }),
        effect: 'pure',
        maxDurationMs: 11_000,
        run: async ({ ms }, ctx) => {
          await clock.sleep(ms, ctx.signal);
          return { worked: ms };
        },
      }),
    ],
  });
}

const parentKey = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: 'dispatcher',
  id: deriveSessionId('default', 'dispatcher', ticketId),
});

function setup(options: { taskWaitTimeoutMs?: number } = {}) {
  const seen: ModelRequest[] = [];
  const base = dispatcher({ delegates: ['worker'], taskWaitTimeoutMs: options.taskWaitTimeoutMs ?? 60_000 });
  const recording = {
    ...base,
    model: {
      ...base.model,
      converse: (request: ModelRequest, signal: AbortSignal) => {
        seen.push(request);
        return base.model.converse(request, signal);
      },
    },
  };
  const test = makeTestDeps([recording]);
  const agents = new Map(test.deps.agents);
  agents.set('worker', worker(test.clock));
  const deps: RuntimeDeps = { ...test.deps, agents };
  const client = new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });
  return { ...test, deps, client, seen };
}

const dispatch = (jobs: { job: string; ms: number }[]) => ({
  tasks: jobs.map((j) => ({ agent: 'worker', input: j, description: `job ${j.job}` })),
});

/** Runs every kick as it becomes ready, concurrently, like several workers, until none is left. */
async function drainConcurrently(deps: RuntimeDeps): Promise<KickOutcome[]> {
  const queue = deps.workQueue as MemoryWorkQueue;
  const running = new Set<Promise<void>>();
  const outcomes: KickOutcome[] = [];
  for (let rounds = 0; rounds < 10_000; rounds++) {
    for (const { body } of queue.receive()) {
      const run = runKick(body, invocation(60_000, deps.clock), deps).then((o) => {
        outcomes.push(o);
        running.delete(run);
      });
      running.add(run);
    }
    if (running.size === 0 && queue.pendingCount === 0) return outcomes;
    await new Promise((resolve) => setImmediate(resolve));
    if (running.size === 0 && queue.receive.length === 0) {
      const next = queue.nextVisibleAt;
      if (next !== undefined && next > deps.clock.now()) (deps.clock as ManualClock).set(next);
    }
  }
  throw new Error('kicks did not settle');
}

describe('background tasks', () => {
  it('starts a child session per task, waits holding no lease, and answers with every task’s status and output', async () => {
    // Arrange
    const { deps, store, results, seen } = setup();
    const key = parentKey('D1');

    // Act
    await acceptTicket(
      ticketBody(
        'dispatcher',
        'D1',
        dispatch([
          { job: 'a', ms: 100 },
          { job: 'b', ms: 5_000 },
          { job: 'c', ms: 50 },
        ]),
      ),
      undefined,
      deps,
    );
    await drain(deps, { maxKicks: 1 });
    const waiting = await store.getSession(key);
    await drain(deps);

    // Assert
    expect(waiting).toMatchObject({ state: 'waiting' });
    expect(waiting?.owner).toBeUndefined();
    const answer = results.bodies.find((r) => r.sessionId === key.id)!;
    expect(answer.status).toBe('completed');
    expect(answer.output).toMatchObject({
      'job a': { status: 'completed', output: 'did a' },
      'job b': { status: 'completed', output: 'did b' },
      'job c': { status: 'completed', output: 'did c' },
    });
    const taskId = (answer.output as Record<string, { taskId: string }>)['job a']!.taskId;
    expect(await store.getSession({ tenant: 'default', agent: 'worker', id: taskId })).toMatchObject({
      parent: key,
      conversation: true,
      state: 'idle',
    });
    // The model saw the tasks' statuses before its calls after the starts.
    const block = seen.at(-1)?.messages.at(-1)?.content.at(-1);
    expect(block).toMatchObject({ type: 'text', text: expect.stringContaining(`${taskId} [completed] worker: job a`) });
    expect(seen[0]?.tools.map((t) => t.name)).toEqual(expect.arrayContaining(Object.values(TaskTool)));
  });

  it('answers an unknown agent with an error that lists the agents it may start', async () => {
    // Arrange
    const { deps, results } = setup();

    // Act
    await acceptTicket(
      ticketBody('dispatcher', 'D2', { tasks: [{ agent: 'nobody', input: {}, description: 'x' }] }),
      undefined,
      deps,
    );
    await drain(deps);

    // Assert
    const answer = results.bodies.find((r) => r.sessionId === parentKey('D2').id);
    expect(answer?.output).toEqual({
      x: { taskId: '', status: 'failed', error: 'unknown agent "nobody": this agent may start worker' },
    });
  });

  it('returns a wait at the host’s time limit, reporting the tasks still running', async () => {
    // Arrange
    const { deps, store, client } = setup({ taskWaitTimeoutMs: 2_000 });
    const key = parentKey('D3');
    await acceptTicket(ticketBody('dispatcher', 'D3', dispatch([{ job: 'slow', ms: 100_000 }])), undefined, deps);

    // Act
    await drain(deps);

    // Assert
    const waits = (await store.readJournal(key)).filter((e) => e.kind === 'tool' && e.data.tool === TaskTool.wait);
    const [task] = await client.tasks(key.id);
    expect(waits[0]?.data).toMatchObject({
      ok: true,
      output: { finished: [], running: [task!.taskId], timedOut: true },
    });
    expect(waits.at(-1)?.data).toMatchObject({ ok: true, output: { finished: [{ status: 'completed' }] } });
  });

  it('continues a finished task on a new child turn, whose outcome an old run cannot replace', async () => {
    // Arrange
    const { deps, store, results, client } = setup();
    const key = parentKey('D4');
    await acceptTicket(ticketBody('dispatcher', 'D4', dispatch([{ job: 'a', ms: 10 }])), undefined, deps);
    await drain(deps);
    const first = results.bodies.find((r) => r.sessionId === key.id)!;
    const taskId = (first.output as Record<string, { taskId: string }>)['job a']!.taskId;
    const child: SessionKey = { tenant: 'default', agent: 'worker', id: taskId };
    const firstTurn = (await store.getSession(child))!.activeTurnId!;

    // Act
    await client.send(key.id, { continue: { taskId, input: 'more' } }, { id: 'D4-2' });
    await drain(deps);
    const late = await store.setTurnOutcome(child, firstTurn, { status: 'failed', error: 'late', at: 0 });

    // Assert
    const second = results.bodies.find((r) => r.turnId === 'D4-2')!;
    expect(second.output).toMatchObject({ [taskId]: { status: 'completed', output: 'did a again: more' } });
    expect(late.status).toBe('completed');
    const tasks = await client.tasks(key.id);
    expect(tasks).toEqual([
      expect.objectContaining({
        taskId,
        status: 'completed',
        output: 'did a again: more',
        turnId: expect.stringMatching(/-c\d+-/),
      }),
    ]);
    expect((await client.status(taskId))?.parent).toBe(key.id);
    expect((await client.status(key.id))?.tasks).toEqual({ completed: 1 });
  });

  it('releases from any process: cancels running tasks, keeps finished results, and refuses new work after', async () => {
    // Arrange
    const { deps, store, client } = setup();
    const key = parentKey('D5');
    await acceptTicket(
      ticketBody(
        'dispatcher',
        'D5',
        dispatch([
          { job: 'quick', ms: 10 },
          { job: 'long', ms: 600_000 },
        ]),
      ),
      undefined,
      deps,
    );
    // The parent starts both, the quick one finishes, the long one runs.
    const work = drainConcurrently(deps);
    const quickDone = async () => {
      for (;;) {
        const tasks = await client.tasks(key.id).catch(() => []);
        if (tasks.some((t) => t.status === 'completed') && tasks.some((t) => t.status === 'running')) return tasks;
        await deps.clock.sleep(100);
      }
    };
    const before = await quickDone();

    // Act
    const [released, again] = await Promise.all([
      client.release(key.id, { timeoutS: 30 }),
      client.release(key.id, { timeoutS: 5 }),
    ]);
    await work;
    const afterwards = await client.tasks(key.id);
    const refusedTurn = client.send(key.id, dispatch([{ job: 'new', ms: 1 }]), { id: 'D5-2' });

    // Assert
    const long = before.find((t) => t.status === 'running')!;
    expect(released).toEqual({ sessionId: key.id, released: true, cancelled: [long.taskId], stragglers: [] });
    expect(again).toEqual(released);
    expect(afterwards.map((t) => [t.description, t.status])).toEqual([
      ['job quick', 'completed'],
      ['job long', 'cancelled'],
    ]);
    expect(afterwards[0]?.output).toBe('did quick');
    await expect(refusedTurn).rejects.toThrow(TurnRefusedError);
    await expect(refusedTurn).rejects.toThrow(/was released/);
    expect(await client.release(key.id)).toEqual(released);
    expect((await client.status(key.id))?.release).toBe('released');
    const child = await store.getSession({ tenant: 'default', agent: 'worker', id: long.taskId });
    expect(child?.state).toBe('cancelled');
  });

  it('records tasks that outlast the release’s bound as failed, and shows no phantom running task', async () => {
    // Arrange: kicks run one at a time, so no child runs while the parent's release waits.
    const { deps, client } = setup();
    const key = parentKey('D6');
    await acceptTicket(ticketBody('dispatcher', 'D6', dispatch([{ job: 'x', ms: 1_000_000 }])), undefined, deps);
    // The parent starts the task and waits; the child's first leg runs.
    await drain(deps, { maxKicks: 2 });

    // Act
    const [released] = await Promise.all([client.release(key.id, { timeoutS: 1 }), drain(deps)]);

    // Assert
    expect(released.stragglers).toHaveLength(1);
    expect(await client.tasks(key.id)).toEqual([
      expect.objectContaining({ status: 'failed', error: RELEASED_STRAGGLER_ERROR }),
    ]);
  });

  it('lists the tasks a release cancelled when it was carried out over two legs', async () => {
    // Arrange: the parent starts the task and waits; the child's first leg runs.
    const { deps, client } = setup();
    const key = parentKey('D6b');
    await acceptTicket(ticketBody('dispatcher', 'D6b', dispatch([{ job: 'x', ms: 1_000_000 }])), undefined, deps);
    await drain(deps, { maxKicks: 2 });
    const [task] = await client.tasks(key.id);

    // Act: legs too short to wait, so the release's first leg cancels the task and yields; the
    // child ends cancelled before the continuation looks.
    const [released] = await Promise.all([client.release(key.id, { timeoutS: 30 }), drain(deps, { budgetMs: 1_100 })]);

    // Assert
    expect(released).toEqual({ sessionId: key.id, released: true, cancelled: [task?.taskId], stragglers: [] });
    expect((await client.tasks(key.id)).map((t) => t.status)).toEqual(['cancelled']);
  });

  it('refuses a release without cancel while tasks run, changing nothing', async () => {
    // Arrange
    const { deps, store, client } = setup();
    const key = parentKey('D7');
    await acceptTicket(ticketBody('dispatcher', 'D7', dispatch([{ job: 'x', ms: 100 }])), undefined, deps);
    await drain(deps, { maxKicks: 1 });
    const before = await store.getSession(key);

    // Act
    const refused = client.release(key.id, { cancel: false });

    // Assert
    await expect(refused).rejects.toThrow(/has 1 running task/);
    expect(await store.getSession(key)).toEqual(before);
  });

  it('leaves no running child when a release lands between a task’s start and its first step', async () => {
    // Arrange: the parent started the task; the child has not run yet.
    const { deps, store, client } = setup();
    const key = parentKey('D8');
    await acceptTicket(ticketBody('dispatcher', 'D8', dispatch([{ job: 'x', ms: 100 }])), undefined, deps);
    await drain(deps, { maxKicks: 1 });
    const [task] = await client.tasks(key.id);

    // Act: the mark lands on the record, and the child's kick runs before the parent's.
    const now = deps.clock.now();
    await store.bump(key, { now, release: { timeoutMs: 1_000 }, sweepAt: now + 1_000 });
    const childKick = {
      v: 1 as const,
      session: { tenant: 'default', agent: 'worker', id: task!.taskId },
      reason: 'first' as const,
    };
    await runKick(childKick, invocation(60_000, deps.clock), deps);
    const child = await store.getSession(childKick.session);
    await drain(deps);

    // Assert
    expect(child?.state).toBe('cancelled');
    expect((await client.tasks(key.id))[0]).toMatchObject({ status: 'cancelled', error: RELEASED_STRAGGLER_ERROR });
    const refusedStart = (await store.readJournal(key)).filter((e) => e.kind === 'released');
    expect(refusedStart).toHaveLength(1);
  });

  it('cascades a cancel to the tasks of the cancelled session', async () => {
    // Arrange
    const { deps, store, client } = setup();
    const key = parentKey('D9');
    await acceptTicket(ticketBody('dispatcher', 'D9', dispatch([{ job: 'x', ms: 600_000 }])), undefined, deps);
    await drain(deps, { maxKicks: 2 });

    // Act
    await client.cancel(key.id);
    await drain(deps);

    // Assert
    const [task] = await client.tasks(key.id);
    expect(task?.status).toBe('cancelled');
    expect((await store.getSession(key))?.state).toBe('cancelled');
  });

  it('never lets a cancelled task poison a later task of the same agent and description', async () => {
    // Arrange: turn 1's task is cancelled.
    const { deps, client, results } = setup();
    const key = parentKey('D10');
    await acceptTicket(ticketBody('dispatcher', 'D10', dispatch([{ job: 'x', ms: 600_000 }])), undefined, deps);
    await drain(deps, { maxKicks: 2 });
    const [first] = await client.tasks(key.id);
    await client.cancel(first!.taskId);
    await drain(deps);

    // Act
    await client.send(key.id, dispatch([{ job: 'x', ms: 10 }]), { id: 'D10-2' });
    await drain(deps);

    // Assert
    expect(results.bodies.find((r) => r.turnId === 'D10')?.output).toMatchObject({ 'job x': { status: 'cancelled' } });
    const second = results.bodies.find((r) => r.turnId === 'D10-2')?.output as Record<string, { taskId: string }>;
    expect(second).toMatchObject({ 'job x': { status: 'completed', output: 'did x' } });
    expect(second['job x']?.taskId).not.toBe(first!.taskId);
  });

  it('changes no task’s status on a store error: the step retries and reads the truth', async () => {
    // Arrange: reads of a finished child's turn (the parent learning the outcome) fail twice,
    // within the default retry budget of three attempts.
    const { deps, results } = setup();
    let failures = 2;
    const store = new Proxy(deps.store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (property === 'getTurns')
          return async (reads: readonly TurnRead[]) => {
            const turns = await target.getTurns(reads);
            const finished = reads.some((read, i) => read.key.agent === 'worker' && turns[i]?.outcome);
            if (finished && failures-- > 0) throw new Error('ThrottlingException: slow down');
            return turns;
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const flaky = { ...deps, store };

    // Act
    await acceptTicket(ticketBody('dispatcher', 'D11', dispatch([{ job: 'a', ms: 10 }])), undefined, flaky);
    await drain(flaky);

    // Assert
    const answer = results.bodies.find((r) => r.sessionId === parentKey('D11').id);
    expect(answer?.output).toMatchObject({ 'job a': { status: 'completed', output: 'did a' } });
    const journal = await deps.store.readJournal(parentKey('D11'));
    expect(journal.some((e) => e.kind === 'error' && /ThrottlingException/.test(e.data.message))).toBe(true);
    const waits = journal.filter((e) => e.kind === 'tool' && e.data.tool === TaskTool.wait);
    expect(JSON.stringify(waits)).not.toContain('lost');
  });
});
