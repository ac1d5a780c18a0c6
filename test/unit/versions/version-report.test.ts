import { describe, expect, it } from 'vitest';
import { agentRegistry, defineAgent } from '../../../lib/agent/define-agent.ts';
import { scriptedModel } from '../../../lib/agent/scripted-model.ts';
import type { SessionState } from '../../../lib/core/vocabulary.ts';
import type { SessionRecord } from '../../../lib/ports/session-store.ts';
import { versionReport } from '../../../lib/versions/version-report.ts';

const model = scriptedModel({ maxDurationMs: 1_000, script: () => ({ final: 'ok' }) });
const agent = (name: string, version: number) => defineAgent({ name, version, instructions: '', model });

const record = (id: string, agentName: string, state: SessionState, createdAt: number, agentVersion?: number) =>
  ({
    key: { tenant: 't', agent: agentName, id },
    state,
    createdAt,
    ...(agentVersion ? { agentVersion } : {}),
  }) as SessionRecord;

describe('baton versions', () => {
  it('counts live sessions per version with the oldest, shows deployed versions without sessions, skips finished ones', () => {
    const records = [
      record('s-old', 'desk', 'idle', 100),
      record('s-1', 'desk', 'running', 300, 1),
      record('s-2', 'desk', 'waiting', 200, 2),
      record('s-done', 'desk', 'completed', 50, 2),
      record('s-other', 'triage', 'queued', 10, 1),
    ];
    const registry = agentRegistry([agent('desk', 2), agent('desk', 3), agent('triage', 1)]);

    expect(versionReport(records, registry)).toEqual([
      { agent: 'desk', version: 1, deployed: false, live: 2, oldest: { sessionId: 's-old', createdAt: 100 } },
      { agent: 'desk', version: 2, deployed: true, live: 1, oldest: { sessionId: 's-2', createdAt: 200 } },
      { agent: 'desk', version: 3, deployed: true, live: 0 },
      { agent: 'triage', version: 1, deployed: true, live: 1, oldest: { sessionId: 's-other', createdAt: 10 } },
    ]);
    expect(versionReport(records, undefined, 'triage')).toEqual([
      { agent: 'triage', version: 1, live: 1, oldest: { sessionId: 's-other', createdAt: 10 } },
    ]);
  });
});
