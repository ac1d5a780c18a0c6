import type { AgentDefinition } from '../../agent/define-agent.ts';
import type { EntryDataOf } from '../../core/journal.ts';
import type { LegContext } from './leg-context.ts';
import type { LegExit } from './leg-exit.ts';

/**
 * Starts the active turn: journals its input, which begins the turn's state in the fold. A small
 * input rides on the record the leg holds; a larger one is read from the turn item.
 */
export async function startTurn(leg: LegContext): Promise<LegExit | undefined> {
  const { activeTurnId: turnId, activeInput } = leg.signals.record;
  if (activeInput !== undefined && activeInput.turnId === turnId) {
    await leg.journal.append('input', { input: activeInput.input }, turnId);
    return undefined;
  }
  const turn = await leg.deps.store.getTurn(leg.key, turnId!);
  if (!turn) return { kind: 'finish', status: 'failed', error: `turn ${turnId} not found` };
  await leg.journal.append('input', { input: turn.input, ...(turn.limits ? { limits: turn.limits } : {}) }, turnId);
  return undefined;
}

/** The turn's outcome from the final answer: structured when the agent declares an output schema. */
export function finalOutcome(agent: AgentDefinition, text: string): EntryDataOf<'outcome'> {
  if (!agent.output) return { status: 'completed', output: text };
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
