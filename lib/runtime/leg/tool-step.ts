import type { AgentDefinition } from '../../agent/define-agent.ts';
import { isParkRequest, wakeTime } from '../../agent/timer.ts';
import { onceOnlyFitsLease } from '../../core/budget.ts';
import { BatonError, errorMessage } from '../../core/errors.ts';
import { type PendingCall, pendingCallKey } from '../../core/fold.ts';
import { traceToolCall } from '../leg-tracing.ts';
import { untilAbandoned } from './abandon.ts';
import { MAX_NOT_BEFORE_MS } from './acquire.ts';
import { approvalGate, requestApprovals } from './approval-step.ts';
import { answerRepeats, planForkCalls } from './fork-effects.ts';
import type { LegContext } from './leg-context.ts';
import { fitsInBudget, type LegExit, WAIT_RETRY, yieldLeg } from './leg-exit.ts';
import { LegAborted } from './leg-signals.ts';
import { type PreparedCall, prepareCall, prepareCalls } from './prepared-call.ts';
import { runStep, StepSourceError } from './retry.ts';

/**
 * The tool step: the pending calls of the last model entry, run in parallel, their results
 * journaled in call order. A once-only call gets its watermark (`intent`) before it starts and
 * starts only under a lease just renewed that outlives it.
 */
export async function toolStep(
  leg: LegContext,
  agent: AgentDefinition,
  calls: readonly PendingCall[],
): Promise<LegExit | undefined> {
  // Parsed once: the rule, the approval request and the tool all see this input.
  const prepared = prepareCalls(agent, calls);
  // A fork answers repeats of the original's once-only calls first (reused or denied, never run).
  const forkPlans = planForkCalls(leg.journal.view, prepared);
  if (await answerRepeats(leg, forkPlans)) return undefined;
  const gate = approvalGate(leg.journal.view, prepared, forkPlans);
  if (gate.request.length > 0) {
    await requestApprovals(leg, gate.request, forkPlans);
    return undefined;
  }
  for (const { prepared: denied, reason } of gate.denied) {
    await leg.journal.append('tool', {
      callId: denied.pending.call.id,
      tool: denied.pending.call.name,
      ok: false,
      error: reason,
    });
  }
  if (gate.denied.length > 0) return undefined;
  const tools = calls.map((p) => agent.tools.find((t) => t.name === p.call.name));
  const longest = Math.max(0, ...tools.map((t) => t?.maxDurationMs ?? 0));
  if (!fitsInBudget(leg, longest)) return yieldLeg(`tools ${calls.map((p) => p.call.name).join(', ')}`);
  // Only the once-only calls must end before the lease could pass to a recovery; the others may
  // outlive it (a recovery repeats them harmlessly), so only their durations count here.
  const onceOnly = tools.filter((t) => t?.effect === 'once');
  if (onceOnly.length > 0) {
    const longestOnce = Math.max(...onceOnly.map((t) => t?.maxDurationMs ?? 0));
    const fresh = await leg.signals.renewNow();
    if (fresh.cancelRequested) return undefined;
    if (!onceOnlyFitsLease(leg.signals.leaseUntil, leg.deps.clock.now(), longestOnce)) {
      return yieldLeg('a once-only call that the lease would not outlive');
    }
  }
  const outcome = await runStep(leg, 'tools', agent, () => runTools(leg, prepared));
  return outcome === 'waiting' ? WAIT_RETRY : undefined;
}

/** A once-only call whose watermark has no result: ask the tool whether it happened. */
export async function reconcileStep(leg: LegContext, agent: AgentDefinition, pending: PendingCall): Promise<void> {
  const prepared = prepareCall(agent, pending);
  const key = pendingCallKey(leg.key, pending);
  // The hook is asked about the input the call ran with: the parsed one. A cancel does not cut
  // the reconcile short: the turn cannot end before it knows the answer.
  const tool = prepared.tool;
  const verdict = tool?.reconcile
    ? await tool.reconcile(key, prepared.input, leg.signals.uncancellableSignal)
    : ({ verdict: 'unknown' } as const);
  leg.signals.throwIfLeaseLost();
  leg.log.warn('once-only call found interrupted; reconciled', {
    callId: pending.call.id,
    verdict: verdict.verdict,
  });
  await leg.journal.append('reconciled', {
    callId: pending.call.id,
    verdict: verdict.verdict,
    ...(verdict.verdict === 'done' ? { output: verdict.output } : {}),
  });
}

/**
 * Runs the pending tool calls in parallel and journals their results one at a time, in call
 * order. A once-only call gets its watermark before it starts.
 */
async function runTools(leg: LegContext, prepared: readonly PreparedCall[]): Promise<void> {
  const { deps, signals } = leg;
  const started = deps.clock.now();
  for (const p of prepared) {
    if (p.tool !== undefined && p.tool.effect === 'once') {
      await leg.journal.append('intent', {
        callId: p.pending.call.id,
        tool: p.tool.name,
        idempotencyKey: pendingCallKey(leg.key, p.pending),
        digest: p.digest,
      });
      await deps.failpoint('after-intent');
    }
  }
  // The intents took time: the lease renewed before them must still outlive every once-only call
  // now, or none starts (a later leg reconciles the watermarks).
  const onceOnly = prepared.flatMap((p) => (p.tool?.effect === 'once' ? [p.tool.maxDurationMs] : []));
  if (onceOnly.length > 0) {
    signals.throwIfLeaseLost();
    if (!onceOnlyFitsLease(signals.leaseUntil, deps.clock.now(), Math.max(...onceOnly))) {
      leg.log.warn('the lease no longer outlives the once-only calls; not starting them', {
        leaseUntil: signals.leaseUntil,
      });
      throw new LegAborted('budget');
    }
  }
  const calling = Promise.allSettled(
    prepared.map(async (p) => {
      if (!p.tool) return;
      const tool = p.tool;
      const once = tool.effect === 'once';
      const run = () =>
        traceToolCall(leg.span, tool.name, p.pending.call.id, () =>
          tool.run(p.input, {
            // Cancel never aborts a once-only call in flight; losing the lease still does.
            signal: once ? signals.leaseSignal : signals.stepSignal,
            idempotencyKey: pendingCallKey(leg.key, p.pending),
            sessionId: leg.key.id,
            log: (message, fields) => leg.log.info(message, { tool: tool.name, ...fields }),
            progress: (note) => leg.log.debug('tool progress', { tool: tool.name, note }),
            leg: leg.resources,
          }),
        );
      return once ? signals.duringOnceOnly(run) : run();
    }),
  );
  // A call that ignores the leg's abort is left behind (a once-only one is reconciled by the
  // next leg), so the leg still hands off and stops renewing a lease it can no longer use.
  const settled = await untilAbandoned(calling, signals.stepSignal, deps.clock);
  await deps.failpoint('mid-step');
  signals.throwIfLeaseLost();
  let retryable: { source: string; error: Error } | undefined;
  for (const [i, p] of prepared.entries()) {
    const result = settled[i]!;
    const base = { callId: p.pending.call.id, tool: p.pending.call.name };
    if (!p.tool) {
      await leg.journal.append('tool', { ...base, ok: false, error: p.error });
    } else if (result.status === 'fulfilled' && isParkRequest(result.value)) {
      // A durable timer: the result waits until wakeAt, with the lease released meanwhile.
      const wake = wakeTime(result.value, deps.clock.now(), MAX_NOT_BEFORE_MS);
      if ('error' in wake) await leg.journal.append('tool', { ...base, ok: false, error: wake.error });
      else {
        const { output } = result.value;
        await leg.journal.append('timer', {
          callId: base.callId,
          wakeAt: wake.wakeAt,
          ...(output === undefined ? {} : { output }),
        });
      }
    } else if (result.status === 'fulfilled') {
      const notJson = jsonProblem(result.value);
      // An output the journal cannot hold (a BigInt, a cycle) is the tool's error, told to the model.
      if (notJson) await leg.journal.append('tool', { ...base, ok: false, error: `tool ${p.tool.name} ${notJson}` });
      else await leg.journal.append('tool', { ...base, ok: true, output: result.value });
    } else if (signals.aborted && p.tool.effect !== 'once') {
      // Aborted by cancel or budget: journal nothing; the call runs again or the turn ends.
    } else if (result.reason instanceof BatonError && result.reason.retryable) {
      retryable ??= { source: `tool:${p.tool.name}`, error: result.reason };
    } else {
      await leg.journal.append('tool', { ...base, ok: false, error: errorMessage(result.reason) });
    }
  }
  deps.telemetry.metrics.duration('StepDuration', deps.clock.now() - started);
  signals.throwIfAborted();
  if (retryable) throw new StepSourceError(retryable.source, retryable.error);
}

/** Why a value cannot be journaled as JSON, or undefined when it can. */
function jsonProblem(value: unknown): string | undefined {
  try {
    JSON.stringify(value);
    return undefined;
  } catch (error) {
    return `returned output that is not JSON: ${errorMessage(error)}`;
  }
}

/**
 * A crash loop over an interrupted once-only call (its reconcile, or the call, kills every leg
 * that tries) parks the call for a human instead of failing the turn: a failed turn would leave
 * unknown, and unsaid, whether the call ran. The verdict is the operator's (`baton resolve`).
 */
export async function parkInterrupted(leg: LegContext, pending: PendingCall, why: string): Promise<void> {
  leg.log.error('crash loop over an interrupted once-only call: parked for a human', { callId: pending.call.id, why });
  await leg.journal.append('reconciled', { callId: pending.call.id, verdict: 'unknown' });
}
