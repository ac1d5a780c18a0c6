import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentDefinition, defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, transcriptStats } from '../../../lib/agent/scripted-model.ts';
import { BatonError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import { JOURNAL_FORMAT_VERSION } from '../../../lib/core/journal.ts';
import type { UpgradePolicy } from '../../../lib/core/vocabulary.ts';
import type { ChatMessage } from '../../../lib/ports/model-client.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { acceptTurn } from '../../../lib/runtime/turn-intake.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const key: SessionKey = {
  tenant: 'default',
  agent: 'support-desk',
  id: deriveSessionId('default', 'support-desk', 'T1'),
};

const lastUserText = (messages: readonly ChatMessage[]): string => {
  const texts = messages.filter((m) => m.role === 'user').flatMap((m) => m.content.filter((c) => c.type === 'text'));
  const last = texts.at(-1);
  return last?.type === 'text' ? last.text : '';
};

/** Fails its first call with a retryable error: the turn waits for a retry in the middle. */
function flakyTool() {
  let calls = 0;
  return defineTool({
    name: 'flaky',
    description: 'Fails once.',
    input: z.object({}),
    effect: 'pure',
    maxDurationMs: 1_000,
    retry: { attempts: 3 },
    run: async () => {
      calls++;
      if (calls === 1) throw new BatonError('downstream busy', { retryable: true });
      return 'fine';
    },
  });
}

/** support-desk at `version`: answers `vN: <last user text>`, after one `flaky` call when `withTool`. */
function desk(version: number, upgrade: UpgradePolicy, tool?: ReturnType<typeof flakyTool>): AgentDefinition {
  return defineAgent({
    name: 'support-desk',
    version,
    upgrade,
    instructions: `Desk v${version}.`,
    conversation: true,
    tools: tool ? [tool] : [],
    model: scriptedModel({
      maxDurationMs: 1_000,
      script: (messages) =>
        tool && transcriptStats(messages).toolResults === 0
          ? { toolCalls: [{ id: 'c1', name: 'flaky', input: {} }] }
          : { final: `v${version}: ${lastUserText(messages)}` },
    }),
  });
}

/** A deployment of `agents` over the same store, queues and clock as `base` (a deploy in place). */
function deploy(base: ReturnType<typeof makeTestDeps>, agents: AgentDefinition[]) {
  return makeTestDeps(agents, {
    store: base.store,
    workQueue: base.workQueue,
    results: base.results,
    clock: base.clock,
  });
}

/** A conversation whose first turn ran on version 1. */
async function sessionOnVersion1(policy: UpgradePolicy) {
  const first = makeTestDeps([desk(1, policy)]);
  await acceptTicket(ticketBody('support-desk', 'T1', 'hello'), undefined, first.deps);
  await drain(first.deps);
  return first;
}

const nextTurn = (deps: ReturnType<typeof makeTestDeps>['deps']) =>
  acceptTurn({ key, turnId: 'T2', ticketId: 'T2', input: 'again', sweepGraceMs: 1_500 }, deps);

describe('agent versions across a deploy', () => {
  it('records the version a session started on, on its record and its turn’s input', async () => {
    // Arrange / Act
    const { store } = await sessionOnVersion1('at-turn');

    // Assert
    expect(await store.getSession(key)).toMatchObject({ agentVersion: 1, journalFormat: JOURNAL_FORMAT_VERSION });
    const input = (await store.readJournal(key)).find((e) => e.kind === 'input');
    expect(input?.data).toMatchObject({ input: 'hello', agentVersion: 1 });
    expect(await store.getTurn(key, 'T1')).toMatchObject({ outcome: { output: 'v1: hello' } });
  });

  it('at-turn: moves a conversation to the newest version at its next turn, journaled as upgraded', async () => {
    // Arrange
    const base = await sessionOnVersion1('at-turn');
    const next = deploy(base, [desk(1, 'at-turn'), desk(2, 'at-turn')]);

    // Act
    await nextTurn(next.deps);
    await drain(next.deps);

    // Assert
    expect(await base.store.getTurn(key, 'T2')).toMatchObject({
      outcome: { status: 'completed', output: 'v2: again' },
    });
    const entries = await base.store.readJournal(key);
    const turn2 = entries.filter((e) => e.turnId === 'T2').map((e) => e.kind);
    expect(turn2.slice(0, 2)).toEqual(['input', 'upgraded']);
    expect(entries.find((e) => e.kind === 'upgraded')?.data).toEqual({ from: 1, to: 2 });
    expect(
      entries.filter((e) => e.kind === 'input').map((e) => (e.data as { agentVersion?: number }).agentVersion),
    ).toEqual([1, 2]);
    expect(await base.store.getSession(key)).toMatchObject({ agentVersion: 2 });
  });

  it('pin: keeps a conversation on the version it started on while that version is deployed', async () => {
    // Arrange
    const base = await sessionOnVersion1('pin');
    const next = deploy(base, [desk(1, 'pin'), desk(2, 'pin')]);

    // Act
    await nextTurn(next.deps);
    await drain(next.deps);

    // Assert
    expect(await base.store.getTurn(key, 'T2')).toMatchObject({
      outcome: { status: 'completed', output: 'v1: again' },
    });
    expect((await base.store.readJournal(key)).some((e) => e.kind === 'upgraded')).toBe(false);
  });

  it('pin: fails the next turn naming the removed version, never as corrupt state', async () => {
    // Arrange
    const base = await sessionOnVersion1('pin');
    const next = deploy(base, [desk(2, 'pin')]);

    // Act
    await nextTurn(next.deps);
    await drain(next.deps);

    // Assert
    const turn = await base.store.getTurn(key, 'T2');
    expect(turn?.outcome?.status).toBe('failed');
    expect(turn?.outcome?.error).toMatch(/agent support-desk version 1, .* no longer deployed \(deployed: 2\)/);
    expect(turn?.outcome?.error).not.toMatch(/validation|corrupt/i);
    expect(await base.store.getSession(key)).toMatchObject({ state: 'idle' });
  });

  it('now: moves a session in the middle of a turn at its next leg', async () => {
    // Arrange: turn 1 waits for a retry of its tool call on version 1.
    const tool = flakyTool();
    const first = makeTestDeps([desk(1, 'now', tool)]);
    await acceptTicket(ticketBody('support-desk', 'T1', 'hello'), undefined, first.deps);
    expect(await drain(first.deps, { maxKicks: 1 })).toEqual(['waiting']);
    const next = deploy(first, [desk(1, 'now', tool), desk(2, 'now', tool)]);

    // Act
    await drain(next.deps);

    // Assert: the move is journaled in turn 1, after its error, and version 2 answered.
    const kinds = (await first.store.readJournal(key)).map((e) => e.kind);
    expect(kinds.indexOf('upgraded')).toBeGreaterThan(kinds.indexOf('error'));
    expect(kinds.indexOf('upgraded')).toBeLessThan(kinds.lastIndexOf('tool'));
    expect((await first.store.getTurn(key, 'T1'))?.outcome).toEqual(
      expect.objectContaining({ status: 'completed', output: 'v2: hello' }),
    );
  });

  it('at-turn: fails a turn in flight whose version was removed, naming it', async () => {
    // Arrange
    const tool = flakyTool();
    const first = makeTestDeps([desk(1, 'at-turn', tool)]);
    await acceptTicket(ticketBody('support-desk', 'T1', 'hello'), undefined, first.deps);
    await drain(first.deps, { maxKicks: 1 });
    const next = deploy(first, [desk(2, 'at-turn', tool)]);

    // Act
    await drain(next.deps);

    // Assert
    const turn = await first.store.getTurn(key, 'T1');
    expect(turn?.outcome?.error).toMatch(
      /agent support-desk version 1, which this session runs on, is no longer deployed/,
    );
  });

  it('brings a record whose version lags the journal’s up to it at the next leg (a leg that died between the two)', async () => {
    // Arrange: a turn waiting mid-way on version 1, whose record says otherwise.
    const tool = flakyTool();
    const test = makeTestDeps([desk(1, 'at-turn', tool)]);
    await acceptTicket(ticketBody('support-desk', 'T1', 'hello'), undefined, test.deps);
    await drain(test.deps, { maxKicks: 1 });
    const meta = test.store.rawItem(key, 'META');
    test.store.putRawItem(key, 'META', { ...meta, agentVersion: 7 });

    // Act
    await drain(test.deps);

    // Assert
    expect(await test.store.getSession(key)).toMatchObject({ agentVersion: 1 });
    expect(await test.store.getTurn(key, 'T1')).toMatchObject({
      outcome: { status: 'completed', output: 'v1: hello' },
    });
  });
});
