import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { StepError } from '../../../lib/core/errors.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

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
});
