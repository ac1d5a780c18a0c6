import { removedVersionMessage, versionOf } from '../../agent/agent-versions.ts';
import type { AgentDefinition } from '../../agent/define-agent.ts';
import type { EntryDataOf } from '../../core/journal.ts';
import type { SpendLimits } from '../../core/spend.ts';
import type { LegContext } from './leg-context.ts';
import type { LegExit } from './leg-exit.ts';
import { currentVersion, journalUpgrade, keepsVersions, versionChoice } from './version-step.ts';

/**
 * Starts the active turn: journals its input, which begins the turn's state in the fold. A small
 * input rides on the record the leg holds; a larger one is read from the turn item.
 */
export async function startTurn(leg: LegContext): Promise<LegExit | undefined> {
  const { activeTurnId: turnId, activeInput } = leg.signals.record;
  // A small input without limits rides on the record the leg holds; else the turn item has it.
  let input: unknown;
  let limits: SpendLimits | undefined;
  if (activeInput !== undefined && activeInput.turnId === turnId) input = activeInput.input;
  else {
    const turn = await leg.deps.store.getTurn(leg.key, turnId!);
    if (!turn) return { kind: 'finish', status: 'failed', error: `turn ${turnId} not found` };
    input = turn.input;
    limits = turn.limits;
  }
  const withLimits = limits ? { limits } : {};
  if (!keepsVersions(leg)) {
    await leg.journal.append('input', { input, ...withLimits }, turnId);
    return undefined;
  }
  // A turn's start is where `at-turn` moves a session to the newest version of its agent. The
  // input records the version the turn runs on, and an `upgraded` entry follows it on a move.
  const current = currentVersion(leg);
  const choice = versionChoice(leg, true);
  const agent = choice.kind === 'run' ? choice.agent : undefined;
  await leg.journal.append('input', { input, ...withLimits, agentVersion: agent ? versionOf(agent) : current }, turnId);
  if (choice.kind === 'removed')
    return { kind: 'finish', status: 'failed', error: removedVersionMessage(leg.key.agent, choice) };
  if (!agent) return { kind: 'finish', status: 'failed', error: `unknown agent "${leg.key.agent}": not deployed here` };
  if (choice.kind === 'run' && choice.from !== undefined) await journalUpgrade(leg, choice.from, agent);
  leg.useAgent(agent);
  return undefined;
}

/** The turn's outcome from the final answer: structured when the agent declares an output schema. */
export function finalOutcome(agent: AgentDefinition, text: string): EntryDataOf<'outcome'> {
  if (!agent.output) return { status: 'completed', output: text };
  if (text.trim() === '')
    return { status: 'failed', error: `final answer is empty: agent ${agent.name} declares a JSON output schema` };
  let json: unknown;
  try {
    json = JSON.parse(unfenced(text));
  } catch {
    return {
      status: 'failed',
      error: `final answer is not the JSON that agent ${agent.name} declares: ${text.slice(0, 200)}`,
    };
  }
  const parsed = agent.output.safeParse(json);
  return parsed.success
    ? { status: 'completed', output: parsed.data }
    : {
        status: 'failed',
        error: `final answer does not match the output schema of ${agent.name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      };
}

/** Models often wrap a JSON answer in one Markdown code fence (```json … ```): the JSON is inside it. */
const FENCED = /^\s*```[A-Za-z]*[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```\s*$/;

function unfenced(text: string): string {
  return FENCED.exec(text)?.[1] ?? text;
}
