import type { AgentDefinition } from '../../agent/define-agent.ts';
import type { AnyTool } from '../../agent/define-tool.ts';
import type { CallIdentity } from '../../core/call-identity.ts';
import { inputDigest } from '../../core/content-digest.ts';
import { errorMessage } from '../../core/errors.ts';
import type { PendingCall } from '../../core/fold.ts';

/**
 * A pending call checked against its tool and its input parsed once (schema defaults and
 * transforms applied): the approval rule judges this input, the approver reads it (as JSON, in
 * the `approval` entry), and the tool runs with it. Its digest is what a decision names, so an
 * approval holds only while the call would run with the input it was given for.
 */
export type PreparedCall =
  | {
      readonly pending: PendingCall;
      readonly tool: AnyTool;
      /** What the tool runs with. */
      readonly input: unknown;
      /** The same input as JSON: what is journaled and shown. */
      readonly json: unknown;
      readonly digest: string;
    }
  /** An unknown tool or an input its schema refuses: the call's error result, and nothing runs. */
  | { readonly pending: PendingCall; readonly tool?: undefined; readonly error: string };

/** Checks one call against its tool and parses its input. */
export function prepareCall(agent: AgentDefinition, pending: PendingCall): PreparedCall {
  const tool = agent.tools.find((t) => t.name === pending.call.name);
  if (!tool) return { pending, error: `unknown tool "${pending.call.name}"` };
  const parsed = tool.input.safeParse(pending.call.input);
  if (!parsed.success)
    return {
      pending,
      error: `invalid input for ${tool.name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    };
  let text: string;
  try {
    text = JSON.stringify(parsed.data) ?? 'null';
  } catch (error) {
    // A transform that yields what JSON cannot hold (a BigInt, a cycle) could be neither shown nor digested.
    return { pending, error: `input for ${tool.name} is not JSON once parsed: ${errorMessage(error)}` };
  }
  return { pending, tool, input: parsed.data, json: JSON.parse(text), digest: inputDigest(text) };
}

export const prepareCalls = (agent: AgentDefinition, calls: readonly PendingCall[]): PreparedCall[] =>
  calls.map((pending) => prepareCall(agent, pending));

/** The identity of a prepared call: what an approval of it names. */
export const preparedIdentity = (p: PreparedCall & { readonly tool: AnyTool }): CallIdentity => ({
  modelSeq: p.pending.modelSeq,
  callId: p.pending.call.id,
  tool: p.tool.name,
  digest: p.digest,
});
