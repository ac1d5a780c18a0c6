import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentRegistry } from '../agent/define-agent.ts';
import { loadAgents } from '../local/agents-module.ts';
import { clientForTarget } from '../local/store-target.ts';
import type { SessionStore } from '../ports/session-store.ts';
import {
  checkUpgrade as checkSessions,
  liveSessionsForCheck,
  parseExportedSession,
  type SessionForCheck,
} from '../versions/upgrade-check.ts';
import { versionReport } from '../versions/version-report.ts';
import { resolveTarget } from './connect.ts';
import type { CommandIo } from './session-commands.ts';

/** Sessions `check-upgrade` reads when `--sessions` is not given. */
const DEFAULT_CHECK_SESSIONS = 1_000;

/** The table of the target; these commands read session records and journals directly (no `--api`). */
async function storeOf(
  io: CommandIo,
): Promise<{ store: SessionStore; agentsModule?: string | undefined; local: boolean }> {
  if (io.connect.api)
    throw new Error('this command reads the stack’s table: use --stack NAME or the local stack, not --api');
  const target = await resolveTarget(io.connect);
  return { store: clientForTarget(target).store, agentsModule: target.agentsModule, local: target.local };
}

/** `baton versions [AGENT]`: each version and the live sessions on it (counts, oldest). */
export async function versions(args: string[], io: CommandIo): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length > 1) throw new Error('usage: baton versions [AGENT]');
  const { store, agentsModule, local } = await storeOf(io);
  // The local stack's agents module says what is deployed; a deployed stack's code is not at hand.
  const registry = local ? await loadAgents(agentsModule) : undefined;
  const records = await store.listSessions({ limit: Number.MAX_SAFE_INTEGER });
  const rows = versionReport(records, registry, positionals[0]);
  if (io.json) {
    io.out(JSON.stringify(rows));
    return 0;
  }
  if (rows.length === 0) io.out(positionals[0] ? `no versions of agent ${positionals[0]}` : 'no agents');
  for (const row of rows) {
    const deployed = row.deployed === undefined ? '' : row.deployed ? ' deployed' : ' not deployed';
    const oldest = row.oldest
      ? `, oldest ${row.oldest.sessionId} (${new Date(row.oldest.createdAt).toISOString()})`
      : '';
    io.out(`${row.agent} v${row.version}${deployed}: ${row.live} live session${row.live === 1 ? '' : 's'}${oldest}`);
  }
  return 0;
}

/**
 * `baton check-upgrade --agents NEW_MODULE [--sessions N | --from DIR] [--export DIR]`: folds live
 * (or exported) sessions with the new registry, calling no model and no tool, and reports each
 * session that would break. Exits 1 when any would: a CI gate before a deploy.
 */
export async function checkUpgrade(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      agents: { type: 'string' },
      sessions: { type: 'string' },
      from: { type: 'string' },
      export: { type: 'string' },
    },
  });
  const usage = 'baton check-upgrade --agents NEW_MODULE [--sessions N | --from DIR] [--export DIR]';
  if (positionals.length > 0 || !values.agents) throw new Error(`usage: ${usage}`);
  if (values.sessions !== undefined && values.from !== undefined)
    throw new Error('--sessions and --from exclude each other: check live sessions or exported ones');
  const limit = values.sessions === undefined ? DEFAULT_CHECK_SESSIONS : Number(values.sessions);
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new Error(`--sessions must be a whole number of sessions, 1 or more, got '${values.sessions}'`);
  const registry: AgentRegistry = await loadAgents(values.agents);
  const sessions = values.from
    ? readExported(values.from)
    : await liveSessionsForCheck((await storeOf(io)).store, limit);
  if (values.export) writeExported(values.export, sessions);
  const breaks = checkSessions(sessions, registry);
  if (io.json) io.out(JSON.stringify({ checked: sessions.length, breaks }));
  else {
    for (const b of breaks) for (const reason of b.reasons) io.out(`${b.sessionId} (${b.agent}): ${reason}`);
    io.out(`${sessions.length} session${sessions.length === 1 ? '' : 's'} checked, ${breaks.length} would break`);
  }
  return breaks.length > 0 ? 1 : 0;
}

/** Exported sessions: every `*.json` file of `dir`, one session each (what `--export` writes). */
export function readExported(dir: string): SessionForCheck[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => {
      const where = join(dir, name);
      let raw: unknown;
      try {
        raw = JSON.parse(readFileSync(where, 'utf8'));
      } catch (error) {
        throw new Error(`${where}: not JSON (${(error as Error).message})`);
      }
      return parseExportedSession(raw, where);
    });
}

function writeExported(dir: string, sessions: readonly SessionForCheck[]): void {
  for (const session of sessions) writeFileSync(join(dir, `${session.key.id}.json`), `${JSON.stringify(session)}\n`);
}
