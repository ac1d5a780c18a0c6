import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLedger } from '../../examples/simulated/ledger.ts';
import type { Forked } from '../../lib/client/baton-client.ts';
import { deriveSessionId, type SessionKey } from '../../lib/core/ids.ts';
import { entryFormat, JOURNAL_FORMAT_VERSION, type JournalEntry } from '../../lib/core/journal.ts';
import type { Result } from '../../lib/core/messages.ts';
import type { UpgradePolicy } from '../../lib/core/vocabulary.ts';
import { DESK_UPGRADE_ENV, DESK_VERSIONS_MODULE } from '../fixtures/agents/desk-versions.ts';
import { DESK_WITHOUT_REFUNDS_MODULE } from '../fixtures/agents/desk-without-refunds.ts';
import { batonCli, batonOk } from '../fixtures/cli.ts';
import { startTestStack, type TestStack } from '../fixtures/stack.ts';
import { waitFor } from '../fixtures/wait-for.ts';

/**
 * Issue 26's "done when" on the local stack, with real SDK clients on DynamoDB Local and fauxqs:
 * support-desk sessions started on version 1 by an old build (format 1, version 1 only) go through
 * a deploy that adds version 2, with old and new workers polling the same queues at once; then a
 * fork of a session that issued a refund, asked and reused; and check-upgrade's CI gate.
 */

const AGENT = 'support-desk';
/** The functions of the old build (a module that builds its handlers when loaded, so named, not imported). */
const OLD_BUILD_MODULE = fileURLToPath(new URL('../fixtures/handlers/old-build.ts', import.meta.url));
const keyOf = (id: string): SessionKey => ({ tenant: 'default', agent: AGENT, id });
const functionsOf = (module: string) => ({
  intake: { module, export: 'intake' },
  step: { module, export: 'step' },
  sweeper: { module, export: 'sweeper' },
});

/** One stack of the old build (support-desk version 1 only, journal format 1) on the tables and queues of `prefix`. */
const startOldBuild = (prefix: string, ledger: string) =>
  startTestStack({
    prefix,
    workers: 1,
    functions: functionsOf(OLD_BUILD_MODULE),
    handlerEnv: { BATON_LEDGER: ledger },
  });

/** One stack of the new build (versions 1 and 2, today's format) on the same tables and queues. */
const startNewBuild = (prefix: string, ledger: string, upgrade: UpgradePolicy) =>
  startTestStack({
    prefix,
    workers: 1,
    handlerEnv: { BATON_AGENTS_MODULE: DESK_VERSIONS_MODULE, [DESK_UPGRADE_ENV]: upgrade, BATON_LEDGER: ledger },
  });

/** The agent version each turn's input records, in order (format 1 inputs record none). */
const inputVersions = (entries: readonly JournalEntry[]) =>
  entries.flatMap((e) => (e.kind === 'input' ? [e.data.agentVersion] : []));

/** Turns with other than exactly one input and one outcome: what a duplicated or lost turn leaves. */
function turnsNotOnce(entries: readonly JournalEntry[]): string[] {
  const counts = new Map<string, { inputs: number; outcomes: number }>();
  for (const e of entries) {
    if (e.turnId === undefined || (e.kind !== 'input' && e.kind !== 'outcome')) continue;
    const count = counts.get(e.turnId) ?? { inputs: 0, outcomes: 0 };
    counts.set(
      e.turnId,
      e.kind === 'input' ? { ...count, inputs: count.inputs + 1 } : { ...count, outcomes: count.outcomes + 1 },
    );
  }
  return [...counts].filter(([, c]) => c.inputs !== 1 || c.outcomes !== 1).map(([turn]) => turn);
}

// Four stack starts of worker processes on a busy 2-core machine, and waits of a lease TTL for a newer worker: minutes.
describe.each(['pin', 'at-turn'] as const)('a deploy that adds support-desk version 2 (%s)', (upgrade) => {
  const prefix = `vers${process.pid}${upgrade.replace('-', '')}`;
  const ledger = join(mkdtempSync(join(tmpdir(), 'baton-versions-')), 'ledger.jsonl');
  const stacks: TestStack[] = [];
  let reader: TestStack;
  let previousLedger: string | undefined;

  beforeAll(() => {
    previousLedger = process.env.BATON_LEDGER;
    process.env.BATON_LEDGER = ledger;
  });
  afterAll(async () => {
    for (const stack of stacks) await stack.stop();
    if (previousLedger === undefined) delete process.env.BATON_LEDGER;
    else process.env.BATON_LEDGER = previousLedger;
  });

  const start = async (build: () => Promise<TestStack>) => {
    const stack = await build();
    stacks.push(stack);
    return stack;
  };
  const stop = async (stack: TestStack) => {
    await stack.stop();
    stacks.splice(stacks.indexOf(stack), 1);
  };
  const resultOf = async (ticketId: string): Promise<Result> =>
    (await reader.awaitResults((rs) => rs.some((r) => r.ticketId === ticketId), 120_000)).find(
      (r) => r.ticketId === ticketId,
    )!;
  const sessions = ['a', 'b', 'c']
    .map((name) => ({ ticketId: `${upgrade}-${name}` }))
    .map(({ ticketId }) => ({
      ticketId,
      id: deriveSessionId('default', AGENT, ticketId),
    }));
  /** Sends turn `name` to every session at once and waits for every result. */
  const turnEverywhere = async (name: string, text: string) => {
    await Promise.all(
      sessions.map(async (s) => {
        await waitFor(async () => (await reader.store.getSession(keyOf(s.id)))?.state === 'idle', {
          what: `session ${s.ticketId} idle before turn ${name}`,
          timeoutMs: 120_000,
        });
        await reader.client.send(s.id, { text }, { id: `${s.ticketId}-${name}` });
      }),
    );
    return Promise.all(sessions.map((s) => resultOf(`${s.ticketId}-${name}`)));
  };

  it('keeps every session going with old and new workers at once: nothing failed, nothing duplicated, each turn on the version its policy says', {
    timeout: 600_000,
  }, async () => {
    // Arrange: before the deploy, the old build alone starts three sessions on version 1.
    const old = await start(() => startOldBuild(prefix, ledger));
    reader = old;
    for (const s of sessions) await old.client.submit({ agent: AGENT, ticketId: s.ticketId, input: { text: 'hello' } });
    await Promise.all(sessions.map((s) => resultOf(s.ticketId)));

    // Act: the deploy is half done (both builds poll the same queues), then done (the old build gone).
    const fresh = await start(() => startNewBuild(prefix, ledger, upgrade));
    await turnEverywhere('t2', 'work 2');
    await turnEverywhere('t3', 'work 1');
    await stop(old);
    const last = await turnEverywhere('t4', 'hello again');

    // Assert
    expect(reader.results.map((r) => [r.ticketId, r.status]).filter(([, status]) => status !== 'completed')).toEqual(
      [],
    );
    for (const s of sessions) {
      const entries = await fresh.store.readJournal(keyOf(s.id));
      const versions = inputVersions(entries);
      const firstNew = entries.findIndex((e) => entryFormat(e) >= 2);
      expect(turnsNotOnce(entries), `session ${s.ticketId}`).toEqual([]);
      // Once a new worker wrote, the old one wrote nothing more: it left the session to a new one.
      expect(
        entries.slice(firstNew).every((e) => entryFormat(e) === JOURNAL_FORMAT_VERSION),
        `session ${s.ticketId}`,
      ).toBe(true);
      if (upgrade === 'pin') {
        expect(
          versions.every((v) => v === undefined || v === 1),
          `session ${s.ticketId}: ${versions}`,
        ).toBe(true);
        expect(entries.some((e) => e.kind === 'upgraded')).toBe(false);
      } else {
        // A turn the new build started is on version 2, and so is every turn after it.
        const firstOnTwo = versions.indexOf(2);
        expect(firstOnTwo, `session ${s.ticketId}: ${versions}`).toBeGreaterThan(0);
        expect(
          versions.slice(firstOnTwo).every((v) => v === 2),
          `session ${s.ticketId}: ${versions}`,
        ).toBe(true);
        expect(entries.filter((e) => e.kind === 'upgraded').map((e) => e.data)).toEqual([{ from: 1, to: 2 }]);
      }
      // The record indexes the version for `baton versions` (absent: 1).
      expect((await fresh.store.getSession(keyOf(s.id)))?.agentVersion ?? 1).toBe(upgrade === 'pin' ? 1 : 2);
    }
    expect(last.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
  });

  it('lets an old worker meet a session a new worker wrote: it leaves it untouched, and a new worker finishes the turn', {
    timeout: 600_000,
  }, async () => {
    // Arrange: only the old build runs; session b's journal is the new build's by now.
    const [fresh] = stacks;
    await stop(fresh!);
    const old = await start(() => startOldBuild(prefix, ledger));
    const b = sessions[1]!;
    const before = await reader.store.getSession(keyOf(b.id));
    const journalBefore = await reader.store.readJournal(keyOf(b.id));

    // Act
    await reader.client.send(b.id, { text: 'anyone there?' }, { id: `${b.ticketId}-t5` });
    const left = await waitFor(
      async () => {
        const record = await reader.store.getSession(keyOf(b.id));
        return record && record.epoch > before!.epoch && record.owner === undefined ? record : undefined;
      },
      { what: 'the old worker to take the kick and leave the session', timeoutMs: 120_000 },
    );
    const journalLeft = await reader.store.readJournal(keyOf(b.id));
    await stop(old);
    await start(() => startNewBuild(prefix, ledger, upgrade));
    const result = await resultOf(`${b.ticketId}-t5`);

    // Assert: the old worker wrote nothing and failed nothing; the new one ran the turn.
    expect(left.state).toBe('queued');
    expect(journalLeft).toEqual(journalBefore);
    expect(result.status).toBe('completed');
    const entries = await reader.store.readJournal(keyOf(b.id));
    expect(turnsNotOnce(entries)).toEqual([]);
    expect(inputVersions(entries).at(-1)).toBe(upgrade === 'pin' ? 1 : 2);
  });

  it.runIf(upgrade === 'at-turn')(
    'forks a session that issued a refund: asked before refunding again, reused with the same refund id and no second refund; check-upgrade flags the fork waiting on a removed tool',
    { timeout: 600_000 },
    async () => {
      // Arrange: session a refunds order O-7 with a human's approval (the new build runs).
      const stack = stacks.at(-1)!;
      const a = sessions[0]!;
      await waitFor(async () => (await reader.store.getSession(keyOf(a.id)))?.state === 'idle', {
        what: 'session a idle',
        timeoutMs: 120_000,
      });
      const refundTurn = `${a.ticketId}-refund`;
      await reader.client.send(a.id, { text: 'refund O-7' }, { id: refundTurn });
      await waitFor(async () => (await reader.client.status(a.id))?.pendingApprovals?.length, {
        what: 'the refund approval',
        timeoutMs: 120_000,
      });
      const callId = (await reader.client.status(a.id))!.pendingApprovals![0]!.callId;
      await reader.client.approve(a.id, callId, { approved: true });
      const refunded = await resultOf(refundTurn);
      const refunds = () => readLedger().filter((l) => l.operation === 'issueRefund');

      // Act
      const asked = JSON.parse(
        await batonOk(['rerun', a.id, '--turn', refundTurn, '--effects', 'ask', '--json'], stack.stateDir),
      ) as Forked;
      const waiting = await waitFor(
        async () => {
          const status = await reader.client.status(asked.sessionId);
          return status?.pendingApprovals?.length ? status : undefined;
        },
        { what: 'the fork to ask before refunding again', timeoutMs: 120_000 },
      );
      const check = await batonCli(['check-upgrade', '--agents', DESK_WITHOUT_REFUNDS_MODULE], stack.stateDir);
      const reused = JSON.parse(
        await batonOk(['rerun', a.id, '--turn', refundTurn, '--effects', 'reuse', '--json'], stack.stateDir),
      ) as Forked;
      const reusedResult = await resultOf(reused.ticketId);

      // Assert
      expect(refunded).toMatchObject({
        status: 'completed',
        output: expect.stringMatching(/^refund R-\S+ issued for O-7$/),
      });
      expect(waiting.pendingApprovals).toEqual([
        expect.objectContaining({
          tool: 'issueRefund',
          ranBefore: expect.objectContaining({ session: a.id, idempotencyKey: refunds()[0]?.idempotencyKey }),
        }),
      ]);
      expect(check.code).toBe(1);
      expect(check.stdout).toContain(asked.sessionId);
      expect(check.stdout).toMatch(
        /pending call \S+ to tool issueRefund, which support-desk version 3 does not define/,
      );
      expect(check.stdout).toMatch(/ checked, 1 would break$/m);
      expect(reusedResult).toMatchObject({ status: 'completed', output: refunded.output });
      expect(refunds()).toHaveLength(1);
    },
  );
});
