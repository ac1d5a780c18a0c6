import type { PendingCall, SessionView } from './fold.ts';

/**
 * The next action of a leg: a pure function of the folded journal and the few facts of the
 * session record the journal cannot know (the active turn, a cancel request). A new feature adds
 * a field to the fold and a case here, and the runtime a small step that carries it out.
 */

export type NextAction =
  | { readonly kind: 'cancel' }
  | { readonly kind: 'start-turn' }
  | { readonly kind: 'step-limit'; readonly maxSteps: number }
  | { readonly kind: 'model' }
  | { readonly kind: 'tools'; readonly calls: readonly PendingCall[] }
  | { readonly kind: 'reconcile'; readonly call: PendingCall }
  | { readonly kind: 'wait-retry'; readonly retryAt: number }
  | { readonly kind: 'finish'; readonly text: string }
  | { readonly kind: 'publish' }
  | { readonly kind: 'parked'; readonly callId: string }
  | { readonly kind: 'await-approval'; readonly callIds: readonly string[] }
  | { readonly kind: 'done' };

/** What the leg knows besides the journal when it decides. */
export interface LegFacts {
  /** The turn the session record says is active. */
  readonly activeTurnId: string | undefined;
  readonly cancelRequested: boolean;
  /** The agent's cap on journaled steps per turn. */
  readonly maxSteps: number;
  readonly now: number;
}

/** What to do next, given the view and the turn the session record says is active. */
export function nextAction(view: SessionView, activeTurnId: string | undefined, now: number): NextAction {
  if (activeTurnId !== undefined && view.turnId !== activeTurnId) return { kind: 'start-turn' };
  if (view.outcome) {
    if (view.published) return { kind: 'done' };
    // A result whose send failed waits for its retry like a step does.
    if (view.retryAt !== undefined && view.retryAt > now) return { kind: 'wait-retry', retryAt: view.retryAt };
    return { kind: 'publish' };
  }
  if (view.parkedCallId !== undefined) return { kind: 'parked', callId: view.parkedCallId };
  if (view.awaitingApproval.length > 0) return { kind: 'await-approval', callIds: view.awaitingApproval };
  if (view.retryAt !== undefined && view.retryAt > now) return { kind: 'wait-retry', retryAt: view.retryAt };
  // A watermark without a result: the call may have run. Never repeat it blindly.
  const interrupted = view.pendingCalls.find((p) => p.intentSeq !== undefined);
  if (interrupted) return { kind: 'reconcile', call: interrupted };
  if (view.pendingCalls.length > 0) return { kind: 'tools', calls: view.pendingCalls };
  if (view.finalText !== undefined) return { kind: 'finish', text: view.finalText };
  return { kind: 'model' };
}

/** The leg's decision: a requested cancel ends the turn first, and a model call past the step cap ends it failed. */
export function decideNext(view: SessionView, facts: LegFacts): NextAction {
  if (facts.cancelRequested && !view.outcome) return { kind: 'cancel' };
  const action = nextAction(view, facts.activeTurnId, facts.now);
  if (action.kind === 'model' && view.turnSteps >= facts.maxSteps)
    return { kind: 'step-limit', maxSteps: facts.maxSteps };
  return action;
}

/**
 * A recovered leg that finds the turn unfinished after more consecutive recoveries than allowed is
 * in a crash loop. Once the outcome is journaled the turn is over: a recovery only publishes it.
 */
export function isCrashLoop(
  view: SessionView,
  recovering: boolean,
  recoveries: number,
  maxRecoveries: number,
): boolean {
  return recovering && !view.outcome && recoveries > maxRecoveries;
}
