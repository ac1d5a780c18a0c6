import { describe, expect, it } from 'vitest';
import type { ManualClock } from '../../../lib/adapters/memory/manual-clock.ts';
import { MemoryFairShare } from '../../../lib/adapters/memory/memory-fair-share.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';
import type { TenantLimits } from '../../../lib/core/tenant-limits.ts';
import type { RuntimeDeps } from '../../../lib/runtime/deps.ts';
import { readTenantSlots, SLOTS_ITEM } from '../../../lib/runtime/fair-share.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, lookupAgent, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const keyOf = (ticketId: string): SessionKey => ({
  tenant: 'default',
  agent: 'lookup-agent',
  id: deriveSessionId('default', 'lookup-agent', ticketId),
});
const THREE_IDS = { ids: ['a', 'b', 'c'] };
/** A leg's budget that fits about one step: every session yields often and keeps its slot meanwhile. */
const SHORT_LEG_MS = 1_500;

/** Deps with tenant limits, a fair-share store, and a model that takes 400 ms a call on the manual clock. */
function limitedDeps(tenantLimits: TenantLimits) {
  const made = makeTestDeps([]);
  const agent = lookupAgent({ modelLatencyMs: 400, clock: made.clock });
  const fairShare = new MemoryFairShare();
  const { deps: base } = makeTestDeps([agent], {
    clock: made.clock,
    fairShare,
  });
  const deps: RuntimeDeps = { ...base, config: { ...base.config, tenantLimits } };
  return { deps, fairShare, clock: made.clock as ManualClock };
}

async function submitAll(deps: RuntimeDeps, clock: ManualClock, tickets: readonly string[]): Promise<void> {
  for (const ticket of tickets) {
    await acceptTicket(ticketBody('lookup-agent', ticket, THREE_IDS), undefined, deps);
    clock.advance(1);
  }
}

/** When each session's first and last model call were journaled. */
async function modelSpans(deps: RuntimeDeps, tickets: readonly string[]) {
  const spans: { ticket: string; from: number; to: number }[] = [];
  for (const ticket of tickets) {
    const models = (await deps.store.readJournal(keyOf(ticket))).filter((e) => e.kind === 'model');
    spans.push({ ticket, from: models[0]!.at, to: models.at(-1)!.at });
  }
  return spans.sort((a, b) => a.from - b.from);
}

const limitedEntries = (entries: JournalEntry[]) => entries.filter((e) => e.kind === 'limited');

describe('fair sharing: a tenant runs at most maxRunning sessions at once', () => {
  it('runs one session at a time at a limit of 1, the rest in order of acceptance, and none fails', async () => {
    // Arrange
    const { deps, clock } = limitedDeps({ default: { maxRunning: 1 } });
    const tickets = ['F1', 'F2', 'F3'];
    await submitAll(deps, clock, tickets);

    // Act
    await drain(deps, { budgetMs: SHORT_LEG_MS });

    // Assert: every turn completed; no two sessions' model calls overlap; acceptance order kept.
    const results = (deps.results as unknown as { bodies: { ticketId: string; status: string }[] }).bodies;
    expect(results.map((r) => [r.ticketId, r.status])).toEqual([
      ['F1', 'completed'],
      ['F2', 'completed'],
      ['F3', 'completed'],
    ]);
    const spans = await modelSpans(deps, tickets);
    expect(spans.map((s) => s.ticket)).toEqual(tickets);
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.from).toBeGreaterThan(spans[i - 1]!.to);
    // The ones that waited said so in their journal, each with its place in line.
    const waited = limitedEntries(await deps.store.readJournal(keyOf('F3')));
    expect(waited[0]?.data).toMatchObject({
      limit: 'tenant-concurrency',
      max: 1,
      place: 2,
      reason: 'waiting for a tenant slot: tenant default runs at most 1 sessions at once (place 2 in line)',
    });
  });

  it('shows a session waiting in line as waiting for a tenant slot, in status, holding no lease', async () => {
    // Arrange
    const { deps, clock } = limitedDeps({ default: { maxRunning: 1 } });
    await submitAll(deps, clock, ['W1', 'W2']);

    // Act: the first legs only — W1 takes the slot, W2 finds none.
    await drain(deps, { budgetMs: SHORT_LEG_MS, maxKicks: 2 });

    // Assert
    const client = new BatonClient({
      store: deps.store,
      tickets: new MemoryTicketQueue(),
      workQueue: deps.workQueue,
      clock,
    });
    const status = await client.status(keyOf('W2').id);
    expect(status).toMatchObject({
      status: 'waiting',
      limited: { limit: 'tenant-concurrency', place: 1, reason: expect.stringMatching(/^waiting for a tenant slot/) },
    });
    const record = await deps.store.getSession(keyOf('W2'));
    expect(record?.owner).toBeUndefined();
  });

  it('takes a cancelled session out of the line, and the next in line still runs', async () => {
    // Arrange
    const { deps, clock, fairShare } = limitedDeps({ default: { maxRunning: 1 } });
    await submitAll(deps, clock, ['C1', 'C2', 'C3']);
    await drain(deps, { budgetMs: SHORT_LEG_MS, maxKicks: 3 });
    expect(limitedEntries(await deps.store.readJournal(keyOf('C2')))).toHaveLength(1);
    const client = new BatonClient({
      store: deps.store,
      tickets: new MemoryTicketQueue(),
      workQueue: deps.workQueue,
      clock,
    });

    // Act
    await client.cancel(keyOf('C2').id);
    await drain(deps, { budgetMs: SHORT_LEG_MS });

    // Assert
    const results = (deps.results as unknown as { bodies: { ticketId: string; status: string }[] }).bodies;
    expect(Object.fromEntries(results.map((r) => [r.ticketId, r.status]))).toEqual({
      C1: 'completed',
      C2: 'cancelled',
      C3: 'completed',
    });
    const slots = await readTenantSlots({ fairShare, ids: deps.ids }, 'default');
    expect(slots).toEqual({ running: {}, waiting: {} });
  });

  it('serves the waiting sessions when the limit is raised while they wait, losing none', async () => {
    // Arrange: three wait behind one at a limit of 1.
    const { deps, clock } = limitedDeps({ default: { maxRunning: 1 } });
    const tickets = ['R1', 'R2', 'R3', 'R4'];
    await submitAll(deps, clock, tickets);
    await drain(deps, { budgetMs: SHORT_LEG_MS, maxKicks: 4 });
    for (const waiting of ['R2', 'R3', 'R4'])
      expect(limitedEntries(await deps.store.readJournal(keyOf(waiting)))).toHaveLength(1);

    // Act: a redeploy raises the limit to 3; the next free slot hands over as many as now fit.
    const raised: RuntimeDeps = { ...deps, config: { ...deps.config, tenantLimits: { default: { maxRunning: 3 } } } };
    await drain(raised, { budgetMs: SHORT_LEG_MS });

    // Assert
    const results = (deps.results as unknown as { bodies: { ticketId: string; status: string }[] }).bodies;
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const spans = await modelSpans(deps, tickets);
    // R2, R3 and R4 ran side by side once R1 freed its slot.
    expect(spans[2]!.from).toBeLessThan(spans[1]!.to);
  });

  it('frees a slot whose session ended without freeing it, when the tenant is full', async () => {
    // Arrange: the only slot is held by a session that no longer exists (its leg died after its release).
    const { deps, clock, fairShare } = limitedDeps({ default: { maxRunning: 1 } });
    await fairShare.put('default', SLOTS_ITEM, {
      data: { running: { 'lookup-agent/gone': { at: clock.now() - 60_000, epoch: 3 } }, waiting: {} },
      expectVersion: undefined,
      ttlSeconds: Math.ceil(clock.now() / 1_000) + 3_600,
      writeId: 'seeded',
    });
    await submitAll(deps, clock, ['S1']);

    // Act
    await drain(deps, { budgetMs: SHORT_LEG_MS });

    // Assert: it ran at once, without waiting in line.
    const results = (deps.results as unknown as { bodies: { status: string }[] }).bodies;
    expect(results.map((r) => r.status)).toEqual(['completed']);
    expect(limitedEntries(await deps.store.readJournal(keyOf('S1')))).toEqual([]);
    expect(await readTenantSlots({ fairShare, ids: deps.ids }, 'default')).toEqual({ running: {}, waiting: {} });
  });

  it('costs a tenant without limits nothing: no fair-share item is read or written', async () => {
    // Arrange: limits for another tenant only.
    const { deps, clock, fairShare } = limitedDeps({ other: { maxRunning: 1, modelCallsPerMinute: 1 } });
    await submitAll(deps, clock, ['N1', 'N2']);

    // Act
    await drain(deps, { budgetMs: SHORT_LEG_MS });

    // Assert
    expect(fairShare.expiries()).toEqual([]);
    const results = (deps.results as unknown as { bodies: { status: string }[] }).bodies;
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed']);
  });
});

describe('fair sharing: a tenant model-call rate', () => {
  it('holds calls back to the rate, waiting out of the leg holding no lease, and never fails the turn', async () => {
    // Arrange: 6 calls a minute, one saved up: a call every 10 s after the first.
    const { deps, clock } = limitedDeps({ default: { modelCallsPerMinute: 6, burst: 1 } });
    await submitAll(deps, clock, ['P1']);

    // Act
    await drain(deps, { budgetMs: 60_000 });

    // Assert
    const results = (deps.results as unknown as { bodies: { status: string }[] }).bodies;
    expect(results.map((r) => r.status)).toEqual(['completed']);
    const entries = await deps.store.readJournal(keyOf('P1'));
    const models = entries.filter((e) => e.kind === 'model');
    expect(models).toHaveLength(4);
    for (let i = 1; i < models.length; i++) expect(models[i]!.at - models[i - 1]!.at).toBeGreaterThanOrEqual(9_999);
    expect(limitedEntries(entries)[0]?.data).toMatchObject({
      limit: 'model-rate',
      max: 6,
      reason: expect.stringMatching(/^model call rate limit reached: tenant default may make 6 model calls a minute/),
    });
  });

  it('sleeps out a short wait in the leg, journaling nothing for it', async () => {
    // Arrange: 60 calls a minute, one saved up: a call every second.
    const { deps, clock } = limitedDeps({ default: { modelCallsPerMinute: 60, burst: 1 } });
    await submitAll(deps, clock, ['Q1']);

    // Act
    await drain(deps, { budgetMs: 60_000 });

    // Assert
    const entries = await deps.store.readJournal(keyOf('Q1'));
    const models = entries.filter((e) => e.kind === 'model');
    expect(models).toHaveLength(4);
    expect(models[3]!.at - models[0]!.at).toBeGreaterThanOrEqual(2_999);
    expect(limitedEntries(entries)).toEqual([]);
    expect(entries.filter((e) => e.kind === 'leg' || (e.kind === 'input' && e.data.leg))).toHaveLength(1);
  });

  it('counts a model-specific rate beside the tenant-wide one', async () => {
    // Arrange: no tenant-wide rate; this agent's model limited to 6 a minute.
    const { deps, clock } = limitedDeps({
      default: { modelCallsPerMinuteByModel: { scripted: 6, 'other-model': 1_000 }, burst: 1 },
    });
    await submitAll(deps, clock, ['M1']);

    // Act
    await drain(deps, { budgetMs: 60_000 });

    // Assert
    const entries = await deps.store.readJournal(keyOf('M1'));
    expect(limitedEntries(entries)[0]?.data.reason).toMatch(/calls to scripted a minute/);
  });
});
