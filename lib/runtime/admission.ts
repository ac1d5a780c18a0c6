import type { AgentDefinition } from '../agent/define-agent.ts';
import { InvalidInputError, PayloadTooLargeError } from '../core/errors.ts';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../core/json-depth.ts';
import { describeIssues } from '../core/messages.ts';

/**
 * The largest message sent into a running turn (`inject`). Messages wait on the session record
 * until the owner journals them, and a record holds at most 400 KB with up to the pending-input
 * limit of them waiting: 16 KiB each leaves room for the rest. A longer input is a turn.
 */
export const MAX_MESSAGE_BYTES = 16 * 1024;

/** What an input comes in as: a turn (the agent's input schema applies) or a message into a running turn. */
export type AdmittedAs = 'turn' | 'message';

/**
 * The one check every way in runs on an input before anything stores, hashes or kicks for it:
 * intake (a ticket, first or further turn), and the client's submit and send, which the API,
 * the CLI and `baton dev` use. A rule added here holds for all of them. Cheapest and
 * stack-safe first: nothing below walks a value recursively until its depth is known.
 *
 * `agent` is the definition the input is for; without one (a client that loads no agents) the
 * rules that need none still hold, and intake or the API, which load the agents, apply the rest.
 * Throws InvalidInputError (PayloadTooLargeError) whose message starts with `what`.
 */
export function admitInput(
  input: unknown,
  agent: AgentDefinition | undefined,
  what: string,
  as: AdmittedAs = 'turn',
): void {
  if (input === undefined) throw new InvalidInputError(`${what}: input is required`);
  // Deeper values overflow the stack of every recursive walker (JSON.stringify, hashing, zod).
  if (exceedsJsonDepth(input)) throw new InvalidInputError(`${what} is nested deeper than ${MAX_JSON_DEPTH} levels`);
  if (hasLoneSurrogate(input)) throw new InvalidInputError(`${what} contains invalid Unicode (a lone surrogate)`);
  const cap = payloadCap(agent, as);
  if (cap !== undefined) {
    const bytes = Buffer.byteLength(JSON.stringify(input));
    if (bytes > cap) throw new PayloadTooLargeError(what, bytes, cap);
  }
  if (as === 'turn' && agent?.input) {
    const parsed = agent.input.safeParse(input);
    if (!parsed.success)
      throw new InvalidInputError(`${what} does not match agent ${agent.name}: ${describeIssues(parsed.error)}`);
  }
}

/**
 * A turn's cap is its agent's own (unknown without the agent: intake, which has it, applies it);
 * a message's is never more than the session record can carry.
 */
function payloadCap(agent: AgentDefinition | undefined, as: AdmittedAs): number | undefined {
  const agentCap = agent?.limits.maxPayloadBytes;
  if (as === 'turn') return agentCap;
  return Math.min(agentCap ?? MAX_MESSAGE_BYTES, MAX_MESSAGE_BYTES);
}

/** Lone UTF-16 surrogates survive JSON.parse but break every store and model downstream. */
function hasLoneSurrogate(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      if (!next.isWellFormed()) return true;
    } else if (next !== null && typeof next === 'object') {
      for (const [key, child] of Object.entries(next)) {
        if (!key.isWellFormed()) return true;
        pending.push(child);
      }
    }
  }
  return false;
}
