import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { StepError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { type JournalEntry, legMarkerOf } from '../../../lib/core/journal.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { MAX_IDLE_LEGS } from '../../../lib/runtime/protocol/exits.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { unrulyWorkQueue } from '../../../lib/runtime/unruly-work-queue.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const keyOf = (agent: string, ticketId: string) => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});
const kinds = (entries: JournalEntry[]) => entries.map((e) => e.kind);
/** Each leg's marker: a `leg` entry, or the input a leg that started a turn carried it on. */
const markers = (entries: readonly JournalEntry[]) =>
  entries.flatMap((e) => {
    const marker = legMarkerOf(e);
    return marker ? [{ ...marker, epoch: e.epoch }] : [];
  });

describe('the step runner', () => {
  it('runs a one-shot ticket to a published result with every step journaled once', async () => {
    // Arrange
    const { deps, store, results } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-1', { ids: ['a', 'b'] }), undefined, deps);

    // Act
    await drain(deps);

    // Assert
    const key = keyOf('lookup-agent', 'T-1');
    const journal = await store.readJournal(key);
    // The leg's marker rides on the input, its first write; the release records the sent result.
    expect(kinds(journal)).toEqual(['input', 'model', 'tool', 'model', 'tool', 'model', 'outcome']);
    expect(journal[0]).toMatchObject({ kind: 'input', epoch: 1, data: { leg: { reason: 'first' } } });
    expect(results.bodies).toEqual([
      expect.objectContaining({ ticketId: 'T-1', status: 'completed', output: 'found 2', steps: 5, legs: 1 }),
    ]);
    expect(await store.getSession(key)).toMatchObject({ state: 'completed', publishedTurnId: 'T-1' });
    expect((await store.getTurn(key, 'T-1'))?.outcome?.status).toBe('completed');
  });

  it('continues a turn longer than one invocation over several legs, all on one trace', async () => {
    const clock = new ManualClock();
    const { deps, store, results, total } = makeTestDeps([lookupAgent({ modelLatencyMs: 150, clock })], {
      clock,
    });
    let snapshotsRead = 0;
    const readSnapshot = store.getLatestSnapshot.bind(store);
    store.getLatestSnapshot = (key) => {
      snapshotsRead++;
      return readSnapshot(key);
    };
    const snapshotReads = () => snapshotsRead;
    await acceptTicket(
      ticketBody('lookup-agent', 'T-2', { ids: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'] }),
      undefined,
      deps,
    );

    const outcomes = await drain(deps, { budgetMs: 1_800 });

    const journal = await store.readJournal(keyOf('lookup-agent', 'T-2'));
    const legs = markers(journal);
    expect(legs.length).toBeGreaterThanOrEqual(3);
    expect(outcomes.filter((o) => o === 'yielded').length).toBe(legs.length - 1);
    expect(legs.slice(1).every((l) => l.reason === 'continuation')).toBe(true);
    const traceIds = new Set(legs.map((l) => l.traceparent.split('-')[1]));
    expect(traceIds.size).toBe(1);
    expect(results.bodies[0]).toMatchObject({ status: 'completed', output: 'found 10', legs: legs.length });
    expect(total('Yields')).toBe(legs.length - 1);
    // Each yield left a snapshot for status readers; no leg read one (a leg folds its one journal pass).
    expect(snapshotReads()).toBe(0);
    expect(await store.getLatestSnapshot(keyOf('lookup-agent', 'T-2'))).toBeDefined();
  });

  it('drops duplicated and shuffled kicks and still writes the same journal', async () => {
    const [plainClock, noisyClock] = [new ManualClock(), new ManualClock()];
    const plain = makeTestDeps([lookupAgent({ modelLatencyMs: 100, clock: plainClock })], { clock: plainClock });
    const noisy = makeTestDeps([lookupAgent({ modelLatencyMs: 100, clock: noisyClock })], { clock: noisyClock });
    // Every kick the noisy runtime sends arrives three times, the copies up to a second apart.
    let seed = 7;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return seed / 2147483647;
    };
    const noisyDeps = {
      ...noisy.deps,
      workQueue: unrulyWorkQueue(noisy.workQueue, { copies: 3, maxExtraDelaySeconds: 1, random }),
    };
    for (const deps of [plain.deps, noisyDeps])
      await acceptTicket(ticketBody('lookup-agent', 'T-3', { ids: ['a', 'b', 'c', 'd'] }), undefined, deps);

    await drain(plain.deps, { budgetMs: 1_500 });
    await drain(noisyDeps, {
      budgetMs: 1_500,
      shuffle: (kicks) => [...kicks].reverse(),
      maxKicks: 200,
      queue: noisy.workQueue,
    });

    const semantic = (entries: JournalEntry[]) =>
      entries
        .filter((e) => e.kind !== 'leg')
        .map((e) => ({ kind: e.kind, data: e.kind === 'input' ? { input: e.data.input } : e.data }));
    const key = keyOf('lookup-agent', 'T-3');
    const noisyJournal = await noisy.store.readJournal(key);
    expect(semantic(noisyJournal)).toEqual(semantic(await plain.store.readJournal(key)));
    expect(noisy.results.bodies.filter((r) => r.status === 'completed')).toHaveLength(1);
    expect(noisy.total('DuplicateKicksDropped')).toBeGreaterThan(0);
  });

  it('never runs a once-only tool again after its watermark: it reconciles instead', async () => {
    let calls = 0;
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ id: z.string() }),
      effect: 'once',
      maxDurationMs: 200,
      run: async () => {
        calls++;
        return { refunded: true };
      },
      reconcile: async () => ({ verdict: 'done', output: { refunded: true, reconciled: true } }),
    });
    const agent = lookupAgent({
      tools: [refund],
      script: (messages) =>
        messages.length < 3 ? { toolCalls: [{ id: 'r', name: 'refund', input: { id: 'x' } }] } : { final: 'refunded' },
    });
    const crash = new FailpointCrash('after-intent');
    // A once-only call starts only when the lease outlives it plus the clock skew allowance.
    const { deps, store, results, clock } = makeTestDeps([agent], {
      config: { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 1, sweepGraceMs: 1_500 },
      failpoint: async (name) => {
        if (name === 'after-intent') throw crash;
      },
    });
    await acceptTicket(ticketBody('lookup-agent', 'T-4', {}), undefined, deps);
    await expect(drain(deps)).rejects.toBe(crash);

    // Another worker recovers once the lease has expired.
    clock.advance(1_600);
    const recovered = { ...deps, failpoint: async () => {} };
    await runKick(
      { v: 1, session: keyOf('lookup-agent', 'T-4'), reason: 'recovery' },
      invocation(60_000, clock),
      recovered,
    );
    await drain(recovered);

    expect(calls).toBe(0);
    const journal = await store.readJournal(keyOf('lookup-agent', 'T-4'));
    expect(kinds(journal)).toContain('reconciled');
    expect(journal.find((e) => e.kind === 'leg' && e.data.reason === 'recovery')).toBeDefined();
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'refunded' })]);
  });

  it('retries a flaky tool with backoff journaled, and fails the turn when the attempts run out', async () => {
    const flaky = (failures: number) => {
      let n = 0;
      return defineTool({
        name: 'lookup',
        description: 'Flaky.',
        input: z.object({ id: z.string() }),
        effect: 'pure',
        maxDurationMs: 500,
        retry: { attempts: 3, initialDelayMs: 20, maxDelayMs: 100 },
        run: async ({ id }) => {
          if (n++ < failures) throw new StepError('503 from downstream', { retryable: true });
          return { id };
        },
      });
    };
    const succeeds = makeTestDeps([lookupAgent({ tools: [flaky(2)] })]);
    await acceptTicket(ticketBody('lookup-agent', 'T-5', { ids: ['a'] }), undefined, succeeds.deps);
    await drain(succeeds.deps);
    const journal = await succeeds.store.readJournal(keyOf('lookup-agent', 'T-5'));
    expect(journal.filter((e) => e.kind === 'error').map((e) => e.kind === 'error' && e.data.attempt)).toEqual([1, 2]);
    expect(succeeds.results.bodies[0]?.status).toBe('completed');

    const fails = makeTestDeps([lookupAgent({ tools: [flaky(3)] })]);
    await acceptTicket(ticketBody('lookup-agent', 'T-6', { ids: ['a'] }), undefined, fails.deps);
    await drain(fails.deps);
    expect(fails.results.bodies[0]).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('tool:lookup failed 3 times'),
    });
  });

  it('stops a stale owner paused past its lease: its next write fails and it writes nothing else', async () => {
    const clock = new ManualClock();
    const { deps, store, results } = makeTestDeps([lookupAgent({ modelLatencyMs: 50, clock })], { clock });
    await acceptTicket(ticketBody('lookup-agent', 'T-7', { ids: ['a', 'b', 'c'] }), undefined, deps);
    const key = keyOf('lookup-agent', 'T-7');
    const [firstKick] =
      deps.workQueue instanceof Object ? (deps.workQueue as never as { receive(): { body: never }[] }).receive() : [];

    // The first owner freezes (as under SIGSTOP: its heartbeat too) before its third journal
    // write, for longer than the lease TTL.
    let appends = 0;
    let frozen = false;
    let thaw: () => void = () => {};
    const thawed = new Promise<void>((resolve) => (thaw = resolve));
    store.beforeWrite = async (operation) => {
      if (operation === 'append' && ++appends === 3) frozen = true;
      if (frozen) await thawed;
    };
    const stale = runKick(firstKick!.body, invocation(60_000, clock), deps);
    // Frozen, it cannot renew: wait (in virtual time) until its lease has expired.
    const expired = async () => {
      const until = (await store.getSession(key))?.until;
      return frozen && until !== undefined && until < clock.now();
    };
    while (!(await expired())) await clock.flush();
    store.beforeWrite = undefined;
    const recoveredBy = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    thaw();

    expect(await stale).toBe('lease-lost');
    expect(recoveredBy).toBe('finished');
    const journal = await store.readJournal(key);
    const markerEpochs = markers(journal).map((m) => m.epoch);
    expect(markerEpochs).toEqual([1, 2]);
    expect(results.bodies.filter((r) => r.status === 'completed')).toHaveLength(1);
  });

  it('fails a ticket for an agent that is not deployed, with the reason in the result', async () => {
    const { deps, store, results } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-8', { ids: [] }), undefined, deps);
    // A redeploy removed the agent between intake and the first leg.
    const redeployed = { ...deps, agents: new Map() };
    await drain(redeployed);
    expect(results.bodies[0]).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('unknown agent "lookup-agent"'),
    });
    expect((await store.getSession(keyOf('lookup-agent', 'T-8')))?.state).toBe('failed');
  });

  it('only publishes an outcome already journaled when the agent has since been undeployed', async () => {
    const { deps, store, results } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-10', { ids: [] }), undefined, deps);
    // The first leg dies between its outcome and the publish.
    const dying = {
      ...deps,
      failpoint: async (name: string) => {
        if (name === 'between-outcome-and-publish') throw new FailpointCrash(name);
      },
    };
    await expect(drain(dying)).rejects.toThrow(FailpointCrash);
    deps.clock instanceof ManualClock && deps.clock.advance(deps.config.leaseTtlMs + 50);

    // A redeploy removed the agent; the recovery finishes what was journaled.
    await runKick(
      { v: 1, session: keyOf('lookup-agent', 'T-10'), reason: 'recovery' },
      invocation(60_000, deps.clock),
      {
        ...deps,
        agents: new Map(),
      },
    );

    const journal = await store.readJournal(keyOf('lookup-agent', 'T-10'));
    expect(journal.filter((e) => e.kind === 'outcome')).toHaveLength(1);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'found 0' })]);
  });

  it('lets a continuation that meets its predecessor mid-release take over instead of dropping it', async () => {
    const clock = new ManualClock();
    const { deps, store, workQueue } = makeTestDeps([lookupAgent({ modelLatencyMs: 150, clock })], { clock });
    await acceptTicket(ticketBody('lookup-agent', 'T-11', { ids: ['a', 'b', 'c', 'd', 'e', 'f'] }), undefined, deps);
    const [first] = workQueue.receive();
    // Hold the predecessor's release until the continuation is about to acquire, then let the
    // release land first: the continuation's compare-and-set meets a record that moved.
    let openRelease = () => {};
    const releaseOpen = new Promise<void>((resolve) => (openRelease = resolve));
    let armed = false;
    const predecessor = runKick(first!.body, invocation(1_500, clock), deps);
    store.beforeWrite = async (operation) => {
      if (operation === 'release') await releaseOpen;
      if (operation === 'acquire' && armed) {
        armed = false;
        openRelease();
        await predecessor;
      }
    };
    while (workQueue.pendingCount === 0) await clock.flush();
    const continuation = workQueue.receive()[0]!.body;
    expect(continuation.reason).toBe('continuation');
    armed = true;

    const outcome = await runKick(continuation, invocation(60_000, clock), deps);

    expect(await predecessor).toBe('yielded');
    expect(outcome).toBe('finished');
    const legs = markers(await store.readJournal(keyOf('lookup-agent', 'T-11')));
    expect(legs.map((l) => l.reason)).toEqual(['first', 'continuation']);
  });

  it('fails a turn as "cannot fit" only after MAX_IDLE_LEGS legs in a row yield before their first step', async () => {
    const { deps, store, results } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-12', { ids: ['a'] }), undefined, deps);

    // Every invocation is too short for the model's declared 1 s maximum.
    const outcomes = await drain(deps, { budgetMs: 1_100 });

    expect(outcomes).toEqual([...Array(MAX_IDLE_LEGS - 1).fill('yielded'), 'finished']);
    expect(results.bodies[0]).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('step cannot fit in the budget'),
    });
    expect(markers(await store.readJournal(keyOf('lookup-agent', 'T-12')))).toHaveLength(MAX_IDLE_LEGS);
  });

  it('cancels a running turn at the next renewal and aborts the tool in flight', async () => {
    let aborted = false;
    const slow = defineTool({
      name: 'lookup',
      description: 'Slow.',
      input: z.object({ id: z.string() }),
      effect: 'pure',
      maxDurationMs: 5_000,
      run: (_input, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            reject(ctx.signal.reason);
          });
        }),
    });
    const { deps, store, results, clock } = makeTestDeps([lookupAgent({ tools: [slow] })]);
    await acceptTicket(ticketBody('lookup-agent', 'T-9', { ids: ['a'] }), undefined, deps);
    const key = keyOf('lookup-agent', 'T-9');
    const running = drain(deps);
    while (!(await store.readJournal(key)).some((e) => e.kind === 'model')) await clock.flush();
    const now = clock.now();
    await store.bump(key, { now, cancel: true, sweepAt: now });
    await running;

    expect(aborted).toBe(true);
    expect(results.bodies[0]).toMatchObject({ status: 'cancelled' });
    expect((await store.getSession(key))?.state).toBe('cancelled');
  });
});
