import { type PendingCall, type SessionView, spentOf } from './fold.ts';
import type { JournalEntry } from './journal.ts';
import { type LimitReached, limitReached, type SpendLimits } from './spend.ts';

/**
 * The next action of a leg: a pure function of the folded journal and the few facts of the
 * session record the journal cannot know (the active turn, a cancel request). A new feature adds
 * a field to the fold and a case here, and the runtime a small step that carries it out.
 */

export type NextAction =
  | { readonly kind: 'cancel' }
  | { readonly kind: 'start-turn' }
  | { readonly kind: 'step-limit'; readonly maxSteps: number }
  /**
   * A spend limit is reached before a model call: with `ask`, request a human's approval to go
   * on; otherwise (or once a human declined, `declined`) end the turn `budget-exceeded`.
   */
  | {
      readonly kind: 'budget';
      readonly reached?: LimitReached | undefined;
      readonly ask: boolean;
      readonly declined?: string | undefined;
    }
  | { readonly kind: 'model' }
  | { readonly kind: 'tools'; readonly calls: readonly PendingCall[] }
  | { readonly kind: 'reconcile'; readonly call: PendingCall }
  | { readonly kind: 'wait-retry'; readonly retryAt: number }
  | { readonly kind: 'finish'; readonly text: string }
  | { readonly kind: 'publish' }
  | { readonly kind: 'parked'; readonly callId: string }
  /** Wait for a human; with `wakeAt`, an approval timeout denies by default then. */
  | { readonly kind: 'await-approval'; readonly callIds: readonly string[]; readonly wakeAt?: number | undefined }
  /** An approval's timeout passed undecided: deny it. */
  | { readonly kind: 'approval-timeout'; readonly callId: string }
  /** A durable timer is due: journal its call's result. */
  | { readonly kind: 'wake'; readonly call: PendingCall }
  /** Every call left waits on a durable timer: park until the first is due. */
  | { readonly kind: 'wait-timer'; readonly wakeAt: number }
  | { readonly kind: 'done' };

/** What the leg knows besides the journal when it decides. */
export interface LegFacts {
  /** The turn the session record says is active. */
  readonly activeTurnId: string | undefined;
  readonly cancelRequested: boolean;
  /** The agent's cap on journaled steps per turn. */
  readonly maxSteps: number;
  /** The turn's spend limits: the agent's, lowered by its ticket's. */
  readonly spendLimits?: SpendLimits | undefined;
  readonly now: number;
  /** The turn whose result the record says was published (the release after the publish carries it). */
  readonly publishedTurnId?: string | undefined;
}

/**
 * What to do next, given the view, the turn the session record says is active and the turn whose
 * result the record says was published.
 */
export function nextAction(
  view: SessionView,
  activeTurnId: string | undefined,
  now: number,
  publishedTurnId?: string | undefined,
): NextAction {
  if (activeTurnId !== undefined && view.turnId !== activeTurnId) return { kind: 'start-turn' };
  if (view.outcome) {
    if (view.published || isPublished(view, activeTurnId, publishedTurnId)) return { kind: 'done' };
    // A result whose send failed waits for its retry like a step does.
    if (view.retryAt !== undefined && view.retryAt > now) return { kind: 'wait-retry', retryAt: view.retryAt };
    return { kind: 'publish' };
  }
  if (view.parked !== undefined) return { kind: 'parked', callId: view.parked.callId };
  if (view.awaitingApproval.length > 0) {
    const expired = view.awaitingApproval.find((a) => (a.expiresAt ?? Infinity) <= now);
    if (expired !== undefined) return { kind: 'approval-timeout', callId: expired.callId };
    const callIds = view.awaitingApproval.map((a) => a.callId);
    return { kind: 'await-approval', callIds, wakeAt: earliest(approvalDeadlines(view)) };
  }
  if (view.retryAt !== undefined && view.retryAt > now) return { kind: 'wait-retry', retryAt: view.retryAt };
  const due = view.pendingCalls.find((p) => p.timer !== undefined && p.timer.wakeAt <= now);
  if (due) return { kind: 'wake', call: due };
  // A watermark without a result: the call may have run. Never repeat it blindly.
  const interrupted = interruptedOnceOnly(view);
  if (interrupted) return { kind: 'reconcile', call: interrupted };
  const runnable = view.pendingCalls.filter((p) => p.timer === undefined);
  if (runnable.length > 0) return { kind: 'tools', calls: runnable };
  const timer = earliest(timers(view));
  if (timer !== undefined) return { kind: 'wait-timer', wakeAt: timer };
  if (view.finalText !== undefined) return { kind: 'finish', text: view.finalText };
  return { kind: 'model' };
}

/**
 * A once-only call whose watermark has no result and no verdict yet: it may have run, so the turn
 * can neither run it again nor end before asking its tool (a parked call has its verdict, unknown).
 */
export function interruptedOnceOnly(view: SessionView): PendingCall | undefined {
  return view.pendingCalls.find((p) => p.intentSeq !== undefined && p.call.id !== view.parked?.callId);
}

/**
 * When a waiting turn wakes by itself: its first durable timer, approval timeout or retry, if any
 * (what `status` shows as `wakeAt`).
 */
export function nextWakeAt(view: SessionView): number | undefined {
  if (view.outcome) return undefined;
  const retry = view.retryAt === undefined ? [] : [view.retryAt];
  return earliest([...timers(view), ...approvalDeadlines(view), ...retry]);
}

/**
 * Was the journaled outcome's result published? A sent result is recorded on the session record
 * by the release that follows it (`publishedTurnId`), not journaled; the outcome's turn is the
 * journal's, or the record's active turn when the outcome came before any input.
 */
export function isPublished(
  view: SessionView,
  activeTurnId: string | undefined,
  publishedTurnId: string | undefined,
): boolean {
  return publishedTurnId !== undefined && publishedTurnId === (view.turnId ?? activeTurnId ?? '');
}

const timers = (view: SessionView): number[] => view.pendingCalls.flatMap((p) => (p.timer ? [p.timer.wakeAt] : []));
const approvalDeadlines = (view: SessionView): number[] =>
  view.awaitingApproval.flatMap((a) => (a.expiresAt === undefined ? [] : [a.expiresAt]));
const earliest = (times: readonly number[]): number | undefined => (times.length > 0 ? Math.min(...times) : undefined);

/**
 * The leg's decision: a requested cancel ends the turn first — once an interrupted once-only call
 * is reconciled, since a turn never ends with one open — a model call past the step cap ends it
 * failed, and one past a spend limit ends it `budget-exceeded` or asks a human to let it go on.
 */
export function decideNext(view: SessionView, facts: LegFacts): NextAction {
  if (facts.cancelRequested && !view.outcome) {
    const interrupted = interruptedOnceOnly(view);
    return interrupted ? { kind: 'reconcile', call: interrupted } : { kind: 'cancel' };
  }
  const action = nextAction(view, facts.activeTurnId, facts.now, facts.publishedTurnId);
  if (action.kind !== 'model') return action;
  if (view.turnSteps >= facts.maxSteps) return { kind: 'step-limit', maxSteps: facts.maxSteps };
  if (view.budgetDenied !== undefined) return { kind: 'budget', ask: false, declined: view.budgetDenied };
  const reached = facts.spendLimits && limitReached(spentOf(view), view.spendBase, facts.spendLimits);
  if (reached) return { kind: 'budget', reached, ask: facts.spendLimits?.onBudget === 'ask' };
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

/**
 * Recoveries in a row without progress: the record's count, capped by the acquires since the
 * journal's last entry other than a leg marker. A leg that journaled progress and died before its
 * renewal could clear the record's count (a throttled renewal, a kill, a pause under load) still
 * progressed, and the journal says so.
 */
export function recoveriesWithoutProgress(counted: number, epoch: number, entries: readonly JournalEntry[]): number {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] as JournalEntry;
    if (entry.kind !== 'leg') return Math.min(counted, epoch - entry.epoch);
  }
  return counted;
}
