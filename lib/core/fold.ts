import { type CallIdentity, callKey, sameCall } from './call-identity.ts';
import { CorruptStateError } from './errors.ts';
import { type ForkState, forkStateOf, markUsed } from './fork-state.ts';
import { idempotencyKey, type SessionKey } from './ids.ts';
import type { EntryDataOf, JournalEntry, ToolCall } from './journal.ts';
import type { Usage } from './messages.ts';
import { BUDGET_APPROVAL_TOOL, type SpendBase, type SpendLimits, type Spent, ZERO_SPEND } from './spend.ts';
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
  /** The watermark's digest of the parsed input the call ran with. */
  readonly digest?: string | undefined;
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

/** A call that waits for a human's approval: the identity a decision must name, from its `approval` entry. */
export interface AwaitedApproval extends CallIdentity {
  /** Seq of the `approval` entry: each request gets its own decision. */
  readonly seq: number;
  /** The input the approver reads: the parsed input the tool would run with, as journaled. */
  readonly input: unknown;
  /** When it is denied by default (a tool with an approval timeout). */
  readonly expiresAt?: number | undefined;
  /** In a fork: the original session already ran this call, and what it returned. */
  readonly ranBefore?: EntryDataOf<'approval'>['ranBefore'];
}

/** A human's decision (or an approval timeout's), kept under the call it decided (`callKey`). */
export interface Decision {
  readonly approved: boolean;
  readonly reason?: string | undefined;
  /** An approval timeout decided. */
  readonly byDefault?: boolean;
  /** The digest of the input it was made on: it holds for that input only. */
  readonly digest?: string | undefined;
}

/** A once-only call whose fate is unknown, waiting for an operator's verdict. */
export interface ParkedCall extends CallIdentity {
  /** Seq of the `reconciled` entry that parked it: each park gets its own verdict. */
  readonly seq: number;
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
  /** Model calls of the session, compactions included. */
  readonly modelCalls: number;
  /** US dollars of the session's model calls that had a price. */
  readonly costUsd: number;
  /** Tokens of the current turn's model calls, compactions included. */
  readonly turnUsage: Usage;
  readonly turnModelCalls: number;
  /** US dollars of the current turn's priced model calls. */
  readonly turnCostUsd: number;
  /** The spend the turn's limits count from: zero, or what was spent when a human approved going on. */
  readonly spendBase: SpendBase;
  /** The ticket's spend limits for the current turn, from its input entry. */
  readonly ticketLimits?: SpendLimits | undefined;
  /** A human declined to let the turn spend more: it ends `budget-exceeded`. */
  readonly budgetDenied?: string | undefined;
  /** Seq of the last entry the latest compaction replaced (0: none): the model's transcript starts after it. */
  readonly compactedThrough: number;
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
    | {
        readonly status: OutcomeStatus;
        readonly output?: unknown;
        readonly error?: string | undefined;
        /** A `cancelled` turn stopped alone: the conversation goes on. */
        readonly stopped?: true | undefined;
      }
    | undefined;
  /**
   * A `published` entry was journaled: a result given up as undelivered, or any result of an older
   * version. A sent result is on the session record instead (`publishedTurnId`, see `isPublished`).
   */
  readonly published: boolean;
  /** A once-only call whose fate is unknown: the session waits for a human. */
  readonly parked?: ParkedCall | undefined;
  /** Calls of this turn whose approval was requested and not yet decided, in request order. */
  readonly awaitingApproval: readonly AwaitedApproval[];
  /** Decisions of this turn, by `callKey`: never by call id alone, which a model may reuse. */
  readonly decisions: Readonly<Record<string, Decision>>;
  /** Inbox items already journaled this turn (messages, decisions, resolutions): each lands once. */
  readonly deliveredIds: readonly string[];
  /** The agent version the session runs on: its last turn's input, or an `upgraded` or `forked` entry since. */
  readonly agentVersion?: number | undefined;
  /** A fork's effects and which of the original's once-only calls it answered (from its latest `forked` entry). */
  readonly fork?: ForkState | undefined;
  /** The tenant limit the session waits on: its latest `limited` entry, until anything but a leg marker follows it. */
  readonly limited?: EntryDataOf<'limited'> | undefined;
}

export const EMPTY_VIEW: SessionView = {
  lastSeq: 0,
  legEpoch: 0,
  legs: 0,
  steps: 0,
  turnSteps: 0,
  usage: { inputTokens: 0, outputTokens: 0 },
  modelCalls: 0,
  costUsd: 0,
  turnUsage: { inputTokens: 0, outputTokens: 0 },
  turnModelCalls: 0,
  turnCostUsd: 0,
  spendBase: ZERO_SPEND,
  compactedThrough: 0,
  pendingCalls: [],
  failedAttempts: 0,
  published: false,
  awaitingApproval: [],
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
  // A limit is waited on until the session does anything else: a leg's marker is not that.
  const next = { ...view, lastSeq: entry.seq, limited: undefined };
  switch (entry.kind) {
    case 'leg':
      return { ...next, legEpoch: entry.epoch, legs: view.legs + 1, limited: view.limited };
    case 'limited':
      return { ...next, limited: entry.data };
    case 'input':
      // A new turn: per-turn state starts over; the transcript keeps everything before it. An
      // input that carries its leg's marker fences like one.
      return {
        ...next,
        ...(entry.data.leg ? { legEpoch: entry.epoch, legs: view.legs + 1 } : {}),
        ...(entry.data.agentVersion === undefined ? {} : { agentVersion: entry.data.agentVersion }),
        turnId: entry.turnId,
        turnSteps: 0,
        turnUsage: { inputTokens: 0, outputTokens: 0 },
        turnModelCalls: 0,
        turnCostUsd: 0,
        // The session's cost limit counts on from an approval given in an earlier turn.
        spendBase: { ...ZERO_SPEND, sessionCostUsd: view.spendBase.sessionCostUsd },
        budgetDenied: undefined,
        ticketLimits: entry.data.limits,
        pendingCalls: [],
        finalText: undefined,
        failedAttempts: 0,
        retryAt: undefined,
        lastError: undefined,
        outcome: undefined,
        published: false,
        parked: undefined,
        awaitingApproval: [],
        decisions: {},
        deliveredIds: [],
      };
    case 'model':
      return {
        ...next,
        ...spentOn(view, entry.data),
        steps: view.steps + 1,
        turnSteps: view.turnSteps + 1,
        pendingCalls: entry.data.toolCalls.map((call) => ({ call, modelSeq: entry.seq })),
        finalText: entry.data.toolCalls.length === 0 ? (entry.data.text ?? '') : undefined,
        failedAttempts: 0,
        retryAt: undefined,
      };
    case 'intent':
      return {
        ...next,
        pendingCalls: view.pendingCalls.map((p) =>
          p.call.id === entry.data.callId ? { ...p, intentSeq: entry.seq, digest: entry.data.digest } : p,
        ),
      };
    case 'tool': {
      const answered = view.pendingCalls.find((p) => p.call.id === entry.data.callId);
      const fork =
        entry.data.forkOf && view.fork && answered
          ? markUsed(view.fork, entry.data.forkOf.seq, answered.modelSeq, answered.call.id)
          : view.fork;
      return {
        ...next,
        fork,
        steps: view.steps + 1,
        turnSteps: view.turnSteps + 1,
        pendingCalls: view.pendingCalls.filter((p) => p.call.id !== entry.data.callId),
      };
    }
    case 'reconciled': {
      // done settles the call like a result; notDone lets it run again under a new key;
      // unknown parks the session until a human decides (an operator's `resolve` unparks it).
      const base = entry.data.id === undefined ? next : delivered(next, entry.data.id);
      const unparked = entry.data.verdict !== 'unknown' && view.parked?.callId === entry.data.callId;
      const from = unparked ? { ...base, parked: undefined } : base;
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
      return { ...from, parked: parkedAt(view, entry.data.callId, entry.seq) };
    }
    case 'approval': {
      const awaited = awaitedApproval(view, entry.seq, entry.data);
      const { ranBefore } = entry.data;
      return {
        ...next,
        fork: ranBefore && view.fork ? markUsed(view.fork, ranBefore.seq, awaited.modelSeq, awaited.callId) : view.fork,
        awaitingApproval: [...view.awaitingApproval.filter((a) => callKey(a) !== callKey(awaited)), awaited],
      };
    }
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
      // A decision applies only to the awaited call it names; one naming nothing that waits decides nothing.
      const awaited = view.awaitingApproval.find((a) => decides(entry.data, a));
      if (!awaited) return decided;
      return {
        ...decided,
        ...(awaited.tool === BUDGET_APPROVAL_TOOL ? budgetDecided(view, entry.data) : {}),
        awaitingApproval: view.awaitingApproval.filter((a) => a !== awaited),
        decisions: {
          ...view.decisions,
          [callKey(awaited)]: {
            approved: entry.data.approved,
            ...(entry.data.reason !== undefined ? { reason: entry.data.reason } : {}),
            // A decision from no inbox item is the approval timeout's.
            ...(entry.data.id === undefined ? { byDefault: true } : {}),
            ...(entry.data.digest !== undefined ? { digest: entry.data.digest } : {}),
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
    case 'compaction':
      // A compaction always continues where the previous one stopped and replaces only what came
      // before it: anything else was not written by this runtime.
      if (entry.data.fromSeq !== view.compactedThrough + 1 || entry.data.throughSeq >= entry.seq)
        throw new CorruptStateError(
          `compaction at seq ${entry.seq} replaces seqs ${entry.data.fromSeq}..${entry.data.throughSeq}; expected from ${view.compactedThrough + 1} to before ${entry.seq}`,
        );
      // A step (progress, counted and priced), though not one of the turn's steps the cap counts.
      return {
        ...next,
        ...spentOn(view, entry.data),
        steps: view.steps + 1,
        compactedThrough: entry.data.throughSeq,
        failedAttempts: 0,
        retryAt: undefined,
      };
    case 'released':
      // The task ledger reads it (lib/core/tasks.ts); the turn goes on.
      return next;
    case 'upgraded':
      return { ...next, agentVersion: entry.data.to };
    case 'outcome':
      // Errors before the outcome were the steps'; the result's own sends count from here.
      return { ...next, outcome: entry.data, failedAttempts: 0, retryAt: undefined, lastError: undefined };
    case 'published':
      return { ...next, published: true };
    case 'forked':
      // The fork's history before this entry is the original's; from here its effects apply, and
      // the version it was made to run on, when it names one.
      return {
        ...next,
        fork: forkStateOf(entry.data),
        ...(entry.data.version === undefined ? {} : { agentVersion: entry.data.version }),
      };
  }
}

/**
 * The awaited approval an `approval` entry opens. An entry of an older version names no model
 * entry: its call is one of the pending calls, which all come from the last model entry.
 */
function awaitedApproval(view: SessionView, seq: number, data: EntryDataOf<'approval'>): AwaitedApproval {
  const modelSeq = data.modelSeq ?? view.pendingCalls.find((p) => p.call.id === data.callId)?.modelSeq ?? 0;
  return {
    seq,
    input: data.input,
    modelSeq,
    callId: data.callId,
    tool: data.tool,
    ...(data.digest === undefined ? {} : { digest: data.digest }),
    ...(data.expiresAt === undefined ? {} : { expiresAt: data.expiresAt }),
    ...(data.ranBefore === undefined ? {} : { ranBefore: data.ranBefore }),
  };
}

/**
 * Whether a journaled decision decides this awaited call. An entry of an older version names the
 * call id alone; it was journaled while that call awaited, and its missing digest never matches a
 * call's (the approval gate asks again).
 */
const decides = (data: EntryDataOf<'decision'>, awaited: AwaitedApproval): boolean =>
  data.modelSeq === undefined ? data.callId === awaited.callId : sameCall(awaited, data);

/** The pending call that a `reconciled: unknown` entry at `seq` parks. */
function parkedAt(view: SessionView, callId: string, seq: number): ParkedCall {
  const pending = view.pendingCalls.find((p) => p.call.id === callId);
  return {
    seq,
    modelSeq: pending?.modelSeq ?? 0,
    callId,
    tool: pending?.call.name ?? '',
    ...(pending?.digest === undefined ? {} : { digest: pending.digest }),
  };
}

/** The counters a priced model call (a model entry or a compaction) adds to. */
function spentOn(
  view: SessionView,
  call: { readonly usage: Usage; readonly costUsd?: number | undefined },
): Pick<SessionView, 'usage' | 'turnUsage' | 'modelCalls' | 'turnModelCalls' | 'costUsd' | 'turnCostUsd'> {
  const add = (a: Usage): Usage => ({
    inputTokens: a.inputTokens + call.usage.inputTokens,
    outputTokens: a.outputTokens + call.usage.outputTokens,
  });
  return {
    usage: add(view.usage),
    turnUsage: add(view.turnUsage),
    modelCalls: view.modelCalls + 1,
    turnModelCalls: view.turnModelCalls + 1,
    costUsd: view.costUsd + (call.costUsd ?? 0),
    turnCostUsd: view.turnCostUsd + (call.costUsd ?? 0),
  };
}

/** What the view has spent, as spend limits count it. */
export const spentOf = (view: SessionView): Spent => ({
  turnTokens: view.turnUsage.inputTokens + view.turnUsage.outputTokens,
  turnModelCalls: view.turnModelCalls,
  sessionCostUsd: view.costUsd,
});

/** A decision on a budget approval: approved, the limits count again from here; declined, the turn ends. */
function budgetDecided(view: SessionView, data: EntryDataOf<'decision'>): Partial<SessionView> {
  if (data.approved) return { spendBase: spentOf(view) };
  return { budgetDenied: data.reason ?? (data.id === undefined ? 'no decision in time' : 'no reason given') };
}

const delivered = (view: SessionView, id: string): SessionView => ({
  ...view,
  deliveredIds: [...view.deliveredIds, id],
});

export function foldJournal(entries: readonly JournalEntry[], from: SessionView = EMPTY_VIEW): SessionView {
  return entries.reduce(applyEntry, from);
}
