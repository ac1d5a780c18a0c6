import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryTicketQueue, type MemoryWorkQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, toolResults } from '../../../lib/agent/scripted-model.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const userTexts = (messages: readonly ChatMessage[]) =>
  messages.flatMap((m) => (m.role === 'user' ? m.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])) : []));

function payAgent(
  options: { onPay?: () => Promise<unknown>; reconcileUnknown?: boolean; approvalTimeoutMs?: number } = {},
) {
  let paid = 0;
  const pay = defineTool({
    name: 'pay',
    description: 'Pays.',
    input: z.object({ amount: z.number() }),
    effect: 'once',
    maxDurationMs: 200,
    requiresApproval: ({ amount }) => amount > 10,
    approvalTimeoutMs: options.approvalTimeoutMs,
    run: async () => {
      await options.onPay?.();
      return { receipt: `R-${++paid}` };
    },
    reconcile: async () => (options.reconcileUnknown ? { verdict: 'unknown' } : { verdict: 'notDone' }),
  });
  const agent = defineAgent({
    name: 'payer',
    instructions: 'Pay.',
    conversation: true,
    tools: [pay],
    model: scriptedModel({
      maxDurationMs: 1_000,
      script: (messages) => {
        const result = toolResults(messages).get('p1');
        if (!result) return { toolCalls: [{ id: 'p1', name: 'pay', input: { amount: 50 } }] };
        const notes = userTexts(messages).slice(1);
        const said = result.ok ? JSON.stringify(result.output) : JSON.stringify(result.output);
        return { final: `${said}${notes.length ? ` notes: ${notes.join(', ')}` : ''}` };
      },
    }),
  });
  return { agent, paid: () => paid };
}

function clientOf(deps: RuntimeDeps) {
  return new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });
}

/** The test deps' config with an inbox look at every step boundary. */
const EVERY_BOUNDARY_CONFIG = {
  leaseTtlMs: 1_500,
  reserveMs: 200,
  retentionDays: 1,
  sweepGraceMs: 1_500,
  inboxLookMs: 0,
};

const sessionOf = (ticketId: string) => deriveSessionId('default', 'payer', ticketId);

describe('conversations: approvals, messages and parked calls', () => {
  it('stops at a call that needs approval holding no lease, and resumes when a human approves', async () => {
    // Arrange
    const { agent, paid } = payAgent();
    const { deps, store, results } = makeTestDeps([agent]);
    const client = clientOf(deps);
    await acceptTicket(ticketBody('payer', 'A1', 'pay 50'), undefined, deps);
    await drain(deps);
    const waiting = await client.status(sessionOf('A1'));

    // Act
    await client.approve(sessionOf('A1'), 'p1', { approved: true });
    await drain(deps);

    // Assert
    expect(waiting).toMatchObject({
      status: 'waiting',
      pendingApprovals: [{ callId: 'p1', tool: 'pay', input: { amount: 50 } }],
    });
    expect((await store.getSession({ tenant: 'default', agent: 'payer', id: sessionOf('A1') }))?.owner).toBeUndefined();
    expect(paid()).toBe(1);
    expect(results.bodies.at(-1)).toMatchObject({ status: 'completed', output: '{"receipt":"R-1"}' });
    expect((await client.status(sessionOf('A1')))?.status).toBe('idle');
  });

  it('gives a denial back to the model as the tool’s result, and refuses an approval nothing waits for', async () => {
    // Arrange
    const { agent, paid } = payAgent();
    const { deps, results } = makeTestDeps([agent]);
    const client = clientOf(deps);
    await acceptTicket(ticketBody('payer', 'A2', 'pay 50'), undefined, deps);
    await drain(deps);

    // Act
    const unknownCall = await client.approve(sessionOf('A2'), 'nope', { approved: true }).catch((e: unknown) => e);
    await client.approve(sessionOf('A2'), 'p1', { approved: false, reason: 'too much' });
    await drain(deps);

    // Assert
    expect(unknownCall).toMatchObject({ message: expect.stringContaining('no pending approval for call nope') });
    expect(paid()).toBe(0);
    expect(results.bodies.at(-1)?.output).toContain('denied by a human: too much');
  });

  it('journals a message sent from another process before the running turn’s next model call', async () => {
    // Arrange
    let deps: RuntimeDeps | undefined;
    const { agent } = payAgent({
      // While the approved call runs, another process tells the turn something.
      onPay: () => clientOf(deps!).send(sessionOf('M1'), 'ship fast', { mode: 'inject', id: 'm-1' }),
    });
    // Every step boundary reads the record (no look interval), so the message lands at the first one.
    const test = makeTestDeps([agent], { config: { ...EVERY_BOUNDARY_CONFIG } });
    deps = test.deps;
    await acceptTicket(ticketBody('payer', 'M1', 'pay 50'), undefined, deps);
    await drain(deps);

    // Act
    await clientOf(deps).approve(sessionOf('M1'), 'p1', { approved: true });
    await drain(deps);

    // Assert
    const journal = await test.store.readJournal({ tenant: 'default', agent: 'payer', id: sessionOf('M1') });
    const kinds = journal.map((e) => e.kind);
    expect(kinds.lastIndexOf('message')).toBeGreaterThan(kinds.lastIndexOf('tool'));
    expect(kinds.lastIndexOf('message')).toBeLessThan(kinds.lastIndexOf('model'));
    expect(test.results.bodies.at(-1)?.output).toBe('{"receipt":"R-1"} notes: ship fast');
  });

  it('resumes a parked once-only call resolved done without running the tool again', async () => {
    // Arrange
    const { agent, paid } = payAgent({ reconcileUnknown: true });
    const crash = new FailpointCrash('after-intent');
    const dying = makeTestDeps([agent], {
      failpoint: async (name) => {
        if (name === 'after-intent') throw crash;
      },
    });
    const { deps, store, results, clock } = dying;
    await acceptTicket(ticketBody('payer', 'P1', 'pay 50'), undefined, deps);
    await drain(deps);
    await clientOf(deps).approve(sessionOf('P1'), 'p1', { approved: true });
    await expect(drain(deps)).rejects.toBe(crash);
    const healthy = { ...deps, failpoint: async () => {} };
    const key = { tenant: 'default', agent: 'payer', id: sessionOf('P1') };
    // The dead owner's lease runs out in virtual time, then a recovery takes over.
    clock.advance(deps.config.leaseTtlMs + 100);
    await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), healthy);
    const parked = await clientOf(healthy).status(key.id);

    // Act
    await clientOf(healthy).resolve(key.id, 'p1', { done: true, output: { receipt: 'R-manual' } });
    await drain(healthy);

    // Assert
    expect(parked).toMatchObject({ status: 'waiting', parked: { callId: 'p1', tool: 'pay' } });
    expect(paid()).toBe(0);
    expect(results.bodies.at(-1)).toMatchObject({ status: 'completed', output: '{"receipt":"R-manual"}' });
    expect((await store.readJournal(key)).filter((e) => e.kind === 'reconciled').map((e) => e.data)).toEqual([
      { callId: 'p1', verdict: 'unknown' },
      // The verdict's inbox id comes from the park's seq: a call parked again gets a verdict of its own.
      { callId: 'p1', verdict: 'done', output: { receipt: 'R-manual' }, id: expect.stringMatching(/^resolve:\d+:p1$/) },
    ]);
  });

  it('denies a call by default when its approval timeout passes with no decision, on a durable timer', async () => {
    // Arrange
    const { agent, paid } = payAgent({ approvalTimeoutMs: 3_600_000 });
    const { deps, store, results, clock } = makeTestDeps([agent]);
    const client = clientOf(deps);
    const requestedAt = clock.now();
    await acceptTicket(ticketBody('payer', 'T1', 'pay 50'), undefined, deps);
    const key = { tenant: 'default', agent: 'payer', id: sessionOf('T1') };

    // Act
    await drain(deps);
    const late = await client.approve(sessionOf('T1'), 'p1', { approved: true }).catch((e: unknown) => e);

    // Assert
    expect(paid()).toBe(0);
    expect(clock.now()).toBeGreaterThanOrEqual(requestedAt + 3_600_000);
    expect(results.bodies.map((r) => [r.status, r.output])).toEqual([
      ['completed', '{"error":"denied by default: approval timed out"}'],
    ]);
    const decision = (await store.readJournal(key)).find((e) => e.kind === 'decision');
    expect(decision?.data).toEqual({
      callId: 'p1',
      modelSeq: 2,
      tool: 'pay',
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      approved: false,
      reason: 'approval timed out',
    });
    expect(late).toMatchObject({ message: expect.stringContaining('no pending approval for call p1') });
  });

  it('shows the approval deadline as wakeAt and resumes when a human approves before it', async () => {
    // Arrange
    const { agent, paid } = payAgent({ approvalTimeoutMs: 3_600_000 });
    const { deps, results, clock } = makeTestDeps([agent]);
    const client = clientOf(deps);
    await acceptTicket(ticketBody('payer', 'T2', 'pay 50'), undefined, deps);
    const requestedAt = clock.now();
    const queue = deps.workQueue as MemoryWorkQueue;
    for (let ready = queue.receive(); ready.length > 0; ready = queue.receive())
      for (const m of ready) await runKick(m.body, invocation(60_000, clock), deps);
    const waiting = await client.status(sessionOf('T2'));

    // Act
    await client.approve(sessionOf('T2'), 'p1', { approved: true });
    await drain(deps);

    // Assert
    expect(waiting?.wakeAt).toBe(new Date(requestedAt + 3_600_000).toISOString());
    expect(paid()).toBe(1);
    expect(results.bodies.map((r) => [r.status, r.output])).toEqual([['completed', '{"receipt":"R-1"}']]);
  });

  it('resumes a turn whose approval is answered days later', async () => {
    // Arrange
    const { agent, paid } = payAgent();
    const { deps, results, clock } = makeTestDeps([agent], {
      config: { leaseTtlMs: 1_500, reserveMs: 200, retentionDays: 30, sweepGraceMs: 1_500 },
    });
    const client = clientOf(deps);
    await acceptTicket(ticketBody('payer', 'D1', 'pay 50'), undefined, deps);
    await drain(deps);
    clock.advance(3 * 24 * 3_600_000);

    // Act
    await client.approve(sessionOf('D1'), 'p1', { approved: true });
    await drain(deps);

    // Assert
    expect(paid()).toBe(1);
    expect(results.bodies.map((r) => [r.status, r.output])).toEqual([['completed', '{"receipt":"R-1"}']]);
    expect((await client.status(sessionOf('D1')))?.status).toBe('idle');
  });
});
