import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readLedger } from '../../../examples/simulated/ledger.ts';
import { supportDesk } from '../../../examples/support-desk/agent.ts';
import { MemoryTicketQueue } from '../../../lib/adapters/memory/memory-queues.ts';
import { type AgentDefinition, defineAgent } from '../../../lib/agent/define-agent.ts';
import { BatonClient } from '../../../lib/client/baton-client.ts';
import { InvalidInputError, RoleRequiredError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { JOURNAL_FORMAT_VERSION } from '../../../lib/core/journal.ts';
import type { ForkEffects, UpgradePolicy } from '../../../lib/core/vocabulary.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { memoryApi } from '../../fixtures/memory-api.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const AGENT = 'support-desk';
const keyOf = (id: string): SessionKey => ({ tenant: 'default', agent: AGENT, id });

let previousLedger: string | undefined;
beforeEach(() => {
  previousLedger = process.env.BATON_LEDGER;
  process.env.BATON_LEDGER = join(mkdtempSync(join(tmpdir(), 'baton-forks-')), 'ledger.jsonl');
});
afterEach(() => {
  if (previousLedger === undefined) delete process.env.BATON_LEDGER;
  else process.env.BATON_LEDGER = previousLedger;
});

const refunds = () => readLedger().filter((l) => l.operation === 'issueRefund');

// A lease the refund (1 s at most) fits in.
const config = { leaseTtlMs: 10_000, reserveMs: 200, retentionDays: 1, sweepGraceMs: 1_500 };

/** support-desk version 2: the same desk under another policy (what runs is what the journal says). */
const deskV2 = (upgrade: UpgradePolicy): AgentDefinition =>
  defineAgent({ ...supportDesk({ workMs: 5 }), version: 2, upgrade, instructions: 'Desk version 2.' });

/** A support-desk conversation that said hello, then refunded order O-7 with a human's approval. */
async function refundedSession() {
  const test = makeTestDeps([supportDesk({ workMs: 5 })], { config });
  const client = new BatonClient({ ...test.deps, tickets: new MemoryTicketQueue({ clock: test.clock }) });
  await acceptTicket(ticketBody(AGENT, 'T1', { text: 'hello' }), undefined, test.deps);
  await drain(test.deps);
  const sessionId = deriveSessionId('default', AGENT, 'T1');
  await client.send(sessionId, { text: 'refund O-7' }, { id: 'refund-turn' });
  await drain(test.deps);
  await client.approve(sessionId, 't2-refund', { approved: true });
  await drain(test.deps);
  const original = await client.status(sessionId);
  const refundId = (await test.store.getTurn(keyOf(sessionId), 'refund-turn'))?.outcome?.output;
  return { ...test, client, sessionId, original, refundId };
}

const rerunRefund = async (t: Awaited<ReturnType<typeof refundedSession>>, effects: ForkEffects) => {
  const forked = await t.client.rerun(t.sessionId, { turnId: 'refund-turn', id: `rerun-${effects}`, effects });
  await drain(t.deps);
  return forked;
};

describe('forks of a session that issued a refund', () => {
  it('asks before refunding again (ask), showing that the original ran it and its result, and refunds nothing meanwhile', async () => {
    // Arrange
    const t = await refundedSession();

    // Act
    const forked = await rerunRefund(t, 'ask');
    const status = await t.client.status(forked.sessionId);

    // Assert
    expect(t.refundId).toMatch(/^refund R-[0-9a-f]{10} issued for O-7$/);
    expect(refunds()).toHaveLength(1);
    expect(status).toMatchObject({ status: 'waiting', forkedFrom: { session: t.sessionId } });
    expect(status?.pendingApprovals).toEqual([
      expect.objectContaining({
        tool: 'issueRefund',
        ranBefore: expect.objectContaining({
          session: t.sessionId,
          idempotencyKey: refunds()[0]?.idempotencyKey,
          result: { ok: true, output: expect.objectContaining({ refundId: expect.any(String) }) },
        }),
      }),
    ]);
  });

  it('runs a fork made hours after its original, whose history began before the fork’s record', async () => {
    // Arrange: a journal older than the margin that tells an expired run's remnants (an hour).
    const t = await refundedSession();
    t.clock.advance(3 * 3_600_000);

    // Act
    const forked = await rerunRefund(t, 'reuse');

    // Assert: the fork ran on its original's history instead of failing as remnants.
    const outcome = (await t.store.getTurn(keyOf(forked.sessionId), forked.turnId))?.outcome;
    expect(outcome).toMatchObject({ status: 'completed', output: t.refundId });
    expect(refunds()).toHaveLength(1);
  });

  it('shows the same refund id without a second refund in the ledger (reuse)', async () => {
    // Arrange
    const t = await refundedSession();

    // Act
    const forked = await rerunRefund(t, 'reuse');
    const outcome = (await t.store.getTurn(keyOf(forked.sessionId), forked.turnId))?.outcome;

    // Assert
    expect(outcome).toMatchObject({ status: 'completed', output: t.refundId });
    expect(refunds()).toHaveLength(1);
    const fork = await t.store.readJournal(keyOf(forked.sessionId), forked.forkedFrom.cursor);
    const refund = fork.find((e) => e.kind === 'tool' && e.data.tool === 'issueRefund');
    expect(refund?.data).toMatchObject({ ok: true, forkOf: { effect: 'reuse' } });
    expect(fork.some((e) => e.kind === 'intent' || e.kind === 'approval')).toBe(false);
  });

  it('refuses the repeat without calling (deny), as a dry run', async () => {
    // Arrange
    const t = await refundedSession();

    // Act
    const forked = await rerunRefund(t, 'deny');
    const outcome = (await t.store.getTurn(keyOf(forked.sessionId), forked.turnId))?.outcome;

    // Assert
    expect(outcome?.output).toMatch(/^refund for O-7 not issued: denied in a fork \(effects: deny\)/);
    expect(refunds()).toHaveLength(1);
  });

  it('runs the repeat again under a key of its own (rerun), after the tool’s own approval', async () => {
    // Arrange
    const t = await refundedSession();

    // Act
    const forked = await rerunRefund(t, 'rerun');
    await t.client.approve(forked.sessionId, 't2-refund', { approved: true });
    await drain(t.deps);
    const outcome = (await t.store.getTurn(keyOf(forked.sessionId), forked.turnId))?.outcome;

    // Assert
    const [first, second] = refunds();
    expect(refunds()).toHaveLength(2);
    expect(second?.idempotencyKey).not.toBe(first?.idempotencyKey);
    expect(second?.sessionId).toBe(forked.sessionId);
    expect(outcome?.status).toBe('completed');
    expect(outcome?.output).not.toBe(t.refundId);
  });

  it('writes O(1) items and keeps the history before the cursor: nothing before it runs again', async () => {
    // Arrange
    const t = await refundedSession();
    const before = { ...t.store.writes };
    const original = await t.store.readJournal(keyOf(t.sessionId));

    // Act
    const forked = await t.client.rerun(t.sessionId, { turnId: 'refund-turn', id: 'cost', effects: 'reuse' });
    const wrote = Object.entries(t.store.writes).reduce((n, [op, count]) => n + count - before[op as never], 0);
    const history = await t.store.readJournal(keyOf(forked.sessionId));

    // Assert: the turn, the forked entry and the record.
    expect(wrote).toBe(3);
    expect(history.slice(0, forked.forkedFrom.cursor)).toEqual(original.slice(0, forked.forkedFrom.cursor));
    // Stamped with today's format: a worker of format 1 leaves a fork to a newer one.
    expect(history[forked.forkedFrom.cursor]).toMatchObject({ kind: 'forked', v: JOURNAL_FORMAT_VERSION });
    expect(await t.client.status(forked.sessionId)).toMatchObject({ forkedFrom: { cursor: forked.forkedFrom.cursor } });
  });

  it('continues a turn from inside it: the pending refund is asked about, not run', async () => {
    // Arrange: the cursor right after the model entry that asked for the refund.
    const t = await refundedSession();
    const entries = await t.store.readJournal(keyOf(t.sessionId));
    const asked = entries.find((e) => e.kind === 'model' && e.data.toolCalls.some((c) => c.name === 'issueRefund'));

    // Act
    const forked = await t.client.fork(t.sessionId, { at: asked!.seq, effects: 'ask' });
    await drain(t.deps);

    // Assert
    expect(forked.turnId).toBe('refund-turn');
    const status = await t.client.status(forked.sessionId);
    expect(status?.pendingApprovals?.[0]?.ranBefore?.session).toBe(t.sessionId);
    expect(refunds()).toHaveLength(1);
  });

  it('refuses bad input and writes nothing: past the end, a cursor that splits a call from its result, an input inside a turn, none at a boundary, a missing role', async () => {
    // Arrange
    const t = await refundedSession();
    const entries = await t.store.readJournal(keyOf(t.sessionId));
    const last = entries.at(-1)!.seq;
    const intent = entries.find((e) => e.kind === 'intent')!;
    const asked = entries.find((e) => e.kind === 'model' && e.data.toolCalls.length > 0)!;
    const before = { ...t.store.writes };
    const readOnly = new BatonClient({
      ...t.deps,
      tickets: new MemoryTicketQueue({ clock: t.clock }),
      roles: ['read'],
    });

    // Act / Assert
    await expect(t.client.fork(t.sessionId, { at: last + 1, input: { text: 'x' } })).rejects.toThrow(
      `fork cursor ${last + 1} is past the end of session ${t.sessionId} (last seq ${last})`,
    );
    await expect(t.client.fork(t.sessionId, { at: intent.seq })).rejects.toThrow(/splits once-only call t2-refund/);
    await expect(t.client.fork(t.sessionId, { at: asked.seq, input: { text: 'x' } })).rejects.toThrow(
      /a new input needs a turn boundary/,
    );
    await expect(t.client.fork(t.sessionId, { at: last })).rejects.toThrow(/give the fork its input/);
    await expect(t.client.fork(t.sessionId, { at: -1, input: { text: 'x' } })).rejects.toThrow(InvalidInputError);
    await expect(t.client.fork('nosuchsession', { at: 0, input: { text: 'x' } })).rejects.toThrow(/not found/);
    await expect(readOnly.fork(t.sessionId, { at: 0, input: { text: 'x' } })).rejects.toThrow(RoleRequiredError);
    expect(t.store.writes).toEqual(before);
  });
});

/** The refunded session (on version 1) after a deploy that adds version 2 under `upgrade`. */
async function afterDeployOfVersion2(upgrade: UpgradePolicy) {
  const t = await refundedSession();
  const deployed = makeTestDeps([supportDesk({ workMs: 5 }), deskV2(upgrade)], {
    config,
    store: t.store,
    workQueue: t.workQueue,
    results: t.results,
    clock: t.clock,
  });
  const client = new BatonClient({ ...deployed.deps, tickets: new MemoryTicketQueue({ clock: t.clock }) });
  return { ...t, deps: deployed.deps, client };
}

/** The agent version each turn of a session's own journal ran on, and the moves it journaled. */
async function versionsOf(t: { store: Awaited<ReturnType<typeof refundedSession>>['store'] }, sessionId: string) {
  const entries = await t.store.readJournal(keyOf(sessionId));
  const own = entries.slice(entries.findIndex((e) => e.kind === 'forked'));
  return {
    turns: own.filter((e) => e.kind === 'input').map((e) => (e.kind === 'input' ? e.data.agentVersion : undefined)),
    upgrades: own.filter((e) => e.kind === 'upgraded').length,
  };
}

describe('forks on another version of the agent', () => {
  it('reruns a turn on the version asked for and keeps it there, though the policy would move the session to the newest', async () => {
    // Arrange: version 2 (at-turn) is deployed; the original ran on version 1.
    const t = await afterDeployOfVersion2('at-turn');

    // Act
    const onOne = await t.client.rerun(t.sessionId, {
      turnId: 'refund-turn',
      id: 'on-v1',
      effects: 'reuse',
      version: 1,
    });
    await drain(t.deps);
    await t.client.send(onOne.sessionId, { text: 'thanks' }, { id: 'on-v1-thanks' });
    await drain(t.deps);

    // Assert: both of the fork's turns ran on version 1, with no move; the record says so too.
    expect(onOne.version).toBe(1);
    expect(await versionsOf(t, onOne.sessionId)).toEqual({ turns: [1, 1], upgrades: 0 });
    expect((await t.store.getSession(keyOf(onOne.sessionId)))?.agentVersion).toBe(1);
    const outcome = (await t.store.getTurn(keyOf(onOne.sessionId), onOne.turnId))?.outcome;
    expect(outcome).toMatchObject({ status: 'completed', output: t.refundId });
    expect(refunds()).toHaveLength(1);
  });

  it('runs a fork of a version 1 session on version 2 under a pin policy, which would keep the original on 1', async () => {
    // Arrange
    const t = await afterDeployOfVersion2('pin');

    // Act
    const onTwo = await t.client.rerun(t.sessionId, {
      turnId: 'refund-turn',
      id: 'on-v2',
      effects: 'reuse',
      version: 2,
    });
    await drain(t.deps);
    await t.client.send(t.sessionId, { text: 'still there?' }, { id: 'original-next' });
    await drain(t.deps);

    // Assert
    expect(await versionsOf(t, onTwo.sessionId)).toEqual({ turns: [2], upgrades: 0 });
    const original = await t.store.readJournal(keyOf(t.sessionId));
    expect(original.filter((e) => e.kind === 'input').map((e) => e.kind === 'input' && e.data.agentVersion)).toEqual([
      1, 1, 1,
    ]);
    expect((await t.store.getTurn(keyOf(onTwo.sessionId), onTwo.turnId))?.outcome?.status).toBe('completed');
  });

  it('refuses a version the agent does not have, naming it and the versions deployed, and writes nothing', async () => {
    // Arrange
    const t = await afterDeployOfVersion2('at-turn');
    const withoutAgents = new BatonClient({
      ...t.deps,
      agents: undefined,
      tickets: new MemoryTicketQueue({ clock: t.clock }),
    });
    const before = { ...t.store.writes };

    // Act / Assert
    await expect(t.client.rerun(t.sessionId, { turnId: 'refund-turn', version: 7 })).rejects.toThrow(
      'agent support-desk has no version 7 (deployed: 1, 2)',
    );
    await expect(t.client.fork(t.sessionId, { at: 0, input: { text: 'x' }, version: 0 })).rejects.toThrow(
      'agent version must be a positive integer, got 0',
    );
    await expect(withoutAgents.rerun(t.sessionId, { turnId: 'refund-turn', version: 2 })).rejects.toThrow(
      /needs the deployment's agents/,
    );
    expect(t.store.writes).toEqual(before);
  });
});

describe('bad fork requests', () => {
  it('refuses a cursor inside a released session, naming where it was released', async () => {
    // Arrange
    const t = await refundedSession();
    await t.client.release(t.sessionId, { timeoutS: 0 });
    await drain(t.deps);
    const entries = await t.store.readJournal(keyOf(t.sessionId));
    const released = entries.find((e) => e.kind === 'released');

    // Act / Assert
    expect(released).toBeDefined();
    await expect(t.client.fork(t.sessionId, { at: released!.seq, input: { text: 'x' } })).rejects.toThrow(
      `fork cursor ${released!.seq} is inside a released session ${t.sessionId} (released at seq ${released!.seq}); fork before ${released!.seq}`,
    );
  });

  it('over the API: another tenant’s session is not found, an unknown version and a cursor past the end are bad requests', async () => {
    // Arrange: the session is the default tenant's; one caller sees only tenant acme.
    const t = await afterDeployOfVersion2('at-turn');
    const roles = ['submit', 'read'] as const;
    const acme = memoryApi({
      store: t.store as never,
      agents: t.deps.agents,
      resolveCaller: () => ({ principal: 'acme-ops', tenants: ['acme'], roles: [...roles] }),
    });
    const operator = memoryApi({ store: t.store as never, agents: t.deps.agents });
    const last = (await t.store.readJournal(keyOf(t.sessionId))).at(-1)!.seq;
    const path = `/sessions/${t.sessionId}`;

    // Act
    const otherTenant = await acme.call('POST', `${path}/fork`, { body: { at: 0, text: 'x' } });
    const otherTenantRerun = await acme.call('POST', `${path}/rerun`, { body: { turn: 'refund-turn' } });
    const unknownVersion = await operator.call('POST', `${path}/rerun`, { body: { turn: 'refund-turn', version: 3 } });
    const pastTheEnd = await operator.call('POST', `${path}/fork`, { body: { at: last + 5, text: 'x' } });

    // Assert
    expect([otherTenant.status, otherTenant.json.error?.message]).toEqual([404, `session ${t.sessionId} not found`]);
    expect(otherTenantRerun.status).toBe(404);
    expect([unknownVersion.status, unknownVersion.json.error?.message]).toEqual([
      400,
      'agent support-desk has no version 3 (deployed: 1, 2)',
    ]);
    expect([pastTheEnd.status, pastTheEnd.json.error?.message]).toEqual([
      400,
      `fork cursor ${last + 5} is past the end of session ${t.sessionId} (last seq ${last})`,
    ]);
  });
});
