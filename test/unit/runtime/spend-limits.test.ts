import { describe, expect, it } from 'vitest';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import type { AgentLimits } from '../../../lib/agent/define-agent.ts';
import { toolResults } from '../../../lib/agent/scripted-model.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { foldJournal } from '../../../lib/core/fold.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { BUDGET_APPROVAL_TOOL } from '../../../lib/core/spend.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: 'lookup-agent',
  id: deriveSessionId('default', 'lookup-agent', ticketId),
});

const clientOf = (deps: RuntimeDeps) =>
  new BatonClient({
    store: deps.store,
    tickets: new MemoryTicketQueue(),
    workQueue: deps.workQueue,
    clock: deps.clock,
  });

/** An agent that looks up five ids, one model call each, then answers: six model calls in all. */
function agentWith(
  limits: Partial<AgentLimits>,
  prices?: Record<string, { inputPerMillionTokens: number; outputPerMillionTokens: number }>,
) {
  const agent = lookupAgent();
  return { ...agent, limits: { ...agent.limits, ...limits }, ...(prices ? { prices } : {}) };
}

const FIVE_IDS = { ids: ['a', 'b', 'c', 'd', 'e'] };

describe('spend limits', () => {
  it('ends the turn budget-exceeded before the model call past maxModelCallsPerTurn, saying what was spent', async () => {
    // Arrange
    const { deps, results, store } = makeTestDeps([agentWith({ maxModelCallsPerTurn: 3 })]);

    // Act
    await acceptTicket(ticketBody('lookup-agent', 'B1', FIVE_IDS), undefined, deps);
    await drain(deps);

    // Assert
    const [result] = results.bodies;
    expect(result).toMatchObject({ status: 'budget-exceeded' });
    expect(result?.error).toMatch(
      /^maxModelCallsPerTurn of 3 reached \(3 spent against it\): this turn spent \d+ tokens in 3 model calls/,
    );
    const entries = await store.readJournal(keyOf('B1'));
    expect(entries.filter((e) => e.kind === 'model')).toHaveLength(3);
    expect(await store.getSession(keyOf('B1'))).toMatchObject({ state: 'failed' });
  });

  it('ends the turn once maxTokensPerTurn is reached', async () => {
    // Arrange: the first call's tokens alone reach the limit.
    const { deps, results, store } = makeTestDeps([agentWith({ maxTokensPerTurn: 1 })]);

    // Act
    await acceptTicket(ticketBody('lookup-agent', 'B2', FIVE_IDS), undefined, deps);
    await drain(deps);

    // Assert
    expect(results.bodies[0]).toMatchObject({
      status: 'budget-exceeded',
      error: expect.stringMatching(/^maxTokensPerTurn of 1 reached/),
    });
    expect((await store.readJournal(keyOf('B2'))).filter((e) => e.kind === 'model')).toHaveLength(1);
  });

  it('prices each model call from the price table, journals the cost and stops at maxCostPerSession', async () => {
    // Arrange: $1 per thousand input tokens; every call reads more than ten.
    const prices = { scripted: { inputPerMillionTokens: 1_000, outputPerMillionTokens: 0 } };
    const { deps, results, store } = makeTestDeps([agentWith({ maxCostPerSession: 0.02 }, prices)]);

    // Act
    await acceptTicket(ticketBody('lookup-agent', 'B3', FIVE_IDS), undefined, deps);
    await drain(deps);

    // Assert
    const entries = await store.readJournal(keyOf('B3'));
    const models = entries.flatMap((e) => (e.kind === 'model' ? [e.data] : []));
    for (const m of models) expect(m.costUsd).toBeCloseTo(m.usage.inputTokens / 1_000, 8);
    const view = foldJournal(entries);
    expect(view.costUsd).toBeGreaterThanOrEqual(0.02);
    expect(view.costUsd - (models.at(-1)?.costUsd ?? 0)).toBeLessThan(0.02);
    expect(results.bodies[0]).toMatchObject({
      status: 'budget-exceeded',
      error: expect.stringMatching(/^maxCostPerSession of 0.02/),
    });
    const status = await clientOf(deps).status(keyOf('B3').id);
    const spent = { modelCalls: models.length, costUsd: view.costUsd, inputTokens: view.usage.inputTokens };
    expect(status?.usage).toEqual({
      session: expect.objectContaining(spent),
      turn: expect.objectContaining(spent),
    });
  });

  it("with onBudget 'ask', waits holding no lease, and an approve lets the turn spend the limit again", async () => {
    // Arrange
    const { deps, results, store } = makeTestDeps([agentWith({ maxModelCallsPerTurn: 4, onBudget: 'ask' })]);
    const key = keyOf('B4');
    await acceptTicket(ticketBody('lookup-agent', 'B4', FIVE_IDS), undefined, deps);
    await drain(deps);
    const waiting = await clientOf(deps).status(key.id);
    const record = await store.getSession(key);

    // Act
    await clientOf(deps).approve(key.id, waiting?.pendingApprovals?.[0]?.callId ?? '', { approved: true });
    await drain(deps);

    // Assert
    expect(waiting).toMatchObject({
      status: 'waiting',
      pendingApprovals: [
        { tool: BUDGET_APPROVAL_TOOL, input: { limit: 'maxModelCallsPerTurn', allowed: 4, spent: 4 } },
      ],
    });
    expect(record?.owner).toBeUndefined();
    expect(results.bodies).toEqual([expect.objectContaining({ status: 'completed', output: 'found 5' })]);
  });

  it("with onBudget 'ask', a declined approval ends the turn budget-exceeded", async () => {
    // Arrange
    const { deps, results } = makeTestDeps([agentWith({ maxModelCallsPerTurn: 2, onBudget: 'ask' })]);
    const key = keyOf('B5');
    await acceptTicket(ticketBody('lookup-agent', 'B5', FIVE_IDS), undefined, deps);
    await drain(deps);
    const waiting = await clientOf(deps).status(key.id);

    // Act
    await clientOf(deps).approve(key.id, waiting?.pendingApprovals?.[0]?.callId ?? '', {
      approved: false,
      reason: 'too dear',
    });
    await drain(deps);

    // Assert
    expect(results.bodies).toEqual([
      expect.objectContaining({ status: 'budget-exceeded', error: expect.stringContaining('declined (too dear)') }),
    ]);
  });
});

describe('spend limits on a ticket', () => {
  const ticketWith = (ticketId: string, limits: object) =>
    JSON.stringify({ ticketId, agent: 'lookup-agent', input: FIVE_IDS, limits });

  it("tightens the agent's limits for its turn, and survives the journal as the turn's input", async () => {
    // Arrange
    const { deps, results, store } = makeTestDeps([agentWith({ maxModelCallsPerTurn: 5 })]);

    // Act
    await acceptTicket(ticketWith('L1', { maxModelCallsPerTurn: 2 }), undefined, deps);
    await drain(deps);

    // Assert
    expect(results.bodies[0]).toMatchObject({
      status: 'budget-exceeded',
      error: expect.stringMatching(/^maxModelCallsPerTurn of 2 reached/),
    });
    const input = (await store.readJournal(keyOf('L1'))).find((e) => e.kind === 'input');
    expect(input?.kind === 'input' && input.data.limits).toEqual({ maxModelCallsPerTurn: 2 });
  });

  it("refuses a ticket whose limit is above the agent's ceiling, naming it, and stores nothing", async () => {
    // Arrange
    const { deps, store } = makeTestDeps([agentWith({ maxModelCallsPerTurn: 5 })]);

    // Act
    const accepting = acceptTicket(ticketWith('L2', { maxModelCallsPerTurn: 6 }), undefined, deps);

    // Assert
    await expect(accepting).rejects.toThrow("ticket maxModelCallsPerTurn 6 is above the agent's ceiling of 5");
    expect(await store.getSession(keyOf('L2'))).toBeUndefined();
  });

  it('refuses a limit that is not a positive number', async () => {
    const { deps } = makeTestDeps([agentWith({})]);
    await expect(acceptTicket(ticketWith('L3', { maxTokensPerTurn: 0 }), undefined, deps)).rejects.toThrow(
      /limits\.maxTokensPerTurn/,
    );
  });
});

describe('spend limits on a later turn of a conversation', () => {
  /** Each turn looks up the ids its own input names (call ids carry the turn's number), then answers. */
  function perTurnLookups(messages: readonly ChatMessage[]) {
    const texts = messages.flatMap((m) => (m.role === 'user' ? m.content.filter((c) => c.type === 'text') : []));
    const turn = texts.length;
    const latest = texts.at(-1);
    const ids = JSON.parse(latest?.type === 'text' ? latest.text : '{}').ids as string[];
    const done = toolResults(messages);
    const next = ids.find((id) => !done.has(`${turn}:${id}`));
    return next
      ? { toolCalls: [{ id: `${turn}:${next}`, name: 'lookup', input: { id: next } }] }
      : { final: `turn ${turn} looked up ${ids.length}` };
  }
  const conversationWith = (limits: Partial<AgentLimits>) => ({
    ...agentWith(limits),
    conversation: true,
    model: lookupAgent({ script: perTurnLookups }).model,
  });

  it("holds a turn to the limits it was sent with, and the next turn to the agent's again", async () => {
    // Arrange
    const { deps, results, store } = makeTestDeps([conversationWith({ maxModelCallsPerTurn: 10 })]);
    const client = clientOf(deps);
    const key = keyOf('C1');
    await acceptTicket(ticketBody('lookup-agent', 'C1', FIVE_IDS), undefined, deps);
    await drain(deps);

    // Act: a second turn by ticket with a tighter limit, a third by the client without one.
    const second = JSON.stringify({
      ticketId: 't2',
      agent: 'lookup-agent',
      sessionId: key.id,
      input: FIVE_IDS,
      limits: { maxModelCallsPerTurn: 2 },
    });
    await acceptTicket(second, undefined, deps);
    await drain(deps);
    await client.send(key.id, FIVE_IDS, { id: 't3' });
    await drain(deps);

    // Assert
    expect(results.bodies.map((r) => r.status)).toEqual(['completed', 'budget-exceeded', 'completed']);
    expect(results.bodies[1]?.error).toMatch(/^maxModelCallsPerTurn of 2 reached/);
    const inputs = (await store.readJournal(key)).filter((e) => e.kind === 'input');
    expect(inputs.map((e) => (e.kind === 'input' ? e.data.limits : undefined))).toEqual([
      undefined,
      { maxModelCallsPerTurn: 2 },
      undefined,
    ]);
  });

  it("takes limits on a client send within the agent's ceiling, and refuses them above it or malformed", async () => {
    // Arrange
    const { deps, results } = makeTestDeps([conversationWith({ maxModelCallsPerTurn: 10 })]);
    const client = new BatonClient({
      store: deps.store,
      tickets: new MemoryTicketQueue(),
      workQueue: deps.workQueue,
      clock: deps.clock,
      agents: deps.agents,
    });
    const key = keyOf('C2');
    await acceptTicket(ticketBody('lookup-agent', 'C2', FIVE_IDS), undefined, deps);
    await drain(deps);

    // Act
    const above = client.send(key.id, FIVE_IDS, { id: 't2', limits: { maxModelCallsPerTurn: 11 } });
    const malformed = client.send(key.id, FIVE_IDS, { id: 't3', limits: { maxTokensPerTurn: -1 } });
    await client.send(key.id, FIVE_IDS, { id: 't4', limits: { maxModelCallsPerTurn: 1 } });
    await drain(deps);

    // Assert
    await expect(above).rejects.toThrow("ticket maxModelCallsPerTurn 11 is above the agent's ceiling of 10");
    await expect(malformed).rejects.toThrow(/^limits: .*maxTokensPerTurn/);
    expect(results.bodies.map((r) => r.status)).toEqual(['completed', 'budget-exceeded']);
  });
});

describe('usage per tenant in the metrics', () => {
  it("counts each tenant's tokens and cost under its own tenant dimension", async () => {
    // Arrange: two tenants run the same priced agent.
    const prices = { scripted: { inputPerMillionTokens: 1_000, outputPerMillionTokens: 0 } };
    const { deps, metrics, store } = makeTestDeps([agentWith({}, prices)]);
    const ticket = (tenant: string, ticketId: string) =>
      JSON.stringify({ ticketId, agent: 'lookup-agent', tenant, input: FIVE_IDS });

    // Act
    await acceptTicket(ticket('acme', 'U1'), undefined, deps);
    await acceptTicket(ticket('globex', 'U2'), undefined, deps);
    await drain(deps);

    // Assert: each tenant's sum is its own journal's usage and cost.
    for (const [tenant, ticketId] of [
      ['acme', 'U1'],
      ['globex', 'U2'],
    ] as const) {
      const key = { tenant, agent: 'lookup-agent', id: deriveSessionId(tenant, 'lookup-agent', ticketId) };
      const view = foldJournal(await store.readJournal(key));
      const sum = (name: string) =>
        metrics.filter((p) => p.name === name && p.dimensions?.tenant === tenant).reduce((n, p) => n + p.value, 0);
      expect(sum('TenantInputTokens')).toBe(view.usage.inputTokens);
      expect(sum('TenantOutputTokens')).toBe(view.usage.outputTokens);
      expect(sum('TenantCostUsd')).toBeCloseTo(view.costUsd, 8);
    }
    expect(metrics.filter((p) => p.name === 'TenantInputTokens' && p.dimensions?.tenant === undefined)).toEqual([]);
  });
});
