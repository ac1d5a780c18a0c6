import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import type { MemorySessionStore } from '../../../lib/adapters/memory/memory-session-store.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { buildTranscript } from '../../../lib/agent/transcript.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { TurnRefusedError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/**
 * Issue 22: the exits of a leg that move a session out of `queued` — the end of a turn, the end
 * of a session — are fenced on pendingVersion and settle every accepted turn; a turn ends only
 * after its interrupted once-only calls are reconciled.
 */

const keyOf = (agent: string, ticketId: string): SessionKey => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

const lastText = (messages: readonly ChatMessage[]) => {
  const texts = messages.filter((m) => m.role === 'user').flatMap((m) => m.content.filter((c) => c.type === 'text'));
  const last = texts.at(-1);
  return last?.type === 'text' ? last.text : '';
};

const chat = defineAgent({
  name: 'chat',
  instructions: 'Echo.',
  conversation: true,
  model: scriptedModel({ maxDurationMs: 1_000, script: (m) => ({ final: `echo: ${lastText(m)}` }) }),
});

const clientOf = (deps: RuntimeDeps) =>
  new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });

/** A conversation whose first turn ran; `onEndTurn` runs once, just before the next endTurn write. */
async function conversation(ticketId: string) {
  const test = makeTestDeps([chat]);
  await acceptTicket(ticketBody('chat', ticketId, 'hello'), undefined, test.deps);
  await drain(test.deps);
  const key = keyOf('chat', ticketId);
  const beforeEndTurn = (run: () => Promise<void>) => {
    let armed = true;
    test.store.beforeWrite = async (operation) => {
      if (operation !== 'endTurn' || !armed) return;
      armed = false;
      await run();
    };
  };
  return { ...test, key, client: clientOf(test.deps), beforeEndTurn };
}

/** A once-only refund that executes every call it receives; its reconcile answers truthfully. */
function refundTool() {
  const executed: string[] = [];
  const reconciled: string[] = [];
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
    reconcile: async (key) => {
      reconciled.push(key);
      return executed.includes(key) ? { verdict: 'done', output: { refunded: true } } : { verdict: 'notDone' };
    },
  });
  return { executed, reconciled, refund };
}

/** The worker dies after a once-only call ran, before its result is journaled (once). */
function crashAfterOnceOnlyRan(store: MemorySessionStore): void {
  let armed = true;
  store.beforeWrite = async (operation, key) => {
    if (operation !== 'append' || !armed) return;
    if ((await store.readJournal(key)).at(-1)?.kind !== 'intent') return;
    armed = false;
    throw new FailpointCrash('after-intent');
  };
}

describe('a leg that ends a turn or a session (issue 22)', () => {
  it('bug 1: a cancel that lands just before a conversation turn ends is carried out, not absorbed by the end of the turn', async () => {
    // Arrange: the cancel lands after the finishing leg read the record, before its endTurn, and
    // its kick finds the lease held.
    const { deps, store, results, key, client, beforeEndTurn } = await conversation('C1');
    let answer: string | undefined;
    beforeEndTurn(async () => {
      answer = await client.cancel(key.id);
      // Its kick arrives at once and is dropped: the finishing leg still holds the lease.
      expect(await drain(deps)).toEqual(['dropped']);
    });

    // Act
    await client.send(key.id, 'second', { id: 'T2' });
    await drain(deps);

    // Assert: the turn keeps its outcome; the conversation ends cancelled, not idle.
    expect(answer).toBe('requested');
    expect((await store.getTurn(key, 'T2'))?.outcome?.status).toBe('completed');
    expect(await store.getSession(key)).toMatchObject({ state: 'cancelled', cancelRequested: true });
    expect(results.bodies.filter((r) => r.turnId === 'T2').map((r) => r.status)).toEqual(['completed']);
    // A later turn is refused, not cancelled on arrival.
    await expect(client.send(key.id, 'third', { id: 'T3' })).rejects.toThrow(TurnRefusedError);
  });

  it('bug 2: a release asked for just before a conversation turn ends is carried out', async () => {
    // Arrange
    const { deps, store, key, client, beforeEndTurn } = await conversation('C2');
    let released: Promise<{ released: boolean }> | undefined;
    beforeEndTurn(async () => {
      // The release waits for its entry: start it, and go on once its mark is on the record.
      released = client.release(key.id, { timeoutS: 1 });
      while (!(await store.getSession(key))?.releaseRequested) await new Promise((r) => setImmediate(r));
    });

    // Act
    await client.send(key.id, 'second', { id: 'T2' });
    await drain(deps);

    // Assert
    expect((await released)?.released).toBe(true);
    expect((await store.readJournal(key)).some((e) => e.kind === 'released')).toBe(true);
    expect(await store.getSession(key)).toMatchObject({ state: 'idle' });
    expect((await store.getSession(key))?.pendingVersion).toBe((await store.getSession(key))?.seenVersion);
    await expect(client.send(key.id, 'third', { id: 'T3' })).rejects.toThrow(/released/);
  });

  it('seed 2229: a release the leg saw at its acquire is carried out when a crash loop fails the turn', async () => {
    // Arrange: a conversation whose second turn kills every leg; a release lands between them.
    const looping = defineAgent({
      name: 'looping',
      instructions: 'Echo.',
      conversation: true,
      model: scriptedModel({ maxDurationMs: 1_000, script: (m) => ({ final: `echo: ${lastText(m)}` }) }),
      limits: { maxRecoveries: 1 },
    });
    let crashing = false;
    const { deps, store, clock } = makeTestDeps([looping], {
      config: { leaseTtlMs: 200, reserveMs: 50, retentionDays: 1, sweepGraceMs: 200 },
      failpoint: async (name) => {
        if (crashing && name === 'after-append') throw new FailpointCrash(name);
      },
    });
    await acceptTicket(ticketBody('looping', 'L1', 'hello'), undefined, deps);
    await drain(deps);
    const key = keyOf('looping', 'L1');
    const client = clientOf(deps);
    const leg = async (reason: 'first' | 'recovery') => {
      try {
        return await runKick({ v: 1, session: key, reason }, invocation(60_000, deps.clock), deps);
      } catch (error) {
        if (error instanceof FailpointCrash) return 'crashed';
        throw error;
      }
    };
    crashing = true;
    await client.send(key.id, 'second', { id: 'T2' });
    expect(await leg('first')).toBe('crashed');
    expect((await client.release(key.id, { waitMs: 0 })).released).toBe(false);
    for (let i = 0; i < 2; i++) {
      clock.advance(250);
      expect(await leg('recovery')).toBe('crashed');
    }

    // Act: the next recovery finds the crash loop.
    crashing = false;
    clock.advance(250);
    await leg('recovery');
    await drain(deps);

    // Assert: the turn failed as a crash loop, and the release was carried out, not left unseen.
    expect((await store.getTurn(key, 'T2'))?.outcome).toMatchObject({ status: 'failed', error: /crash loop/ });
    expect((await store.readJournal(key)).some((e) => e.kind === 'released')).toBe(true);
    expect(await store.getSession(key)).toMatchObject({ state: 'idle' });
    expect((await client.release(key.id, { waitMs: 0 })).released).toBe(true);
  });

  it('seed 2229: a release asked again after the first one’s bound passed waits its own bound for the holder it woke', async () => {
    // Arrange: a release whose mark no leg carried out (its kick was lost) past its bound.
    const { deps, store, workQueue, key, client, clock } = await conversation('C2b');
    expect((await client.release(key.id, { timeoutS: 1, waitMs: 0 })).released).toBe(false);
    workQueue.receive();
    clock.advance(10 * 60_000);

    // Act: asked again; a worker picks up the kick this ask sends once the ask has looked once.
    let reads = 0;
    const read = store.readJournal.bind(store);
    store.readJournal = (...args) => {
      reads++;
      return read(...args);
    };
    const again = client.release(key.id, { timeoutS: 1 });
    while (reads === 0 || workQueue.pendingCount === 0) await new Promise((r) => setImmediate(r));
    await drain(deps);

    // Assert
    await expect(again).resolves.toMatchObject({ released: true });
  });

  it('bug 3: cancelling a conversation gives every turn queued behind the active one its outcome and its result', async () => {
    // Arrange: two turns wait behind a running one when the cancel lands.
    const { deps, store, results, key, client } = await conversation('C3');
    await client.send(key.id, 'active', { id: 'A' });
    await client.send(key.id, 'queued 1', { id: 'Q1' });
    await client.send(key.id, 'queued 2', { id: 'Q2' });

    // Act
    await client.cancel(key.id);
    await drain(deps);

    // Assert
    expect(await store.getSession(key)).toMatchObject({ state: 'cancelled' });
    for (const turnId of ['A', 'Q1', 'Q2']) {
      expect((await store.getTurn(key, turnId))?.outcome?.status).toBe('cancelled');
      expect(results.bodies.filter((r) => r.turnId === turnId).map((r) => r.status)).toEqual(['cancelled']);
    }
    const status = await client.status(key.id);
    expect(status?.turns?.filter((t) => t.status === 'queued')).toEqual([]);
  });

  it('bug 9: a further-turn ticket refused as full gets the refusal as its turn outcome, so status never lists it queued', async () => {
    // Arrange: a conversation whose queue is full.
    const test = makeTestDeps([chat], {});
    const deps = { ...test.deps, config: { ...test.deps.config, maxPendingInputs: 1 } };
    await acceptTicket(ticketBody('chat', 'C9', 'hello'), undefined, deps);
    await drain(deps);
    const key = keyOf('chat', 'C9');
    const further = (ticketId: string) => JSON.stringify({ ticketId, agent: 'chat', input: 'more', sessionId: key.id });
    await acceptTicket(further('A'), undefined, deps);
    await acceptTicket(further('B'), undefined, deps);

    // Act
    const refused = await acceptTicket(further('C'), undefined, deps).catch((error: unknown) => error);

    // Assert
    expect(refused).toBeInstanceOf(TurnRefusedError);
    expect((await test.store.getTurn(key, 'C'))?.outcome).toMatchObject({ status: 'failed' });
    expect((await test.store.getTurn(key, 'C'))?.outcome?.error).toMatch(/turn C refused/);
    await drain(deps);
    const status = await clientOf(deps).status(key.id);
    expect(status?.turns?.filter((t) => t.status === 'queued')).toEqual([]);
  });

  it('bug 10: a steer that lands on a turn whose once-only call was interrupted reconciles it first, so the refund runs once', async () => {
    // Arrange: the refund ran and the worker died before its result was journaled.
    const { executed, refund } = refundTool();
    const desk = defineAgent({
      name: 'desk',
      instructions: 'Refund when asked; otherwise echo.',
      conversation: true,
      tools: [refund],
      model: scriptedModel({
        maxDurationMs: 1_000,
        // Refund once per turn that asks for it, unless the transcript shows a refund result.
        script: (messages) => {
          const asked = lastText(messages).includes('refund');
          const answered = messages.some(
            (m) => m.role === 'user' && m.content.some((c) => c.type === 'toolResult' && c.ok),
          );
          return asked && !answered
            ? { toolCalls: [{ id: 'r1', name: 'refund', input: { id: 'order-1' } }] }
            : { final: `done: ${lastText(messages)}` };
        },
      }),
    });
    const { deps, store, clock } = makeTestDeps([desk]);
    const key = keyOf('desk', 'C10');
    await acceptTicket(ticketBody('desk', 'C10', 'hello'), undefined, deps);
    await drain(deps);
    const client = clientOf(deps);
    await client.send(key.id, 'please refund', { id: 'R' });
    crashAfterOnceOnlyRan(store);
    await expect(drain(deps)).rejects.toThrow(/after-intent/);
    store.beforeWrite = undefined;

    // Act: a steering turn arrives while the lease of the dead leg runs out; a recovery runs.
    await client.send(key.id, 'never mind, please refund anyway', { id: 'S', mode: 'steer' });
    clock.advance(deps.config.leaseTtlMs + 1);
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    await drain(deps);

    // Assert: one refund; the steering turn's model saw it done.
    expect(executed).toHaveLength(1);
    const entries = await store.readJournal(key);
    expect(entries.find((e) => e.kind === 'reconciled')).toMatchObject({ data: { verdict: 'done' } });
    const steered = entries.findIndex((e) => e.kind === 'input' && e.turnId === 'S');
    const transcript = buildTranscript(entries.slice(0, steered + 1));
    expect(transcript.some((m) => m.role === 'user' && m.content.some((c) => c.type === 'toolResult' && c.ok))).toBe(
      true,
    );
    expect((await store.getTurn(key, 'S'))?.outcome?.status).toBe('completed');
  });

  it('bug 10: a cancel that lands on a turn whose once-only call was interrupted reconciles it before the turn ends', async () => {
    // Arrange
    const { executed, reconciled, refund } = refundTool();
    const agent = defineAgent({
      name: 'refunder',
      instructions: 'Refund.',
      tools: [refund],
      model: scriptedModel({
        maxDurationMs: 1_000,
        script: () => ({ toolCalls: [{ id: 'r1', name: 'refund', input: { id: 'order-1' } }] }),
      }),
    });
    const { deps, store, clock } = makeTestDeps([agent]);
    const key = keyOf('refunder', 'C10b');
    await acceptTicket(ticketBody('refunder', 'C10b', 'refund'), undefined, deps);
    crashAfterOnceOnlyRan(store);
    await expect(drain(deps)).rejects.toThrow(/after-intent/);
    store.beforeWrite = undefined;

    // Act
    await clientOf(deps).cancel(key.id);
    clock.advance(deps.config.leaseTtlMs + 1);
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    await drain(deps);

    // Assert: reconciled (done), then cancelled; never run again.
    expect(executed).toHaveLength(1);
    expect(reconciled).toEqual(executed);
    const kinds = (await store.readJournal(key)).map((e) => e.kind);
    expect(kinds.indexOf('reconciled')).toBeGreaterThan(-1);
    expect(kinds.indexOf('reconciled')).toBeLessThan(kinds.indexOf('outcome'));
    expect((await store.getTurn(key, 'C10b'))?.outcome?.status).toBe('cancelled');
  });

  it('a leg paused between its acquire and its journal read, which finds a newer owner’s marker, stops without writing (simulator seed)', async () => {
    // Arrange: leg A acquires, then stalls (its journal read and its renewals with it) as a paused
    // process would; its lease expires and a recovery, leg B, marks the journal and runs the turn.
    const { deps, store, clock, results } = makeTestDeps([chat]);
    const key = keyOf('chat', 'P1');
    let resumeA!: () => void;
    const stalled = new Promise<void>((resolve) => {
      resumeA = resolve;
    });
    let ownerA: string | undefined;
    let reachedA!: () => void;
    const reached = new Promise<void>((resolve) => {
      reachedA = resolve;
    });
    const gated = new Proxy(store, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name === 'readJournal')
          return async (...args: Parameters<typeof store.readJournal>) => {
            if (ownerA === undefined) {
              ownerA = (await target.getSession(key))?.owner;
              reachedA();
              await stalled;
            }
            return target.readJournal(...args);
          };
        if (name === 'renew')
          return async (...args: Parameters<typeof store.renew>) => {
            if (args[1].owner === ownerA) await stalled;
            return target.renew(...args);
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const stalling = { ...deps, store: gated };
    await acceptTicket(ticketBody('chat', 'P1', 'hello'), undefined, deps);
    const [kick] = (deps.workQueue as typeof deps.workQueue & { receive(): { body: never }[] }).receive();
    const legA = runKick(kick!.body, invocation(60_000, clock), stalling);
    await reached;

    // Act
    clock.advance(deps.config.leaseTtlMs + 1);
    const legB = await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), stalling);
    resumeA();

    // Assert: A stops; the journal holds no entry of A's after B's marker, and the turn ran once.
    expect(legB).toBe('finished');
    expect(await legA).toBe('lease-lost');
    const entries = await store.readJournal(key);
    expect(entries.map((e) => e.epoch)).toEqual(entries.map(() => 2));
    expect(results.bodies.map((r) => r.status)).toEqual(['completed']);
  });
});
