/** Session states. A one-shot session ends completed/failed/cancelled; a conversation returns to idle. */
export const SessionState = {
  queued: 'queued',
  running: 'running',
  waiting: 'waiting',
  idle: 'idle',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type SessionState = (typeof SessionState)[keyof typeof SessionState];

export const TERMINAL_SESSION_STATES: readonly SessionState[] = ['completed', 'failed', 'cancelled'];

/** Terminal result of a turn. */
export const OutcomeStatus = {
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
  superseded: 'superseded',
  /** A budget limit (tokens or model calls per turn, cost per session) was reached. */
  'budget-exceeded': 'budget-exceeded',
} as const;
export type OutcomeStatus = (typeof OutcomeStatus)[keyof typeof OutcomeStatus];

/**
 * The state a reader reports for a session: its turn's outcome once one is recorded (written
 * before the result is published), else the record's state, which catches up at release.
 */
export function reportedState(recordState: SessionState, outcome: OutcomeStatus | undefined): SessionState {
  if (outcome === undefined) return recordState;
  return terminalStateOf(outcome);
}

/** The terminal session state a one-shot session's outcome leaves it in. */
export function terminalStateOf(outcome: OutcomeStatus): SessionState {
  if (outcome === 'superseded') return 'completed';
  return outcome === 'budget-exceeded' ? 'failed' : outcome;
}

/** Why a kick was sent; a leg marker records the reason its leg started. */
export const KickReason = {
  first: 'first',
  continuation: 'continuation',
  recovery: 'recovery',
  retry: 'retry',
  wake: 'wake',
  cancel: 'cancel',
} as const;
export type KickReason = (typeof KickReason)[keyof typeof KickReason];

/** Journal entry kinds. The kind, never stored text, decides the role a transcript message gets. */
export const EntryKind = {
  leg: 'leg',
  input: 'input',
  model: 'model',
  intent: 'intent',
  tool: 'tool',
  error: 'error',
  message: 'message',
  /** A call that needs a human's approval stopped the turn here. */
  approval: 'approval',
  /** A human's answer to an approval request. */
  decision: 'decision',
  /** A durable timer: the call's result waits until `wakeAt`; the session holds nothing meanwhile. */
  timer: 'timer',
  reconciled: 'reconciled',
  /** The oldest part of the transcript condensed into a summary; the model's transcript starts from the latest one. */
  compaction: 'compaction',
  /** The session's release was carried out: its tasks cancelled, the stragglers named. */
  released: 'released',
  /** The session moved to another version of its agent (its upgrade policy), from then on. */
  upgraded: 'upgraded',
  outcome: 'outcome',
  published: 'published',
  /** The first entry of a fork: its history before this seq is another session's (lib/core/fork.ts). */
  forked: 'forked',
  /** A tenant limit held the session back: it waits for a tenant slot or a model call's rate (lib/core/tenant-limits.ts). */
  limited: 'limited',
} as const;
export type EntryKind = (typeof EntryKind)[keyof typeof EntryKind];

/**
 * How an agent's sessions move to a newer version of it: `pin` keeps a session on the version it
 * started on while that version is deployed; `at-turn` moves it to the newest at its next turn's
 * start; `now` at its next leg. The newest deployed version's policy rules.
 */
export const UpgradePolicy = { pin: 'pin', atTurn: 'at-turn', now: 'now' } as const;
export type UpgradePolicy = (typeof UpgradePolicy)[keyof typeof UpgradePolicy];

/** Declared side-effect kind of a tool. */
export const ToolEffect = { pure: 'pure', idempotent: 'idempotent', once: 'once' } as const;
export type ToolEffect = (typeof ToolEffect)[keyof typeof ToolEffect];

/**
 * What a fork does when its model asks for a once-only call that the original made after the fork
 * point (same tool, same parsed-input digest): ask a human, who sees that it ran and its result
 * (the default); reuse the original's journaled result without calling; deny it (a dry run); or
 * run it again under the fork's own idempotency key. Other once-only calls of a fork need an
 * approval unless the effects are `rerun`.
 */
export const ForkEffects = { ask: 'ask', reuse: 'reuse', deny: 'deny', rerun: 'rerun' } as const;
export type ForkEffects = (typeof ForkEffects)[keyof typeof ForkEffects];

/** Turns that may wait behind a conversation's active turn unless configured otherwise. */
export const DEFAULT_MAX_PENDING_INPUTS = 9;
