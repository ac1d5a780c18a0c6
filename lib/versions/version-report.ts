import { agentVersions, versionOf } from '../agent/agent-versions.ts';
import type { AgentRegistry } from '../agent/define-agent.ts';
import { TERMINAL_SESSION_STATES } from '../core/vocabulary.ts';
import type { SessionRecord } from '../ports/session-store.ts';

/** One version of one agent: whether the registry at hand deploys it, and the live sessions on it. */
export interface VersionRow {
  readonly agent: string;
  readonly version: number;
  /** In the registry given; undefined when no registry was at hand (a deployed stack's agents). */
  readonly deployed?: boolean | undefined;
  /** Sessions not finished (queued, running, waiting, idle) on this version. */
  readonly live: number;
  /** The oldest of them: when an old version can go is when this one ends. */
  readonly oldest?: { readonly sessionId: string; readonly createdAt: number } | undefined;
}

/**
 * Each version of each agent (or of `agent` alone) with the live sessions on it, from session
 * records (their `agentVersion`; absent: version 1) and the registry's versions, so a version
 * with no sessions shows too. Sorted by agent, then version.
 */
export function versionReport(
  records: readonly SessionRecord[],
  registry: AgentRegistry | undefined,
  agent?: string | undefined,
): VersionRow[] {
  const rows = new Map<string, { agent: string; version: number; live: number; oldest?: SessionRecord }>();
  const row = (name: string, version: number) => {
    const id = `${name}\u0000${version}`;
    const found = rows.get(id) ?? { agent: name, version, live: 0 };
    rows.set(id, found);
    return found;
  };
  for (const name of registry?.keys() ?? []) {
    if (agent !== undefined && name !== agent) continue;
    for (const definition of agentVersions(registry as AgentRegistry, name)) row(name, versionOf(definition));
  }
  for (const record of records) {
    if (agent !== undefined && record.key.agent !== agent) continue;
    if (TERMINAL_SESSION_STATES.includes(record.state)) continue;
    const r = row(record.key.agent, record.agentVersion ?? 1);
    r.live++;
    if (!r.oldest || record.createdAt < r.oldest.createdAt) r.oldest = record;
  }
  return [...rows.values()]
    .sort((a, b) => a.agent.localeCompare(b.agent) || a.version - b.version)
    .map((r) => ({
      agent: r.agent,
      version: r.version,
      ...(registry === undefined
        ? {}
        : { deployed: agentVersions(registry, r.agent).some((d) => versionOf(d) === r.version) }),
      live: r.live,
      ...(r.oldest ? { oldest: { sessionId: r.oldest.key.id, createdAt: r.oldest.createdAt } } : {}),
    }));
}
