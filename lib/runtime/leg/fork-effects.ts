import type { SessionView } from '../../core/fold.ts';
import { type ForkEffectPlan, forkEffectOf, markUsed } from '../../core/fork-state.ts';
import type { EntryDataOf } from '../../core/journal.ts';
import type { LegContext } from './leg-context.ts';
import { type PreparedCall, preparedIdentity } from './prepared-call.ts';

/** What a fork does with each once-only call of a tool step (only those calls are in the map). */
export type ForkPlans = ReadonlyMap<PreparedCall, ForkEffectPlan>;

/**
 * The fork's plan for each once-only call, in call order: two calls of one response that repeat
 * the same original call do not both take it (the second takes the next one, or is new).
 * Empty outside a fork, or with effects `rerun`.
 */
export function planForkCalls(view: SessionView, prepared: readonly PreparedCall[]): ForkPlans {
  const plans = new Map<PreparedCall, ForkEffectPlan>();
  let fork = view.fork;
  if (fork === undefined || fork.effects === 'rerun') return plans;
  for (const p of prepared) {
    if (!('digest' in p) || p.tool.effect !== 'once') continue;
    const identity = preparedIdentity(p);
    const plan = forkEffectOf(fork, identity);
    plans.set(p, plan);
    if (plan.kind === 'repeat') fork = markUsed(fork, plan.original.seq, identity.modelSeq, identity.callId);
  }
  return plans;
}

/** Does the fork's plan hold this call for a human (a repeat to ask about, or a once-only call the original never made)? */
export function forkNeedsApproval(plan: ForkEffectPlan | undefined): boolean {
  if (plan === undefined || plan.kind === 'run') return false;
  if (plan.kind === 'new') return true;
  // A repeat whose original result is unknown cannot be reused: a human decides.
  return plan.effects === 'ask' || (plan.effects === 'reuse' && plan.original.result === undefined);
}

/** What an approval of a repeated call shows: that the original ran it, under which key, and its result. */
export function ranBeforeOf(
  view: SessionView,
  plan: ForkEffectPlan | undefined,
): EntryDataOf<'approval'>['ranBefore'] | undefined {
  if (plan?.kind !== 'repeat' || view.fork === undefined) return undefined;
  const { seq, idempotencyKey, result } = plan.original;
  return { session: view.fork.from.id, seq, idempotencyKey, ...(result === undefined ? {} : { result }) };
}

/**
 * Journals the result of each repeated call the fork answers without a human and without calling
 * the tool: the original's result (`reuse`), or a refusal (`deny`, a dry run). True when it
 * journaled any: the leg decides again from the journal.
 */
export async function answerRepeats(leg: LegContext, plans: ForkPlans): Promise<boolean> {
  let answered = false;
  const from = leg.journal.view.fork?.from.id;
  for (const [prepared, plan] of plans) {
    if (plan.kind !== 'repeat' || !prepared.tool) continue;
    const { seq, result } = plan.original;
    const base = { callId: prepared.pending.call.id, tool: prepared.tool.name };
    if (plan.effects === 'deny') {
      await leg.journal.append('tool', {
        ...base,
        ok: false,
        error: `denied in a fork (effects: deny): session ${from} already ran ${prepared.tool.name} with this input (its watermark at seq ${seq}); a fork with these effects runs no repeated once-only call`,
        forkOf: { seq, effect: 'deny' },
      });
    } else if (plan.effects === 'reuse' && result !== undefined) {
      await leg.journal.append('tool', {
        ...base,
        ok: result.ok,
        ...(result.output === undefined ? {} : { output: result.output }),
        ...(result.error === undefined ? {} : { error: result.error }),
        forkOf: { seq, effect: 'reuse' },
      });
    } else continue;
    leg.log.info('fork answered a repeated once-only call without running it', {
      callId: base.callId,
      tool: base.tool,
      effects: plan.effects,
      originalSeq: seq,
    });
    answered = true;
  }
  return answered;
}
