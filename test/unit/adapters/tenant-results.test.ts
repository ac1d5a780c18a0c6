import { describe, expect, it } from 'vitest';
import { MemoryResultPublisher } from '../../../lib/adapters/memory/memory-queues.ts';
import { TenantResults } from '../../../lib/adapters/tenant-results.ts';
import { parseProducers } from '../../../lib/core/tenancy.ts';
import { acceptTicket, recordRejectedTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps } from '../../fixtures/runtime.ts';

/** Results of every tenant, with acme's on a queue of its own. */
function tenantResults() {
  const shared = new MemoryResultPublisher();
  const acme = new MemoryResultPublisher();
  return { shared, acme, results: new TenantResults(shared, new Map([['acme', acme]])) };
}

const ticket = (tenant: string, ticketId: string, input: unknown = { ids: [] }) =>
  JSON.stringify({ ticketId, agent: 'lookup-agent', tenant, input });

describe('results scoped to their tenant', () => {
  it('publishes a tenant’s outcome on its own results, and another tenant’s on the shared ones', async () => {
    // Arrange
    const { shared, acme, results } = tenantResults();
    const { deps } = makeTestDeps([lookupAgent()], { results });

    // Act
    await acceptTicket(ticket('acme', 'T-acme'), undefined, deps);
    await acceptTicket(ticket('globex', 'T-globex'), undefined, deps);
    await drain(deps);

    // Assert
    expect(acme.bodies.map((r) => [r.tenant, r.ticketId, r.status])).toEqual([['acme', 'T-acme', 'completed']]);
    expect(shared.bodies.map((r) => [r.tenant, r.ticketId])).toEqual([['globex', 'T-globex']]);
  });

  it('never lets an outsider post into a tenant’s results: its refusal goes to the shared ones; a mapped producer’s to the tenant’s', async () => {
    // Arrange: AROAACME sends for acme; 111122223333 for globex only.
    const { shared, acme, results } = tenantResults();
    const test = makeTestDeps([lookupAgent()], { results });
    const producers = parseProducers('{"AROAACME":["acme"],"111122223333":["globex"]}');
    const deps = { ...test.deps, config: { ...test.deps.config, producers } };
    const refuse = async (body: string, senderId: string, messageId: string) => {
      const reason = await acceptTicket(body, undefined, deps, { senderId, messageId }).then(
        () => 'accepted',
        (e: Error) => e.message,
      );
      await recordRejectedTicket(body, reason, deps, { senderId, messageId });
    };

    // Act
    await refuse(ticket('acme', 'T-forged'), '111122223333', 'msg-outsider');
    await refuse(ticket('acme', 'T-bad', 'not an object'), 'AROAACME:p', 'msg-own');

    // Assert
    expect(shared.bodies.map((r) => [r.tenant, r.ticketId])).toEqual([['acme', 'refused:msg-outsider']]);
    expect(acme.bodies.map((r) => [r.ticketId, r.status])).toEqual([['T-bad', 'failed']]);
  });
});
