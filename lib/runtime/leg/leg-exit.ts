import { stepFits } from '../../core/budget.ts';
import type { OutcomeStatus } from '../../core/vocabulary.ts';
import type { LegContext } from './leg-context.ts';

/**
 * How a step says its leg should leave. Steps decide; only the leg (leg.ts) carries an exit out,
 * through the protocol's exits (lib/runtime/protocol/exits.ts), so every way a session leaves a leg — and every
 * write that moves it — is in one place.
 */
export type LegExit =
  /** The budget is nearly spent: a continuation goes on elsewhere. */
  | { readonly kind: 'yield'; readonly why: string }
  /** End the turn (or publish and release an outcome already journaled). */
  | { readonly kind: 'finish'; readonly status: OutcomeStatus; readonly error?: string | undefined }
  /** A journaled error's backoff: wait until its retry time. */
  | { readonly kind: 'wait-retry' }
  /** A durable timer: wait until it is due. */
  | { readonly kind: 'wait-timer'; readonly until: number }
  /** Background tasks: wait for a child's outcome, or the wait's deadline. */
  | { readonly kind: 'wait-tasks'; readonly until: number }
  /** A human: an approval (with its timeout, if any) or a verdict on a parked call. */
  | { readonly kind: 'wait-human'; readonly what: 'approval' | 'parked call'; readonly until?: number | undefined }
  /** A tenant slot (fair sharing): the leg that frees one kicks the session; it rechecks at `until` regardless. */
  | { readonly kind: 'wait-slot'; readonly until: number };

export const yieldLeg = (why: string): LegExit => ({ kind: 'yield', why });
export const WAIT_RETRY: LegExit = { kind: 'wait-retry' };

/** Does a step of this declared maximum fit in what is left of the invocation? */
export function fitsInBudget(leg: LegContext, maxDurationMs: number): boolean {
  return stepFits(maxDurationMs, leg.invocation.remainingMs(), leg.deps.config.reserveMs);
}
