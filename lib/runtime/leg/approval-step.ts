import { callKey, identityOf } from '../../core/call-identity.ts';
import type { SessionView } from '../../core/fold.ts';
import { type ForkPlans, forkNeedsApproval, ranBeforeOf } from './fork-effects.ts';
import type { LegContext } from './leg-context.ts';
import { type PreparedCall, preparedIdentity } from './prepared-call.ts';

/** The prepared calls sorted by approval: to request, denied (with the reason), free to run. */
export interface ApprovalGate {
  readonly request: readonly PreparedCall[];
  /** With the call's error result: who denied it and why. */
  readonly denied: readonly { readonly prepared: PreparedCall; readonly reason: string }[];
  readonly run: readonly PreparedCall[];
}

/**
 * Sorts the calls by what their tools require and what humans decided. A decision holds for the
 * call it was made on (its model entry and id) and only while the parsed input has the digest it
 * named: otherwise the rule judges the call again. A call whose input does not parse needs no
 * approval: nothing runs, and its error is its result. In a fork, `forkPlans` holds once-only
 * calls for a human whatever their tool's rule (lib/runtime/leg/fork-effects.ts).
 */
export function approvalGate(
  view: SessionView,
  calls: readonly PreparedCall[],
  forkPlans: ForkPlans = new Map(),
): ApprovalGate {
  const request: PreparedCall[] = [];
  const denied: { prepared: PreparedCall; reason: string }[] = [];
  const run: PreparedCall[] = [];
  for (const prepared of calls) {
    if (!prepared.tool) {
      run.push(prepared);
      continue;
    }
    const found = view.decisions[callKey(preparedIdentity(prepared))];
    const decision = found?.digest === prepared.digest ? found : undefined;
    if (decision) {
      if (decision.approved) run.push(prepared);
      else
        denied.push({
          prepared,
          reason: decision.byDefault
            ? `denied by default: ${decision.reason ?? 'no decision in time'}`
            : `denied by a human: ${decision.reason ?? 'no reason given'}`,
        });
    } else if (
      forkNeedsApproval(forkPlans.get(prepared)) ||
      needsApproval(prepared.tool.requiresApproval, prepared.input)
    )
      request.push(prepared);
    else run.push(prepared);
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

/**
 * Journals an approval request for each call that needs one: the turn then waits for a human. A
 * fork's repeat of an original call shows that it ran, and its result (`ranBefore`).
 */
export async function requestApprovals(
  leg: LegContext,
  calls: readonly PreparedCall[],
  forkPlans: ForkPlans = new Map(),
): Promise<void> {
  for (const prepared of calls) {
    if (!prepared.tool) continue;
    const { modelSeq, callId, tool, digest } = preparedIdentity(prepared);
    const timeoutMs = prepared.tool.approvalTimeoutMs;
    const expiresAt = timeoutMs === undefined ? undefined : leg.deps.clock.now() + timeoutMs;
    const ranBefore = ranBeforeOf(leg.journal.view, forkPlans.get(prepared));
    await leg.journal.append('approval', {
      callId,
      tool,
      input: prepared.json,
      modelSeq,
      digest,
      ...(expiresAt === undefined ? {} : { expiresAt }),
      ...(ranBefore === undefined ? {} : { ranBefore }),
    });
    leg.log.info('approval requested', { callId, tool, modelSeq, expiresAt });
  }
}

/** An approval's timeout passed with no decision: the call it was asked for is denied by default. */
export async function denyExpiredApproval(leg: LegContext, callId: string): Promise<void> {
  // Awaited approvals are all calls of the last model entry, so the call id is unique among them.
  const awaited = leg.journal.view.awaitingApproval.find((a) => a.callId === callId);
  if (!awaited) return;
  await leg.journal.append('decision', { ...identityOf(awaited), approved: false, reason: 'approval timed out' });
  leg.log.warn('approval timed out; denied by default', { callId, modelSeq: awaited.modelSeq });
}
