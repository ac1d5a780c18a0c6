import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dispatcher } from '../../../examples/dispatcher/agent.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { journalSk, META_SK, turnSk } from '../../../lib/adapters/session-item-codec.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { TaskTool } from '../../../lib/core/tasks.ts';
import type { SessionStore } from '../../../lib/ports/session-store.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const keyOf = (agent: string, ticketId: string): SessionKey => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

/** A DynamoDB throttle as the SDK raises it once its own retries gave up. */
const throttled = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
    name: 'ProvisionedThroughputExceededException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    $retryable: { throttling: true },
  });

const DAY_MS = 24 * 3_600_000;

/** A conversation that answers `turn N: TEXT`, N counting the turn inputs so far. */
const chat = defineAgent({
  name: 'chat',
  instructions: 'Echo.',
  conversation: true,
  model: scriptedModel({
    maxDurationMs: 1_000,
    script: (messages) => {
      const texts = messages.flatMap((m) => (m.role === 'user' ? m.content : [])).filter((c) => c.type === 'text');
      const last = texts.at(-1);
      return { final: `turn ${texts.length}: ${last?.type === 'text' ? last.text : ''}` };
    },
  }),
});

/** A chat on the memory twin with a 30-day retention, a client, and the expiry of every item it holds. */
function chatDeps() {
  const test = makeTestDeps([chat], {
    config: { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 30, sweepGraceMs: 1_500 },
  });
  const client = new BatonClient({
    store: test.store,
    tickets: new MemoryTicketQueue(),
    workQueue: test.deps.workQueue,
    clock: test.deps.clock,
  });
  const key = keyOf('chat', 'T1');
  /** The expiries (epoch s) of the record, and of its turns and entries. */
  const expiries = async (turnIds: readonly string[]) => {
    const entries = (await test.store.readJournal(key)).map((e) => test.store.rawItem(key, journalSk(e.seq)));
    const turns = turnIds.map((id) => test.store.rawItem(key, turnSk(id)));
    return {
      record: Number(test.store.rawItem(key, META_SK)?.ttl),
      items: [...turns, ...entries].map((item) => item?.ttl as number | undefined),
    };
  };
  return { ...test, client, key, expiries };
}

/** A dispatcher delegating to `lookup-agent`, and a client on the same store. */
function delegating(overrides: Partial<RuntimeDeps> = {}) {
  const test = makeTestDeps([dispatcher({ delegates: ['lookup-agent'], taskWaitTimeoutMs: 60_000 }), lookupAgent()]);
  const deps: RuntimeDeps = { ...test.deps, ...overrides };
  const client = new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });
  return { ...test, deps, client };
}

const oneTask = { tasks: [{ agent: 'lookup-agent', input: { ids: ['a'] }, description: 'job a' }] };

/** A store whose reads of `lookup-agent` sessions throw `error()` while `armed()` says so. */
function throttledChildReads(store: SessionStore, armed: () => Promise<boolean>): SessionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      const call = (args: unknown[]) => (value as (...args: unknown[]) => unknown).call(target, ...args);
      if (property === 'getSessions' || property === 'getTurns')
        // A batch read of tasks: the first item names the child (a session key, or a turn's).
        return async (items: readonly unknown[], ...rest: unknown[]) => {
          const first = items[0] as { agent?: string; key?: SessionKey } | undefined;
          const agent = first?.key?.agent ?? first?.agent;
          if (agent === 'lookup-agent' && (await armed())) throw throttled();
          return call([items, ...rest]);
        };
      if (property !== 'getSession' && property !== 'getTurn')
        return typeof value === 'function' ? value.bind(target) : value;
      return async (key: SessionKey, ...rest: unknown[]) => {
        if (key.agent === 'lookup-agent' && (await armed())) throw throttled();
        return call([key, ...rest]);
      };
    },
  });
}

describe('protocol regressions (issue 22)', () => {
  it('bug 4: a throttled task-status read before a model call leaves the turn to a recovery, spending no retry budget', async () => {
    // Arrange: the parent's last model call (after its wait for the task) reads the task's status
    // first; that read is throttled, once.
    const test = delegating();
    const key = keyOf('dispatcher', 'T-b4');
    let throttles = 1;
    const lastCallDue = async () => {
      const last = (await test.store.readJournal(key)).at(-1);
      return last?.kind === 'tool' && last.data.tool === TaskTool.wait && throttles-- > 0;
    };
    const deps = { ...test.deps, store: throttledChildReads(test.store, lastCallDue) };
    await acceptTicket(ticketBody('dispatcher', 'T-b4', oneTask), undefined, deps);

    // Act
    const crashed = await drain(deps).then(
      () => undefined,
      (error: unknown) => error,
    );
    const afterThrottle = await test.store.readJournal(key);
    test.clock.advance(deps.config.leaseTtlMs + 1);
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, test.clock), deps);
    await drain(deps);

    // Assert: the throttle was no step's error; the recovery completed the turn.
    expect(crashed).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(afterThrottle.filter((e) => e.kind === 'outcome' || e.kind === 'error')).toEqual([]);
    expect(test.results.bodies.find((r) => r.sessionId === key.id)).toMatchObject({
      status: 'completed',
      output: { 'job a': { status: 'completed', output: 'found 1' } },
    });
    expect((await test.store.readJournal(key)).some((e) => e.kind === 'error')).toBe(false);
  });

  it('bug 5: a cancel seen while the release polls its tasks lets the release finish, then the session ends cancelled', async () => {
    // Arrange: the parent started its task and waits; the child has not run. A release is asked
    // for, and a cancel lands while the release polls the task (at its first renewal).
    const { deps, store, results, clock } = delegating();
    const key = keyOf('dispatcher', 'T-b5');
    await acceptTicket(ticketBody('dispatcher', 'T-b5', oneTask), undefined, deps);
    await drain(deps, { maxKicks: 1 });
    const now = clock.now();
    await store.bump(key, { now, release: { timeoutMs: 3_000 }, sweepAt: now + 1_000 });
    let cancelled = false;
    store.beforeWrite = async (operation, written) => {
      if (operation !== 'renew' || written.id !== key.id || cancelled) return;
      cancelled = true;
      await store.bump(key, { now: clock.now(), cancel: true, sweepAt: clock.now() });
    };

    // Act
    const left = await runKick({ v: 1, session: key, reason: 'wake' }, invocation(60_000, clock), deps);
    store.beforeWrite = undefined;
    await drain(deps);

    // Assert: the release was journaled, the turn cancelled, and no lease is left behind.
    expect(cancelled).toBe(true);
    expect(left).toBe('finished');
    const journal = await store.readJournal(key);
    expect(journal.filter((e) => e.kind === 'released')).toHaveLength(1);
    expect(journal.filter((e) => e.kind === 'outcome').map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'cancelled' }),
    ]);
    expect(await store.getSession(key)).toMatchObject({ state: 'cancelled' });
    expect((await store.getSession(key))?.owner).toBeUndefined();
    expect(results.bodies.filter((r) => r.sessionId === key.id)).toEqual([
      expect.objectContaining({ status: 'cancelled' }),
    ]);
  });

  it('bug 5: a cancel seen while a once-only call is reconciled lets the reconcile finish, then the session ends cancelled', async () => {
    // Arrange: the worker dies after the refund's watermark; the recovery's reconcile takes 2 s,
    // and a cancel lands meanwhile (at the recovery's first renewal).
    const executed: string[] = [];
    const reconciled: string[] = [];
    let deps: RuntimeDeps | undefined;
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ id: z.string() }),
      effect: 'once',
      maxDurationMs: 200,
      run: async (_input, ctx) => {
        executed.push(ctx.idempotencyKey);
        return { refunded: true };
      },
      reconcile: async (key, _input, signal) => {
        await deps!.clock.sleep(2_000, signal);
        reconciled.push(key);
        return { verdict: 'notDone' };
      },
    });
    const agent = lookupAgent({
      tools: [refund],
      script: () => ({ toolCalls: [{ id: 'r', name: 'refund', input: { id: 'x' } }] }),
    });
    const crash = new FailpointCrash('after-intent');
    let crashes = 0;
    const test = makeTestDeps([agent], {
      failpoint: async (name) => {
        if (name === 'after-intent' && crashes++ === 0) throw crash;
      },
    });
    deps = test.deps;
    const { store, results, clock } = test;
    const key = keyOf('lookup-agent', 'T-b5r');
    await acceptTicket(ticketBody('lookup-agent', 'T-b5r', {}), undefined, deps);
    await expect(drain(deps)).rejects.toBe(crash);
    let cancelled = false;
    store.beforeWrite = async (operation) => {
      if (operation !== 'renew' || cancelled) return;
      cancelled = true;
      await store.bump(key, { now: clock.now(), cancel: true, sweepAt: clock.now() });
    };

    // Act
    clock.advance(deps.config.leaseTtlMs + 1);
    const left = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    store.beforeWrite = undefined;
    await drain(deps);

    // Assert: the verdict is journaled before the cancelled outcome; the refund never ran.
    expect(cancelled).toBe(true);
    expect(left).toBe('finished');
    expect(reconciled).toHaveLength(1);
    const kinds = (await store.readJournal(key)).map((e) => e.kind);
    expect(kinds.indexOf('reconciled')).toBeGreaterThan(-1);
    expect(kinds.indexOf('reconciled')).toBeLessThan(kinds.indexOf('outcome'));
    expect(executed).toEqual([]);
    expect(await store.getSession(key)).toMatchObject({ state: 'cancelled' });
    expect((await store.getSession(key))?.owner).toBeUndefined();
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'cancelled' })]);
  });

  it('bug 12: right after a cancelled session’s result is published, cancel answers as status does', async () => {
    // Arrange: a cancel is requested before the session runs; its leg journals the cancelled
    // outcome, writes it on the turn, publishes the result, and is about to finish the record.
    const { deps, store } = makeTestDeps([lookupAgent()]);
    const client = new BatonClient({
      store,
      tickets: new MemoryTicketQueue(),
      workQueue: deps.workQueue,
      clock: deps.clock,
    });
    const key = keyOf('lookup-agent', 'T-b12');
    await acceptTicket(ticketBody('lookup-agent', 'T-b12', { ids: ['a'] }), undefined, deps);
    const first = await client.cancel(key.id);
    let seen: { status?: string | undefined; cancel?: string } | undefined;
    store.beforeWrite = async (operation) => {
      if (operation !== 'release' || seen) return;
      seen = {};
      seen.status = (await client.status(key.id))?.status;
      seen.cancel = await client.cancel(key.id);
    };

    // Act
    await drain(deps);

    // Assert
    expect(first).toBe('requested');
    expect(seen).toEqual({ status: 'cancelled', cancel: 'already-finished' });
    expect((await client.status(key.id))?.status).toBe('cancelled');
    expect(await client.cancel(key.id)).toBe('already-finished');
  });

  it('bug 8: a conversation used on day 0 and day 14 keeps the head of its journal on day 31', async () => {
    // Arrange
    const { deps, store, clock, results, client, key, expiries } = chatDeps();
    await acceptTicket(ticketBody('chat', 'T1', 'hello'), undefined, deps);
    await drain(deps);
    clock.advance(14 * DAY_MS);
    await client.send(key.id, 'again', { id: 'T2' });
    await drain(deps);
    const afterDay14 = await expiries(['T1', 'T2']);

    // Act: DynamoDB's TTL deletes what has expired by day 31; the conversation goes on.
    clock.advance(17 * DAY_MS);
    store.expireItems(Math.floor(clock.now() / 1000));
    await client.send(key.id, 'still there?', { id: 'T3' });
    await drain(deps);

    // Assert: the third turn read the whole conversation; no item expired before the record.
    expect(results.bodies.map((r) => [r.turnId, r.status, r.output])).toEqual([
      ['T1', 'completed', 'turn 1: hello'],
      ['T2', 'completed', 'turn 2: again'],
      ['T3', 'completed', 'turn 3: still there?'],
    ]);
    expect(Math.min(...afterDay14.items.map((ttl) => ttl ?? Number.POSITIVE_INFINITY))).toBeGreaterThanOrEqual(
      afterDay14.record,
    );
  });

  it('bug 11: a turn sent with send expires with its session, not never', async () => {
    // Arrange
    const { deps, store, clock, client, key, expiries } = chatDeps();
    await acceptTicket(ticketBody('chat', 'T1', 'hello'), undefined, deps);
    await drain(deps);

    // Act: a turn is sent and runs; the session then lies unused past its retention.
    await client.send(key.id, 'again', { id: 'T2' });
    const sent = await expiries(['T2']);
    await drain(deps);
    const ended = await expiries(['T1', 'T2']);
    clock.advance(46 * DAY_MS);
    store.expireItems(Math.floor(clock.now() / 1000));

    // Assert: the sent turn carried an expiry from its write on, no earlier than the record's,
    // and nothing of the session is left after its retention.
    expect(sent.items[0]).toBeGreaterThanOrEqual(sent.record);
    expect(ended.items.every((ttl) => ttl !== undefined && ttl >= ended.record)).toBe(true);
    expect(await store.getSession(key)).toBeUndefined();
    expect(store.rawItem(key, turnSk('T2'))).toBeUndefined();
    expect(await store.readJournal(key)).toEqual([]);
  });
});
