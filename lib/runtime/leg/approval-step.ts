import type { AgentDefinition } from '../../agent/define-agent.ts';
import type { PendingCall, SessionView } from '../../core/fold.ts';
import { releaseToWait } from './fenced-release.ts';
import type { KickOutcome, LegContext } from './leg-context.ts';
import { waitUntil } from './timer-step.ts';

/** The pending calls sorted by approval: to request, denied (with the reason), free to run. */
export interface ApprovalGate {
  readonly request: readonly PendingCall[];
  /** With the call's error result: who denied it and why. */
  readonly denied: readonly { readonly pending: PendingCall; readonly reason: string }[];
  readonly run: readonly PendingCall[];
}

/** Sorts the pending calls by what their tools require and what humans decided. */
export function approvalGate(agent: AgentDefinition, view: SessionView, calls: readonly PendingCall[]): ApprovalGate {
  const request: PendingCall[] = [];
  const denied: { pending: PendingCall; reason: string }[] = [];
  const run: PendingCall[] = [];
  for (const pending of calls) {
    const tool = agent.tools.find((t) => t.name === pending.call.name);
    const decision = view.decisions[pending.call.id];
    if (decision) {
      if (decision.approved) run.push(pending);
      else
        denied.push({
          pending,
          reason: decision.byDefault
            ? `denied by default: ${decision.reason ?? 'no decision in time'}`
            : `denied by a human: ${decision.reason ?? 'no reason given'}`,
        });
    } else if (tool && needsApproval(tool.requiresApproval, pending.call.input)) request.push(pending);
    else run.push(pending);
  }
  return { request, denied, run };
}

function needsApproval(rule: boolean | ((input: never) => boolean) | undefined, input: unknown): boolean {
  if (typeof rule === 'function') {
    try {
      return (rule as (input: unknown) => boolean)(input);
    } catch {
      // A rule that cannot decide asks the human.
      return true;
    }
  }
  return rule === true;
}

/** Journals an approval request for each call that needs one: the turn then waits for a human. */
export async function requestApprovals(
  leg: LegContext,
  agent: AgentDefinition,
  calls: readonly PendingCall[],
): Promise<void> {
  for (const { call } of calls) {
    const timeoutMs = agent.tools.find((t) => t.name === call.name)?.approvalTimeoutMs;
    const expiresAt = timeoutMs === undefined ? undefined : leg.deps.clock.now() + timeoutMs;
    await leg.journal.append('approval', {
      callId: call.id,
      tool: call.name,
      input: call.input,
      ...(expiresAt === undefined ? {} : { expiresAt }),
    });
    leg.log.info('approval requested', { callId: call.id, tool: call.name, expiresAt });
  }
}

/** An approval's timeout passed with no decision: the call is denied by default. */
export async function denyExpiredApproval(leg: LegContext, callId: string): Promise<void> {
  await leg.journal.append('decision', { callId, approved: false, reason: 'approval timed out' });
  leg.log.warn('approval timed out; denied by default', { callId });
}

/**
 * Waits for a human (an approval, or a verdict on a parked call) holding no lease and no compute:
 * the release is refused when something arrived since the record was read, and the leg goes on.
 * With `wakeAt` (an approval timeout) the wait is a durable timer as well.
 */
export async function waitForHuman(
  leg: LegContext,
  what: string,
  wakeAt?: number | undefined,
): Promise<KickOutcome | undefined> {
  if (wakeAt !== undefined) return waitUntil(leg, wakeAt);
  if (!(await releaseToWait(leg, undefined))) return undefined;
  leg.log.info('waiting for a human', { what });
  return what === 'approval' ? 'waiting' : 'parked';
}
