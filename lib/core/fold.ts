import { CorruptStateError } from './errors.ts';
import { idempotencyKey, type SessionKey } from './ids.ts';
import type { JournalEntry, ToolCall } from './journal.ts';
import type { Usage } from './messages.ts';
import type { OutcomeStatus } from './vocabulary.ts';

/**
 * The journal fold: derived state up to the last entry, and the next action as a pure function
 * of it. A resume continues from here; nothing already journaled runs again.
 */

export interface PendingCall {
  readonly call: ToolCall;
  /** Seq of the model entry that requested the call: part of its idempotency key. */
  readonly modelSeq: number;
  /** Seq of its watermark, when a once-only call was started. */
  readonly intentSeq?: number | undefined;
  /**
   * Seq of the `notDone` verdict that voided its last key: the re-run gets a new key derived
   * from it, because the downstream refuses the voided one.
   */
  readonly reconciledSeq?: number | undefined;
  /** The call parked the session on a durable timer: its result is journaled at `wakeAt`. */
  readonly timer?: { readonly wakeAt: number; readonly output?: unknown } | undefined;
}

/** The idempotency key of a pending call: the model entry's seq and the call id, plus the verdict that voided the last one. */
export function pendingCallKey(key: SessionKey, pending: PendingCall): string {
  const base = idempotencyKey(key, pending.modelSeq, pending.call.id);
  return pending.reconciledSeq === undefined ? base : `${base}:r${pending.reconciledSeq}`;
}

export interface SessionView {
  readonly lastSeq: number;
  /** Epoch of the latest leg marker: entries after it must carry at least this epoch. */
  readonly legEpoch: number;
  readonly legs: number;
  /** Model calls and tool results journaled: the atomic units of progress. */
  readonly steps: number;
  /** Steps of the current turn: the per-turn cap counts these, so a long conversation is not capped. */
  readonly turnSteps: number;
  readonly usage: Usage;
  /** The turn whose input was journaled last. */
  readonly turnId?: string | undefined;
  /** Tool calls of the last model entry that have no result yet, in call order. */
  readonly pendingCalls: readonly PendingCall[];
  /** Final text when the last model entry asked for no tool: the turn is ready to finish. */
  readonly finalText?: string | undefined;
  /** Consecutive journaled errors since the last success, and when the next attempt is due. */
  readonly failedAttempts: number;
  readonly retryAt?: number | undefined;
  readonly lastError?: string | undefined;
  readonly outcome?:
    | { readonly status: OutcomeStatus; readonly output?: unknown; readonly error?: string | undefined }
    | undefined;
  /**
   * A `published` entry was journaled: a result given up as undelivered, or any result of an older
   * version. A sent result is on the session record instead (`publishedTurnId`, see `isPublished`).
   */
  readonly published: boolean;
  /** A once-only call whose fate is unknown: the session waits for a human. */
  readonly parkedCallId?: string | undefined;
  /** Calls of this turn whose approval was requested and not yet decided, in request order. */
  readonly awaitingApproval: readonly string[];
  /** When an undecided approval is denied by default, by call id (tools with an approval timeout). */
  readonly approvalDeadlines: Readonly<Record<string, number>>;
  /** Human decisions of this turn, by call id; `byDefault` when an approval timeout decided. */
  readonly decisions: Readonly<
    Record<string, { readonly approved: boolean; readonly reason?: string | undefined; readonly byDefault?: boolean }>
  >;
  /** Inbox items already journaled this turn (messages, decisions, resolutions): each lands once. */
  readonly deliveredIds: readonly string[];
}

export const EMPTY_VIEW: SessionView = {
  lastSeq: 0,
  legEpoch: 0,
  legs: 0,
  steps: 0,
  turnSteps: 0,
  usage: { inputTokens: 0, outputTokens: 0 },
  pendingCalls: [],
  failedAttempts: 0,
  published: false,
  awaitingApproval: [],
  approvalDeadlines: {},
  decisions: {},
  deliveredIds: [],
};

/** Applies one entry. Throws CorruptStateError on a gap or an entry from a fenced-off epoch. */
export function applyEntry(view: SessionView, entry: JournalEntry): SessionView {
  if (entry.seq !== view.lastSeq + 1) {
    throw new CorruptStateError(`journal gap: seq ${entry.seq} follows seq ${view.lastSeq}`);
  }
  if (entry.epoch < view.legEpoch) {
    throw new CorruptStateError(
      `journal seq ${entry.seq} was written by epoch ${entry.epoch} after the leg marker of epoch ${view.legEpoch}`,
    );
  }
  const next = { ...view, lastSeq: entry.seq };
  switch (entry.kind) {
    case 'leg':
      return { ...next, legEpoch: entry.epoch, legs: view.legs + 1 };
    case 'input':
      // A new turn: per-turn state starts over; the transcript keeps everything before it. An
      // input that carries its leg's marker fences like one.
      return {
        ...next,
        ...(entry.data.leg ? { legEpoch: entry.epoch, legs: view.legs + 1 } : {}),
        turnId: entry.turnId,
        turnSteps: 0,
        pendingCalls: [],
        finalText: undefined,
        failedAttempts: 0,
        retryAt: undefined,
        lastError: undefined,
        outcome: undefined,
        published: false,
        parkedCallId: undefined,
        awaitingApproval: [],
        approvalDeadlines: {},
        decisions: {},
        deliveredIds: [],
      };
    case 'model':
      return {
        ...next,
        steps: view.steps + 1,
        turnSteps: view.turnSteps + 1,
        usage: {
          inputTokens: view.usage.inputTokens + entry.data.usage.inputTokens,
          outputTokens: view.usage.outputTokens + entry.data.usage.outputTokens,
        },
        pendingCalls: entry.data.toolCalls.map((call) => ({ call, modelSeq: entry.seq })),
        finalText: entry.data.toolCalls.length === 0 ? (entry.data.text ?? '') : undefined,
        failedAttempts: 0,
        retryAt: undefined,
      };
    case 'intent':
      return {
        ...next,
        pendingCalls: view.pendingCalls.map((p) =>
          p.call.id === entry.data.callId ? { ...p, intentSeq: entry.seq } : p,
        ),
      };
    case 'tool':
      return {
        ...next,
        steps: view.steps + 1,
        turnSteps: view.turnSteps + 1,
        pendingCalls: view.pendingCalls.filter((p) => p.call.id !== entry.data.callId),
      };
    case 'reconciled': {
      // done settles the call like a result; notDone lets it run again under a new key;
      // unknown parks the session until a human decides (an operator's `resolve` unparks it).
      const base = entry.data.id === undefined ? next : delivered(next, entry.data.id);
      const unparked = entry.data.verdict !== 'unknown' && view.parkedCallId === entry.data.callId;
      const from = unparked ? { ...base, parkedCallId: undefined } : base;
      if (entry.data.verdict === 'done') {
        return {
          ...from,
          steps: view.steps + 1,
          turnSteps: view.turnSteps + 1,
          pendingCalls: view.pendingCalls.filter((p) => p.call.id !== entry.data.callId),
        };
      }
      if (entry.data.verdict === 'notDone') {
        return {
          ...from,
          pendingCalls: view.pendingCalls.map((p) =>
            p.call.id === entry.data.callId ? { call: p.call, modelSeq: p.modelSeq, reconciledSeq: entry.seq } : p,
          ),
        };
      }
      return { ...from, parkedCallId: entry.data.callId };
    }
    case 'approval':
      return {
        ...next,
        awaitingApproval: [...view.awaitingApproval, entry.data.callId],
        ...(entry.data.expiresAt === undefined
          ? {}
          : { approvalDeadlines: { ...view.approvalDeadlines, [entry.data.callId]: entry.data.expiresAt } }),
      };
    case 'timer':
      // The timer stands in for the call's result until it is due: no watermark to reconcile.
      return {
        ...next,
        pendingCalls: view.pendingCalls.map((p) =>
          p.call.id === entry.data.callId
            ? {
                call: p.call,
                modelSeq: p.modelSeq,
                ...(p.reconciledSeq === undefined ? {} : { reconciledSeq: p.reconciledSeq }),
                timer: {
                  wakeAt: entry.data.wakeAt,
                  ...(entry.data.output === undefined ? {} : { output: entry.data.output }),
                },
              }
            : p,
        ),
      };
    case 'decision': {
      const decided = entry.data.id === undefined ? next : delivered(next, entry.data.id);
      const { [entry.data.callId]: _decided, ...deadlines } = view.approvalDeadlines;
      return {
        ...decided,
        awaitingApproval: view.awaitingApproval.filter((id) => id !== entry.data.callId),
        approvalDeadlines: deadlines,
        decisions: {
          ...view.decisions,
          [entry.data.callId]: {
            approved: entry.data.approved,
            ...(entry.data.reason !== undefined ? { reason: entry.data.reason } : {}),
            // A decision from no inbox item is the approval timeout's.
            ...(entry.data.id === undefined ? { byDefault: true } : {}),
          },
        },
      };
    }
    case 'error':
      return {
        ...next,
        failedAttempts: entry.data.attempt,
        retryAt: entry.data.retryAt,
        lastError: entry.data.message,
      };
    case 'message':
      // A message after the final answer reopens the turn: the model answers what it was told.
      return { ...(entry.data.id === undefined ? next : delivered(next, entry.data.id)), finalText: undefined };
    case 'released':
      // The task ledger reads it (lib/core/tasks.ts); the turn goes on.
      return next;
    case 'outcome':
      // Errors before the outcome were the steps'; the result's own sends count from here.
      return { ...next, outcome: entry.data, failedAttempts: 0, retryAt: undefined, lastError: undefined };
    case 'published':
      return { ...next, published: true };
  }
}

const delivered = (view: SessionView, id: string): SessionView => ({
  ...view,
  deliveredIds: [...view.deliveredIds, id],
});

export function foldJournal(entries: readonly JournalEntry[], from: SessionView = EMPTY_VIEW): SessionView {
  return entries.reduce(applyEntry, from);
}

/** The next action lives beside the fold; re-exported here for the callers that know it by this file. */
export { decideNext, type LegFacts, type NextAction, nextAction, nextWakeAt } from './next-action.ts';
