import { describe, expect, it } from 'vitest';
import { agentVersions, chooseVersion, versionOf } from '../../../lib/agent/agent-versions.ts';
import { agentRegistry, defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import type { UpgradePolicy } from '../../../lib/core/vocabulary.ts';

const model = scriptedModel({ maxDurationMs: 1_000, script: () => ({ final: 'ok' }) });
const desk = (version?: number, upgrade?: UpgradePolicy) =>
  defineAgent({
    name: 'desk',
    instructions: '',
    model,
    ...(version !== undefined ? { version } : {}),
    ...(upgrade ? { upgrade } : {}),
  });

describe('agent versions', () => {
  it('hold several versions of one agent; the name maps to the newest', () => {
    const registry = agentRegistry([desk(2), desk(1), desk(3)]);
    expect(registry.size).toBe(1);
    expect(versionOf(registry.get('desk')!)).toBe(3);
    expect(agentVersions(registry, 'desk').map(versionOf)).toEqual([1, 2, 3]);
    expect(agentVersions(registry, 'other')).toEqual([]);
  });

  it('count an agent without a version as version 1, and refuse a version registered twice', () => {
    expect(versionOf(desk())).toBe(1);
    expect(() => agentRegistry([desk(), desk(1)])).toThrow(/agent "desk" version 1 is registered twice/);
  });

  it('refuse a version that is not a positive integer and an unknown upgrade policy, naming them', () => {
    expect(() => desk(0)).toThrow(/agent desk: version must be a positive integer, got 0/);
    expect(() => desk(1.5)).toThrow(/got 1.5/);
    expect(() => desk(1, 'later' as UpgradePolicy)).toThrow(/upgrade policy "later" is not one of pin, at-turn, now/);
  });

  it('choose by the newest version’s policy: now at any leg, at-turn at a turn’s start, pin never', () => {
    const choose = (policy: UpgradePolicy, turnStart: boolean) =>
      chooseVersion(agentRegistry([desk(1, policy), desk(2, policy)]), 'desk', 1, turnStart);
    expect(choose('now', false)).toMatchObject({ kind: 'run', from: 1, agent: { version: 2 } });
    expect(choose('at-turn', false)).toEqual({ kind: 'run', agent: expect.objectContaining({ version: 1 }) });
    expect(choose('at-turn', true)).toMatchObject({ kind: 'run', from: 1, agent: { version: 2 } });
    expect(choose('pin', true)).toEqual({ kind: 'run', agent: expect.objectContaining({ version: 1 }) });
  });

  it('report a removed version rather than guess, and an agent not deployed as unknown', () => {
    const registry = agentRegistry([desk(2, 'pin'), desk(3, 'pin')]);
    expect(chooseVersion(registry, 'desk', 1, true)).toEqual({ kind: 'removed', version: 1, deployed: [2, 3] });
    expect(chooseVersion(registry, 'nobody', 1, true)).toEqual({ kind: 'unknown' });
    // A rollback below the session's version is a move to the newest for a policy that moves.
    expect(chooseVersion(agentRegistry([desk(1, 'at-turn')]), 'desk', 2, true)).toMatchObject({ from: 2 });
  });
});
