import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type AgentDefinition, agentRegistry, defineAgent } from '../../../lib/agent/define-agent.ts';
import { defineTool } from '../../../lib/agent/define-tool.ts';
import { scriptedModel, transcriptStats } from '../../../lib/agent/scripted-model.ts';
import { checkUpgrade as checkUpgradeCommand, readExported } from '../../../lib/cli/versions.ts';
import { BatonError } from '../../../lib/core/errors.ts';
import { deriveSessionId, type SessionKey } from '../../../lib/core/ids.ts';
import type { JournalEntry } from '../../../lib/core/journal.ts';
import type { UpgradePolicy } from '../../../lib/core/vocabulary.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { acceptTurn } from '../../../lib/runtime/turn-intake.ts';
import { checkSession, checkUpgrade, liveSessionsForCheck } from '../../../lib/versions/upgrade-check.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const key: SessionKey = { tenant: 'default', agent: 'desk', id: deriveSessionId('default', 'desk', 'T1') };

/** A tool whose first call fails retryably: the turn waits mid-way with the call pending. */
const refund = () => {
  let calls = 0;
  return defineTool({
    name: 'refund',
    description: 'Refunds.',
    input: z.object({}),
    effect: 'pure',
    maxDurationMs: 1_000,
    run: async () => {
      if (++calls === 1) throw new BatonError('bank busy', { retryable: true });
      return 'R-1';
    },
  });
};

function desk(version: number, upgrade: UpgradePolicy, more: Partial<Parameters<typeof defineAgent>[0]> = {}) {
  const tools = more.tools ?? [];
  return defineAgent({
    name: 'desk',
    version,
    upgrade,
    instructions: '',
    conversation: true,
    model: scriptedModel({
      maxDurationMs: 1_000,
      script: (messages) =>
        tools.length > 0 && transcriptStats(messages).toolResults === 0
          ? { toolCalls: [{ id: 'c1', name: 'refund', input: {} }] }
          : { final: 'done' },
    }),
    ...more,
  });
}

/** A conversation on version 1 waiting mid-turn with a call to `refund` pending, and a second turn queued. */
async function liveSession() {
  const test = makeTestDeps([desk(1, 'at-turn', { tools: [refund()] })]);
  await acceptTicket(ticketBody('desk', 'T1', 'hello'), undefined, test.deps);
  await drain(test.deps, { maxKicks: 1 });
  await acceptTurn({ key, turnId: 'T2', ticketId: 'T2', input: 'again', sweepGraceMs: 1_500 }, test.deps);
  return test;
}

const check = async (agents: AgentDefinition[]) => {
  const { store } = await liveSession();
  return checkUpgrade(await liveSessionsForCheck(store, 10), agentRegistry(agents));
};

describe('check-upgrade', () => {
  it('passes a session the new registry can take up', async () => {
    expect(await check([desk(1, 'at-turn', { tools: [refund()] }), desk(2, 'at-turn', { tools: [refund()] })])).toEqual(
      [],
    );
  });

  it('flags a pending call to a tool the new version removed, with the session id and the reason', async () => {
    const breaks = await check([desk(2, 'now')]);
    expect(breaks).toEqual([
      {
        sessionId: key.id,
        agent: 'desk',
        reasons: ['pending call c1 to tool refund, which desk version 2 does not define'],
      },
    ]);
  });

  it('flags a queued turn whose input the new input schema refuses', async () => {
    const strict = desk(2, 'at-turn', { tools: [refund()], input: z.object({ question: z.string() }) });
    const [found] = await check([desk(1, 'at-turn', { tools: [refund()] }), strict]);
    expect(found?.reasons).toEqual([
      expect.stringMatching(/^queued turn T2: its input is refused by desk version 2: /),
    ]);
  });

  it('flags a session in flight on a version the new registry removed and its policy keeps', async () => {
    const [found] = await check([desk(2, 'pin', { tools: [refund()] })]);
    expect(found?.reasons[0]).toMatch(/agent desk version 1, which this session runs on, is no longer deployed/);
  });

  it('flags a final answer the new output schema refuses', () => {
    const base = { epoch: 1, writeId: 'w', at: 0, turnId: 'T1' };
    const entries = [
      { ...base, seq: 1, kind: 'input', data: { input: 'hi', agentVersion: 1 } },
      {
        ...base,
        seq: 2,
        kind: 'model',
        data: { text: '{"answer":3}', toolCalls: [], stopReason: 'end', usage: { inputTokens: 1, outputTokens: 1 } },
      },
    ] as JournalEntry[];
    const typed = desk(1, 'at-turn', { output: z.object({ answer: z.string() }) });
    const reasons = checkSession({ key, entries, pendingInputs: [] }, agentRegistry([typed]));
    expect(reasons).toEqual([
      expect.stringMatching(/^the final answer of turn T1 would fail desk version 1: .*answer/),
    ]);
  });

  it('reads exported sessions back as they were written, and names a file that is not one', async () => {
    // Arrange
    const { store } = await liveSession();
    const dir = mkdtempSync(join(tmpdir(), 'baton-export-'));
    const sessions = await liveSessionsForCheck(store, 10);
    for (const s of sessions) writeFileSync(join(dir, `${s.key.id}.json`), JSON.stringify(s));

    // Act / Assert
    expect(readExported(dir)).toEqual(sessions);
    writeFileSync(join(dir, 'zz.json'), JSON.stringify({ key, entries: [{ seq: 1, kind: 'nonsense' }] }));
    expect(() => readExported(dir)).toThrow(/zz\.json: entry 1 is not a journal entry/);
  });

  it('reads many live sessions at once and returns the oldest first, up to the limit, each with its own journal', async () => {
    // Arrange: 40 conversations accepted one after another (the clock moves between them).
    const test = makeTestDeps([desk(1, 'at-turn')]);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      await acceptTicket(ticketBody('desk', `S${i}`, `hello ${i}`), undefined, test.deps);
      ids.push(deriveSessionId('default', 'desk', `S${i}`));
      test.clock.advance(10);
    }
    await drain(test.deps);

    // Act
    const sessions = await liveSessionsForCheck(test.store, 30);

    // Assert
    expect(sessions.map((s) => s.key.id)).toEqual(ids.slice(0, 30));
    for (const s of sessions) {
      expect(s.entries.find((e) => e.kind === 'input')?.data).toMatchObject({
        input: `hello ${ids.indexOf(s.key.id)}`,
      });
    }
  });

  it('refuses --sessions with --from, and a --sessions that is not a count', async () => {
    const io = { json: false, out: () => {}, connect: {} };
    await expect(checkUpgradeCommand(['--agents', 'm.ts', '--sessions', '5', '--from', 'd'], io)).rejects.toThrow(
      /--sessions and --from exclude each other/,
    );
    await expect(checkUpgradeCommand(['--agents', 'm.ts', '--sessions', 'lots'], io)).rejects.toThrow(
      /--sessions must be a whole number/,
    );
  });
});
