import type { ConverseCommandOutput } from '@aws-sdk/client-bedrock-runtime';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { modelResponse } from '../../../lib/adapters/bedrock/bedrock-model-client.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import type { ModelClient } from '../../../lib/ports/model-client.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/**
 * Issue 22 bugs 6 and 7, issue 23 items 1 and 2: the identities of decisions and inbox items come
 * from the journal, and an approval names exactly what runs (DESIGN.md invariant 12).
 */

const usage = { inputTokens: 1, outputTokens: 1 };
const keyOf = (agent: string, ticketId: string) => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

function clientOf(deps: RuntimeDeps) {
  return new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });
}

/** A payment tool that asks a human above 10 and records every amount it pays. */
function payTool(paid: number[], options: { reconcileUnknown?: boolean; approvalTimeoutMs?: number } = {}) {
  return defineTool({
    name: 'pay',
    description: 'Pays.',
    input: z.object({ amount: z.number() }),
    effect: 'once',
    maxDurationMs: 200,
    requiresApproval: ({ amount }) => amount > 10,
    approvalTimeoutMs: options.approvalTimeoutMs,
    run: async ({ amount }) => {
      paid.push(amount);
      return { receipt: `R-${paid.length}` };
    },
    reconcile: async () => (options.reconcileUnknown ? { verdict: 'unknown' } : { verdict: 'notDone' }),
  });
}

/** A model that asks for each of `amounts` in turn, every time with the call id `p1`, then answers. */
const payEachWithOneId = (amounts: readonly number[]) =>
  scriptedModel({
    maxDurationMs: 1_000,
    script: (messages) => {
      const asked = messages.filter((m) => m.role === 'assistant').length;
      const amount = amounts[asked];
      return amount === undefined ? { final: 'paid' } : { toolCalls: [{ id: 'p1', name: 'pay', input: { amount } }] };
    },
  });

/** A payer session whose one payment (50, call p1) waits for a human's decision. */
async function paymentWaiting(ticket: string) {
  const paid: number[] = [];
  const agent = defineAgent({
    name: 'payer',
    instructions: 'Pay.',
    tools: [payTool(paid)],
    model: payEachWithOneId([50]),
  });
  const { deps, store } = makeTestDeps([agent]);
  await acceptTicket(ticketBody('payer', ticket, 'pay'), undefined, deps);
  await drain(deps);
  return { paid, deps, store, client: clientOf(deps), key: keyOf('payer', ticket) };
}

describe('decisions and inbox items are identified by the journal (issue 22: 6, 7; issue 23: 1, 2)', () => {
  it('issue 22 bug 6: resolves a once-only call parked a second time (each park has its own resolution)', async () => {
    // Arrange: every attempt dies between its watermark and its result, and reconcile cannot tell.
    const paid: number[] = [];
    const agent = defineAgent({
      name: 'payer',
      instructions: 'Pay.',
      tools: [payTool(paid, { reconcileUnknown: true })],
      model: payEachWithOneId([5]),
    });
    const crash = new FailpointCrash('after-intent');
    const { deps, results, clock } = makeTestDeps([agent], {
      failpoint: async (name) => {
        if (name === 'after-intent') throw crash;
      },
    });
    const key = keyOf('payer', 'R2');
    const client = clientOf(deps);
    const recover = async () => {
      clock.advance(deps.config.leaseTtlMs + 100);
      await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps);
    };
    await acceptTicket(ticketBody('payer', 'R2', 'pay'), undefined, deps);
    await expect(drain(deps)).rejects.toBe(crash);
    await recover();
    await client.resolve(key.id, 'p1', { done: false });
    await expect(drain(deps)).rejects.toBe(crash);
    await recover();
    const parkedAgain = await client.status(key.id);

    // Act: the operator learns the second attempt did happen.
    await client.resolve(key.id, 'p1', { done: true, output: { receipt: 'R-manual' } });
    await drain(deps);

    // Assert
    expect(parkedAgain).toMatchObject({ status: 'waiting', parked: { callId: 'p1', tool: 'pay' } });
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'paid' })]);
  });

  it('issue 22 bug 7: an approval does not run a later call of the turn that reuses its call id', async () => {
    // Arrange
    const paid: number[] = [];
    const agent = defineAgent({
      name: 'payer',
      instructions: 'Pay.',
      tools: [payTool(paid)],
      model: payEachWithOneId([50, 5_000]),
    });
    const { deps, results } = makeTestDeps([agent]);
    const client = clientOf(deps);
    const key = keyOf('payer', 'I1');
    await acceptTicket(ticketBody('payer', 'I1', 'pay'), undefined, deps);
    await drain(deps);

    // Act
    await client.approve(key.id, 'p1', { approved: true });
    await drain(deps);

    // Assert: the second call waits for its own approval.
    expect(paid).toEqual([50]);
    expect(results.bodies).toEqual([]);
    expect(await client.status(key.id)).toMatchObject({
      status: 'waiting',
      pendingApprovals: [{ callId: 'p1', tool: 'pay', input: { amount: 5_000 } }],
    });
  });

  it('issue 23 item 1: drops a decision posted for an earlier call that a later call with the same id now awaits', async () => {
    // Arrange: the first call's approval times out; the model asks again with the same id, for more.
    const paid: number[] = [];
    const agent = defineAgent({
      name: 'payer',
      instructions: 'Pay.',
      tools: [payTool(paid, { approvalTimeoutMs: 60_000 })],
      model: payEachWithOneId([50, 5_000]),
    });
    const { deps, store, lines } = makeTestDeps([agent]);
    const key = keyOf('payer', 'I2');
    await acceptTicket(ticketBody('payer', 'I2', 'pay'), undefined, deps);
    await drain(deps, { maxKicks: 1 });
    const first = await clientOf(deps).status(key.id);
    await drain(deps, { maxKicks: 1 });
    const second = await clientOf(deps).status(key.id);

    // Act: the human's answer to the first request arrives now, naming the call by its id alone.
    const now = deps.clock.now();
    await store.postInbox(key, {
      item: { kind: 'decision', id: 'decision:p1', callId: 'p1', approved: true },
      now,
      sweepAt: now,
      maxPending: 10,
    });
    await runKick({ v: 1, session: key, reason: 'wake' }, invocation(60_000, deps.clock), deps);

    // Assert
    expect(first?.pendingApprovals).toEqual([expect.objectContaining({ input: { amount: 50 } })]);
    expect(second?.pendingApprovals).toEqual([expect.objectContaining({ input: { amount: 5_000 } })]);
    expect(paid).toEqual([]);
    expect(lines.some((l) => /dropped/.test(String(l.message)))).toBe(true);
  });

  it('issue 23 item 1: gives tool calls without an id (the Bedrock adapter’s empty id) distinct ids', async () => {
    // Arrange: Bedrock answers two tool uses that carry no toolUseId.
    const paid: number[] = [];
    let asked = 0;
    const model: ModelClient = {
      id: 'idless',
      maxDurationMs: 1_000,
      async converse() {
        if (asked++ > 0) return { text: 'paid', toolCalls: [], stopReason: 'end_turn', usage };
        return modelResponse({
          output: {
            message: {
              role: 'assistant',
              content: [
                { toolUse: { name: 'pay', input: { amount: 1 } } },
                { toolUse: { name: 'pay', input: { amount: 2 } } },
              ],
            },
          },
          stopReason: 'tool_use',
          usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        } as unknown as ConverseCommandOutput);
      },
    };
    const agent = defineAgent({ name: 'payer', instructions: 'Pay.', tools: [payTool(paid)], model });
    const { deps, store, results } = makeTestDeps([agent]);

    // Act
    await acceptTicket(ticketBody('payer', 'N1', 'pay'), undefined, deps);
    await drain(deps);

    // Assert
    const journal = await store.readJournal(keyOf('payer', 'N1'));
    const ids = journal.flatMap((e) => (e.kind === 'model' ? e.data.toolCalls.map((c) => c.id) : []));
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => /^[a-zA-Z0-9_-]+$/.test(id))).toBe(true);
    expect(paid.sort()).toEqual([1, 2]);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'paid' })]);
  });

  it('issue 23 item 1: the client posts the whole identity of the call it approves, and refuses a pin that names another', async () => {
    // Arrange
    const { store, client, key } = await paymentWaiting('C1');
    const [waiting] = (await client.status(key.id))?.pendingApprovals ?? [];

    // Act
    const otherEntry = await client
      .approve(key.id, { callId: 'p1', modelSeq: 99 }, { approved: true })
      .catch((e: unknown) => e);
    const otherInput = await client
      .approve(key.id, { callId: 'p1', digest: '0'.repeat(64) }, { approved: true })
      .catch((e: unknown) => e);
    const inboxAfterRefusals = (await store.getSession(key))?.inbox.length;
    const named = await client.approve(key.id, 'p1', { approved: true });

    // Assert
    expect(waiting).toEqual({
      modelSeq: 2,
      callId: 'p1',
      tool: 'pay',
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      input: { amount: 50 },
    });
    expect(otherEntry).toMatchObject({
      message: expect.stringContaining('no pending approval for call p1 of model entry 99'),
    });
    expect(otherInput).toMatchObject({ message: expect.stringContaining('no pending approval for call p1') });
    expect(inboxAfterRefusals).toBe(0);
    const { input: _input, ...identity } = waiting!;
    expect(named).toEqual(identity);
    expect((await store.getSession(key))?.inbox).toEqual([
      { kind: 'decision', id: 'decision:3:p1', ...identity, approved: true },
    ]);
  });

  it('refuses a decision that contradicts one already waiting for the same call, rather than answer it was posted', async () => {
    // Arrange: a payment waits for a human, and one approver has approved it (not yet taken by a leg).
    const { paid, deps, store, client, key } = await paymentWaiting('C2');
    await client.approve(key.id, 'p1', { approved: true });

    // Act: the same approval again, then a denial of the same call.
    const again = await client.approve(key.id, 'p1', { approved: true });
    const denial = await client.approve(key.id, 'p1', { approved: false, reason: 'too much' }).catch((e: unknown) => e);
    await drain(deps);

    // Assert: a repeat is the same decision; the denial is refused, naming the decision that stands.
    expect(again).toMatchObject({ callId: 'p1', modelSeq: 2 });
    expect(denial).toMatchObject({
      name: 'InvalidInputError',
      message: expect.stringContaining('call p1 already has a decision waiting (approved)'),
    });
    expect(paid).toEqual([50]);
    expect((await store.getSession(key))?.state).toBe('completed');
  });

  it('issue 23 item 2: an approval holds only for the input it was given for: a changed parse asks again', async () => {
    // Arrange: the region default changes (a redeploy) between the request and the decision.
    let region = 'prod-eu';
    const deployed: string[] = [];
    const deploy = defineTool({
      name: 'deploy',
      description: 'Deploys.',
      input: z.object({ env: z.string().default(() => region) }),
      effect: 'idempotent',
      requiresApproval: ({ env }) => env.startsWith('prod'),
      run: async ({ env }) => {
        deployed.push(env);
        return { deployed: env };
      },
    });
    const agent = defineAgent({
      name: 'deployer',
      instructions: 'Deploy.',
      tools: [deploy],
      model: scriptedModel({
        maxDurationMs: 1_000,
        script: (messages) =>
          messages.some((m) => m.role === 'assistant')
            ? { final: 'deployed' }
            : { toolCalls: [{ id: 'd1', name: 'deploy', input: {} }] },
      }),
    });
    const { deps } = makeTestDeps([agent]);
    const client = clientOf(deps);
    const key = keyOf('deployer', 'E2');
    await acceptTicket(ticketBody('deployer', 'E2', 'deploy'), undefined, deps);
    await drain(deps);
    region = 'prod-us';

    // Act
    await client.approve(key.id, 'd1', { approved: true });
    await drain(deps);

    // Assert
    expect(deployed).toEqual([]);
    expect((await client.status(key.id))?.pendingApprovals).toEqual([
      expect.objectContaining({ callId: 'd1', input: { env: 'prod-us' } }),
    ]);
  });

  it('issue 23 item 2: the rule, the approver and the tool see the parsed input (schema defaults applied)', async () => {
    // Arrange: env defaults to prod, and prod needs a human; the model leaves env out.
    const deployed: string[] = [];
    const deploy = defineTool({
      name: 'deploy',
      description: 'Deploys.',
      input: z.object({ env: z.string().default('prod') }),
      effect: 'idempotent',
      requiresApproval: ({ env }) => env === 'prod',
      run: async ({ env }) => {
        deployed.push(env);
        return { deployed: env };
      },
    });
    const agent = defineAgent({
      name: 'deployer',
      instructions: 'Deploy.',
      tools: [deploy],
      model: scriptedModel({
        maxDurationMs: 1_000,
        script: (messages) =>
          messages.some((m) => m.role === 'assistant')
            ? { final: 'deployed' }
            : { toolCalls: [{ id: 'd1', name: 'deploy', input: {} }] },
      }),
    });
    const { deps, results } = makeTestDeps([agent]);
    const client = clientOf(deps);
    const key = keyOf('deployer', 'E1');
    await acceptTicket(ticketBody('deployer', 'E1', 'deploy'), undefined, deps);
    await drain(deps);
    const waiting = await client.status(key.id);

    // Act
    await client.approve(key.id, 'd1', { approved: true });
    await drain(deps);

    // Assert
    expect(waiting).toMatchObject({
      status: 'waiting',
      pendingApprovals: [{ callId: 'd1', tool: 'deploy', input: { env: 'prod' } }],
    });
    expect(deployed).toEqual(['prod']);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'deployed' })]);
  });
});
