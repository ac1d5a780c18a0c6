import { chooseVersion, removedVersionMessage, versionOf } from '../agent/agent-versions.ts';
import type { AgentDefinition, AgentRegistry } from '../agent/define-agent.ts';
import { foldJournal } from '../core/fold.ts';
import type { SessionKey } from '../core/ids.ts';
import { type JournalEntry, parseEntry } from '../core/journal.ts';
import { describeIssues } from '../core/messages.ts';
import { TASK_TOOL_NAMES } from '../core/tasks.ts';
import { TERMINAL_SESSION_STATES } from '../core/vocabulary.ts';
import type { SessionRecord, SessionStore } from '../ports/session-store.ts';
import { finalOutcome } from '../runtime/leg/turn-step.ts';

/**
 * The pre-deploy check: folds a session's journal with a new registry — no model, no tool, no
 * write — and says what would break when the new code took it up.
 */

/** What the check reads of a session: its journal, the version it runs on, and the inputs still to start. */
export interface SessionForCheck {
  readonly key: SessionKey;
  /** The record's agent version (absent: 1); the journal's, when it has one, wins. */
  readonly agentVersion?: number | undefined;
  readonly entries: readonly JournalEntry[];
  /** Turn inputs accepted and not started yet (the active turn's before its leg, then the queue), in order. */
  readonly pendingInputs: readonly { readonly turnId: string; readonly input: unknown }[];
}

/** A session that would break, and every reason found. */
export interface UpgradeBreak {
  readonly sessionId: string;
  readonly agent: string;
  readonly reasons: readonly string[];
}

/** What would break for one session under `registry`; an empty list when it would go on. */
export function checkSession(session: SessionForCheck, registry: AgentRegistry): string[] {
  const name = session.key.agent;
  const view = foldJournal(session.entries);
  const current = view.agentVersion ?? session.agentVersion ?? 1;
  const inTurn = view.turnId !== undefined && view.outcome === undefined;
  const reasons: string[] = [];
  const forkPinned = view.fork?.version !== undefined;
  const now = chooseVersion(registry, name, current, !inTurn, forkPinned);
  if (now.kind === 'unknown') return [`agent ${name} is not in the new registry`];
  if (now.kind === 'removed' && inTurn) reasons.push(removedVersionMessage(name, now));
  const running = now.kind === 'run' ? now.agent : undefined;
  if (running && inTurn) {
    for (const pending of view.pendingCalls) {
      const tool = pending.call.name;
      if (!knowsTool(running, tool))
        reasons.push(
          `pending call ${pending.call.id} to tool ${tool}, which ${name} version ${versionOf(running)} does not define`,
        );
    }
    if (view.finalText !== undefined && running.output) {
      const refused = refusedOutput(running, view.finalText);
      if (refused) reasons.push(`the final answer of turn ${view.turnId} ${refused}`);
    }
  }
  // The inputs still to start run on the version a turn's start chooses.
  const next = chooseVersion(registry, name, now.kind === 'run' ? versionOf(now.agent) : current, true, forkPinned);
  for (const pending of session.pendingInputs) {
    if (next.kind !== 'run') {
      if (next.kind === 'removed') reasons.push(`queued turn ${pending.turnId}: ${removedVersionMessage(name, next)}`);
      break;
    }
    const parsed = next.agent.input?.safeParse(pending.input);
    if (parsed && !parsed.success)
      reasons.push(
        `queued turn ${pending.turnId}: its input is refused by ${name} version ${versionOf(next.agent)}: ${describeIssues(parsed.error)}`,
      );
  }
  return reasons;
}

/** Every session that would break, with its reasons. */
export function checkUpgrade(sessions: readonly SessionForCheck[], registry: AgentRegistry): UpgradeBreak[] {
  return sessions.flatMap((session) => {
    const reasons = checkSession(session, registry);
    return reasons.length === 0 ? [] : [{ sessionId: session.key.id, agent: session.key.agent, reasons }];
  });
}

/**
 * An exported session (what `baton check-upgrade --export DIR` writes, one JSON file per session),
 * validated: it is input from a file, so it is untrusted like stored state.
 */
export function parseExportedSession(raw: unknown, where: string): SessionForCheck {
  const value = raw as Partial<Record<keyof SessionForCheck, unknown>> | undefined;
  const key = value?.key as Partial<SessionKey> | undefined;
  if (typeof key?.tenant !== 'string' || typeof key.agent !== 'string' || typeof key.id !== 'string')
    throw new Error(`${where}: "key" must be {tenant, agent, id}`);
  if (!Array.isArray(value?.entries)) throw new Error(`${where}: "entries" must be the session's journal entries`);
  const pending = value.pendingInputs ?? [];
  if (!Array.isArray(pending) || pending.some((p) => typeof (p as { turnId?: unknown })?.turnId !== 'string'))
    throw new Error(`${where}: "pendingInputs" must be a list of {turnId, input}`);
  const version = value.agentVersion;
  if (version !== undefined && !(Number.isInteger(version) && (version as number) > 0))
    throw new Error(`${where}: "agentVersion" must be a positive integer`);
  const entries = value.entries.map((entry, i) => {
    try {
      return parseEntry(entry);
    } catch (error) {
      throw new Error(`${where}: entry ${i + 1} is not a journal entry: ${(error as Error).message}`);
    }
  });
  return {
    key: { tenant: key.tenant, agent: key.agent, id: key.id },
    ...(version === undefined ? {} : { agentVersion: version as number }),
    entries,
    pendingInputs: pending as SessionForCheck['pendingInputs'],
  };
}

const knowsTool = (agent: AgentDefinition, tool: string): boolean =>
  agent.tools.some((t) => t.name === tool) || (agent.delegates !== undefined && TASK_TOOL_NAMES.has(tool));

/** Why the final answer would fail the agent's output schema, as the runtime would judge it, or undefined. */
function refusedOutput(agent: AgentDefinition, text: string): string | undefined {
  const outcome = finalOutcome(agent, text);
  return outcome.status === 'failed'
    ? `would fail ${agent.name} version ${versionOf(agent)}: ${outcome.error}`
    : undefined;
}

/** Sessions read at once by the check: enough to hide each read's round trip, few enough for any table. */
const READS_IN_FLIGHT = 16;

/**
 * Up to `limit` live sessions (not finished) read for the check: each one's journal and the turn
 * inputs not started yet. A scan of the session records, then up to READS_IN_FLIGHT sessions read
 * at once (one after another, 100 sessions took ~20 s, all of it waiting on reads): an operator's
 * pre-deploy tool, not a hot path. The sessions come back oldest first, whatever order reads end in.
 */
export async function liveSessionsForCheck(store: SessionStore, limit: number): Promise<SessionForCheck[]> {
  const records = (await store.listSessions({ limit: Number.MAX_SAFE_INTEGER }))
    .filter((r) => !TERMINAL_SESSION_STATES.includes(r.state))
    .sort((a, b) => a.createdAt - b.createdAt)
    .slice(0, limit);
  const sessions: SessionForCheck[] = new Array(records.length);
  let next = 0;
  const reader = async () => {
    for (let i = next++; i < records.length; i = next++) sessions[i] = await readForCheck(store, records[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(READS_IN_FLIGHT, records.length) }, reader));
  return sessions;
}

/** One session as the check folds it: its journal and the inputs of the turns it has not started. */
async function readForCheck(store: SessionStore, record: SessionRecord): Promise<SessionForCheck> {
  const entries = await store.readJournal(record.key);
  const started = new Set(entries.flatMap((e) => (e.kind === 'input' && e.turnId ? [e.turnId] : [])));
  const waiting = [
    ...(record.activeTurnId && !started.has(record.activeTurnId) ? [record.activeTurnId] : []),
    ...record.turnQueue,
  ];
  const turns = await Promise.all(waiting.map((turnId) => store.getTurn(record.key, turnId)));
  return {
    key: record.key,
    ...(record.agentVersion === undefined ? {} : { agentVersion: record.agentVersion }),
    entries,
    pendingInputs: turns.flatMap((turn, i) => (turn ? [{ turnId: waiting[i]!, input: turn.input }] : [])),
  };
}
