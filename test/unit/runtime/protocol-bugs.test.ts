import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryResultPublisher, MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { StepError, TicketConflictError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { FailpointCrash } from '../../../lib/runtime/failpoints.ts';
import { acceptTicket, recordRejectedTicket } from '../../../lib/runtime/intake.ts';
import { PUBLISH_RETRY_POLICY } from '../../../lib/runtime/protocol/publish.ts';
import { runKick } from '../../../lib/runtime/step-runner.ts';
import { drain, invocation, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

/** An error like the SDK's after its own retries gave up on a throttle. */
const throttled = () =>
  Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });

const keyOf = (agent: string, ticketId: string) => ({
  tenant: 'default',
  agent,
  id: deriveSessionId('default', agent, ticketId),
});

/**
 * A non-idempotent refund API like the simulated one: it executes every call it receives, and
 * refuses a key that reconcile declared not done, so that answer stays true.
 */
function refundService() {
  const executed: string[] = [];
  const voided = new Set<string>();
  const refused: string[] = [];
  return {
    executed,
    voided,
    refused,
    run(key: string) {
      if (voided.has(key)) {
        refused.push(key);
        throw new StepError(`refunds: key ${key} was voided by reconcile`, { retryable: false });
      }
      executed.push(key);
      return { refundId: `R-${executed.length}` };
    },
    reconcile(key: string) {
      if (executed.includes(key)) return { verdict: 'done' as const, output: { refundId: 'R-?' } };
      voided.add(key);
      return { verdict: 'notDone' as const };
    },
  };
}

describe('protocol regressions (issue 13)', () => {
  it('bug 3: re-runs a once-only call that reconcile declared not done under a new key, so it is not refused', async () => {
    const service = refundService();
    let attempts = 0;
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ id: z.string() }),
      effect: 'once',
      maxDurationMs: 200,
      retry: { attempts: 3, initialDelayMs: 20, maxDelayMs: 50 },
      run: async (_input, ctx) => {
        // The first attempt fails before the refund happens, with a retryable error.
        if (attempts++ === 0) throw new StepError('refunds: 503 (transient)', { retryable: true });
        return service.run(ctx.idempotencyKey);
      },
      reconcile: async (key) => service.reconcile(key),
    });
    const agent = lookupAgent({
      tools: [refund],
      script: (messages) =>
        messages.length < 3 ? { toolCalls: [{ id: 'r', name: 'refund', input: { id: 'x' } }] } : { final: 'refunded' },
    });
    const { deps, store, results } = makeTestDeps([agent]);
    await acceptTicket(ticketBody('lookup-agent', 'T-b3', {}), undefined, deps);
    await drain(deps);

    expect(service.refused).toEqual([]);
    expect(service.executed).toHaveLength(1);
    expect(service.voided.has(service.executed[0]!)).toBe(false);
    const journal = await store.readJournal(keyOf('lookup-agent', 'T-b3'));
    expect(journal.filter((e) => e.kind === 'tool').map((e) => e.kind === 'tool' && e.data.ok)).toEqual([true]);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'refunded' })]);
  });

  it('bug 1: a store error inside a step crashes the leg, and the next owner finishes the turn with the effect once', async () => {
    const service = refundService();
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ id: z.string() }),
      effect: 'once',
      maxDurationMs: 200,
      run: async (_input, ctx) => service.run(ctx.idempotencyKey),
      reconcile: async (key) => service.reconcile(key),
    });
    const agent = lookupAgent({
      tools: [refund],
      script: (messages) =>
        messages.length < 3 ? { toolCalls: [{ id: 'r', name: 'refund', input: { id: 'x' } }] } : { final: 'refunded' },
    });
    const { deps, store, results, clock } = makeTestDeps([agent]);
    const key = keyOf('lookup-agent', 'T-b1');
    // The append of the refund's result is throttled past the SDK's retries: the refund happened.
    let armed = true;
    store.beforeWrite = async (operation) => {
      if (operation !== 'append' || !armed) return;
      const journal = await store.readJournal(key);
      if (journal.at(-1)?.kind !== 'intent') return;
      armed = false;
      store.injectFault('append', { kind: 'fail', error: throttled() });
    };
    await acceptTicket(ticketBody('lookup-agent', 'T-b1', {}), undefined, deps);
    await expect(drain(deps)).rejects.toThrow(/Rate of requests/);
    store.beforeWrite = undefined;

    expect(results.bodies).toEqual([]);
    expect((await store.readJournal(key)).some((e) => e.kind === 'outcome')).toBe(false);
    // The next owner takes over once the lease has expired, reconciles and finishes.
    clock.advance(deps.config.leaseTtlMs + 1);
    expect(await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps)).not.toBe(
      'dropped',
    );
    await drain(deps);
    expect(service.executed).toHaveLength(1);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'refunded' })]);
  });

  it('bug 6: a cancel that lands between a park and its release is not lost', async () => {
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ id: z.string() }),
      effect: 'once',
      maxDurationMs: 200,
      run: async () => ({ refunded: true }),
      reconcile: async () => ({ verdict: 'unknown' }),
    });
    const agent = lookupAgent({
      tools: [refund],
      script: () => ({ toolCalls: [{ id: 'r', name: 'refund', input: { id: 'x' } }] }),
    });
    const crash = new FailpointCrash('after-intent');
    let crashes = 0;
    const { deps, store, results, clock } = makeTestDeps([agent], {
      failpoint: async (name) => {
        if (name === 'after-intent' && crashes++ === 0) throw crash;
      },
    });
    const key = keyOf('lookup-agent', 'T-b6');
    await acceptTicket(ticketBody('lookup-agent', 'T-b6', {}), undefined, deps);
    await expect(drain(deps)).rejects.toBe(crash);

    // The recovery reconciles "unknown" and parks; a cancel (bump + kick) lands just before the
    // park's release, while the lease is still held, so its kick is dropped.
    let cancelled = false;
    store.beforeWrite = async (operation) => {
      if (operation !== 'release' || cancelled) return;
      cancelled = true;
      const now = clock.now();
      await store.bump(key, { now, cancel: true, sweepAt: now });
      expect(await runKick({ v: 1, session: key, reason: 'cancel' }, invocation(60_000, clock), deps)).toBe('dropped');
    };
    clock.advance(deps.config.leaseTtlMs + 1);
    expect(await runKick({ v: 1, session: key, reason: 'recovery' }, invocation(60_000, clock), deps)).not.toBe(
      'dropped',
    );
    await drain(deps);

    expect(cancelled).toBe(true);
    expect((await store.getSession(key))?.state).toBe('cancelled');
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'cancelled' })]);
  });

  it('bug 5: a batch with a once-only call beside a slower tool fits when the once-only call fits the lease', async () => {
    const refund = defineTool({
      name: 'refund',
      description: 'Refunds.',
      input: z.object({ id: z.string() }),
      effect: 'once',
      maxDurationMs: 200,
      run: async () => ({ refunded: true }),
    });
    const slow = defineTool({
      name: 'lookup',
      description: 'A default-sized lookup: longer than the lease leaves a once-only call, but pure.',
      input: z.object({ id: z.string() }),
      effect: 'pure',
      maxDurationMs: 1_000,
      run: async ({ id }) => ({ id }),
    });
    const agent = lookupAgent({
      tools: [refund, slow],
      script: (messages) =>
        messages.length < 3
          ? {
              toolCalls: [
                { id: 'l', name: 'lookup', input: { id: 'x' } },
                { id: 'r', name: 'refund', input: { id: 'x' } },
              ],
            }
          : { final: 'done' },
    });
    const { deps, results } = makeTestDeps([agent]);
    await acceptTicket(ticketBody('lookup-agent', 'T-b5', {}), undefined, deps);
    await drain(deps);

    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'done' })]);
  });

  it('bug 7: a snapshot too large for an item never breaks a yield', async () => {
    const big = (id: string) => ({ id, name: 'lookup', input: { id: id.repeat(150_000) } });
    const slow = defineTool({
      name: 'lookup',
      description: 'Longer than a short invocation leaves.',
      input: z.object({ id: z.string() }),
      effect: 'pure',
      maxDurationMs: 5_000,
      run: async ({ id }) => ({ length: id.length }),
    });
    // Three calls of 150 KB each: the fold's pending calls are over DynamoDB's item limit.
    const agent = lookupAgent({
      tools: [slow],
      script: (messages) => (messages.length < 3 ? { toolCalls: [big('a'), big('b'), big('c')] } : { final: 'done' }),
    });
    const { deps, results, workQueue } = makeTestDeps([agent]);
    const key = keyOf('lookup-agent', 'T-b7a');
    await acceptTicket(ticketBody('lookup-agent', 'T-b7a', {}), undefined, deps);
    const kick = workQueue.receive()[0]!.body;

    // A short invocation: the model fits, the tools do not, so the leg yields.
    expect(await runKick(kick, invocation(3_000), deps)).toBe('yielded');
    await drain(deps);
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'done' })]);
    expect(await deps.store.getLatestSnapshot(key)).toBeUndefined();
  });

  it('bug 7: an unreadable snapshot is ignored: the turn folds the journal instead of failing', async () => {
    const { deps, store, results } = makeTestDeps([lookupAgent()]);
    const key = keyOf('lookup-agent', 'T-b7b');
    await acceptTicket(ticketBody('lookup-agent', 'T-b7b', { ids: ['a'] }), undefined, deps);
    // A snapshot item an older or newer reader cannot parse.
    store.putRawItem(key, 'SNAP#000000000001', { seq: 'one', view: 42 });
    await drain(deps);

    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'found 1' })]);
  });

  it('bug 2: a final answer over the SQS message limit is published through the payload bucket', async () => {
    const answer = 'x'.repeat(300 * 1024);
    const agent = lookupAgent({ script: () => ({ final: answer }) });
    const { deps, store, results, blobs } = makeTestDeps([agent]);
    const key = keyOf('lookup-agent', 'T-b2');
    await acceptTicket(ticketBody('lookup-agent', 'T-b2', {}), undefined, deps);
    await drain(deps);

    const result = results.bodies[0];
    expect(result).toMatchObject({ status: 'completed', output: { $blob: expect.any(String) } });
    const ref = (result?.output as { $blob: string } | undefined)?.$blob ?? '';
    expect(JSON.parse(await blobs.get(ref))).toBe(answer);
    expect((await store.getSession(key))?.state).toBe('completed');
    expect((await store.getTurn(key, 'T-b2'))?.outcome?.output).toBe(answer);
  });

  it('bug 2: with no payload bucket, an answer over the limit still ends the turn with a result that says why', async () => {
    const answer = 'x'.repeat(300 * 1024);
    const agent = lookupAgent({ script: () => ({ final: answer }) });
    // No payload bucket: the answer can never travel on the results queue.
    const { deps, store, results } = makeTestDeps([agent], { blobs: undefined });
    const key = keyOf('lookup-agent', 'T-b2b');
    await acceptTicket(ticketBody('lookup-agent', 'T-b2b', {}), undefined, deps);
    await drain(deps);

    expect(results.bodies).toEqual([
      expect.objectContaining({
        status: 'completed',
        error: expect.stringContaining('over the results queue message limit'),
      }),
    ]);
    expect(results.bodies[0]?.output).toBeUndefined();
    expect((await store.getSession(key))?.state).toBe('completed');
  });

  it('bug 2: a result the queue keeps refusing is retried with backoff, then given up: the session ends', async () => {
    // Arrange: every send fails, as for a message the queue can never take.
    const agent = lookupAgent({ script: () => ({ final: 'done' }) });
    let sends = 0;
    const { deps, store, lines, total } = makeTestDeps([agent], {
      results: {
        publish: async () => {
          sends++;
          throw Object.assign(new Error('message refused'), { name: 'InvalidParameterValue' });
        },
      },
    });
    const key = keyOf('lookup-agent', 'T-b2c');
    await acceptTicket(ticketBody('lookup-agent', 'T-b2c', {}), undefined, deps);

    // Act
    const outcomes = await drain(deps);

    // Assert: the policy's attempts, each after a backoff wait, then a terminal state.
    expect(sends).toBe(PUBLISH_RETRY_POLICY.attempts);
    expect(outcomes.filter((o) => o === 'waiting')).toHaveLength(PUBLISH_RETRY_POLICY.attempts - 1);
    expect(outcomes.at(-1)).toBe('finished');
    expect((await store.getSession(key))?.state).toBe('completed');
    expect((await store.getTurn(key, 'T-b2c'))?.outcome).toMatchObject({ status: 'completed', output: 'done' });
    const journal = await store.readJournal(key);
    expect(journal.filter((e) => e.kind === 'error')).toHaveLength(PUBLISH_RETRY_POLICY.attempts - 1);
    expect(journal.filter((e) => e.kind === 'published').map((e) => e.data)).toEqual([
      { undelivered: `result not published after 8 attempts; last error: InvalidParameterValue: message refused` },
    ]);
    expect(lines.some((l) => l.level === 'error' && l.message.startsWith('result given up'))).toBe(true);
    expect(total('ResultsUndelivered')).toBe(1);
  });

  it('bug 2: a result whose send fails once is sent again after a backoff, and the turn completes', async () => {
    // Arrange: the results queue is unreachable for one send.
    const agent = lookupAgent({ script: () => ({ final: 'done' }) });
    const results = new MemoryResultPublisher();
    let failed = false;
    const { deps, store } = makeTestDeps([agent], {
      results: {
        publish: async (result, options) => {
          if (!failed) {
            failed = true;
            throw Object.assign(new Error('connect ETIMEDOUT'), { name: 'TimeoutError' });
          }
          return results.publish(result, options);
        },
      },
    });
    const key = keyOf('lookup-agent', 'T-b2d');
    await acceptTicket(ticketBody('lookup-agent', 'T-b2d', {}), undefined, deps);

    // Act
    await drain(deps);

    // Assert
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'done' })]);
    // The release records the sent result; only an undelivered one is journaled.
    expect(await store.getSession(key)).toMatchObject({ state: 'completed', publishedTurnId: 'T-b2d' });
    expect((await store.readJournal(key)).filter((e) => e.kind === 'published')).toEqual([]);
  });

  it('bug 4: a conflicting duplicate refused while the accepted ticket is between its writes never touches it', async () => {
    const { deps, store, results } = makeTestDeps([lookupAgent()]);
    const key = keyOf('lookup-agent', 'T-b4');
    const duplicate = ticketBody('lookup-agent', 'T-b4', { ids: ['other'] });
    let raced = false;
    // Ticket A has written its turn and is about to create its session when A′ arrives.
    store.beforeWrite = async (operation) => {
      if (operation !== 'createSession' || raced) return;
      raced = true;
      await expect(acceptTicket(duplicate, undefined, deps)).rejects.toThrow(TicketConflictError);
      expect(
        await recordRejectedTicket(duplicate, 'ticket T-b4 was already submitted with a different input', deps),
      ).toBe(true);
    };
    await acceptTicket(ticketBody('lookup-agent', 'T-b4', { ids: ['a'] }), undefined, deps);
    store.beforeWrite = undefined;
    await drain(deps);

    expect(raced).toBe(true);
    expect((await store.getTurn(key, 'T-b4'))?.outcome).toMatchObject({ status: 'completed', output: 'found 1' });
    expect((await store.getSession(key))?.state).toBe('completed');
    const ids = results.bodies.map((r) => `${r.sessionId}/${r.turnId}`);
    expect(new Set(ids).size).toBe(2);
    expect(results.bodies.find((r) => r.turnId === 'T-b4')).toMatchObject({ status: 'completed', output: 'found 1' });
    expect(results.bodies.find((r) => r.turnId !== 'T-b4')).toMatchObject({ ticketId: 'T-b4', status: 'failed' });
  });

  it('bug 4: a refusal of a reused ticket id never reuses the accepted turn’s result identity', async () => {
    const { deps, results } = makeTestDeps([lookupAgent()]);
    await acceptTicket(ticketBody('lookup-agent', 'T-b4b', { ids: ['a'] }), undefined, deps);
    await drain(deps);
    await recordRejectedTicket(ticketBody('lookup-agent', 'T-b4b', { ids: ['b'] }), 'conflict', deps);

    const [accepted, refused] = results.bodies;
    expect(accepted).toMatchObject({ turnId: 'T-b4b', status: 'completed' });
    expect(refused).toMatchObject({ ticketId: 'T-b4b', status: 'failed', error: 'conflict' });
    expect(refused?.turnId).not.toBe('T-b4b');
  });

  it('bug 4: the client refuses a reused ticket id with a different input before sending it', async () => {
    const { deps, store, workQueue, blobs } = makeTestDeps([lookupAgent()]);
    const tickets = new MemoryTicketQueue();
    const client = new BatonClient({ store, tickets, workQueue, blobs, clock: deps.clock });
    await client.submit({ agent: 'lookup-agent', ticketId: 'T-b4c', input: { ids: ['a'] } });
    await acceptTicket(JSON.stringify(tickets.receive()[0]?.body), undefined, deps);

    await expect(client.submit({ agent: 'lookup-agent', ticketId: 'T-b4c', input: { ids: ['b'] } })).rejects.toThrow(
      TicketConflictError,
    );
    // The same input again is a harmless resubmission.
    await client.submit({ agent: 'lookup-agent', ticketId: 'T-b4c', input: { ids: ['a'] } });
    expect(tickets.sent.map((m) => m.body.input)).toEqual([{ ids: ['a'] }, { ids: ['a'] }]);
  });

  it('a resubmitted ticket reports, and is sent under, the trace of the session it joins', async () => {
    const { deps, store, workQueue, blobs } = makeTestDeps([lookupAgent()]);
    const tickets = new MemoryTicketQueue();
    const client = new BatonClient({ store, tickets, workQueue, blobs, clock: deps.clock });
    const first = await client.submit({ agent: 'lookup-agent', ticketId: 'T-trace', input: { ids: ['a'] } });
    const [sent] = tickets.receive();
    await acceptTicket(JSON.stringify(sent?.body), sent?.trace, deps);

    const again = await client.submit({ agent: 'lookup-agent', ticketId: 'T-trace', input: { ids: ['a'] } });

    const session = await store.getSession(keyOf('lookup-agent', 'T-trace'));
    expect(session?.traceId).toBe(first.traceId);
    expect(again.traceId).toBe(first.traceId);
    expect(tickets.receive()[0]?.trace?.traceId).toBe(first.traceId);
    // A fresh ticket id is a new session, on a trace of its own.
    const other = await client.submit({ agent: 'lookup-agent', ticketId: 'T-trace-2', input: { ids: ['a'] } });
    expect(other.traceId).not.toBe(first.traceId);
  });
});
