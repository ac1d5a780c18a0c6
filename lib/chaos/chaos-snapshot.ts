/**
 * What the chaos checker sees: the stored state as DynamoDB holds it, the results queue and the
 * ledger, read from outside the runtime. Items are kept close to their raw form on purpose: the
 * checker must not trust the code it checks (no fold, no store adapter).
 */

/** A ticket the runner submitted. */
export interface SubmittedTicket {
  readonly ticketId: string;
  readonly tenant: string;
  readonly agent: string;
  readonly sessionId: string;
  /** A conversation ticket: what the runner sent after the first turn, filled in as it sends. */
  readonly conversation?: ConversationLog | undefined;
}

/** What the runner sent to a conversation after its first turn (the ticket), in order. */
export interface ConversationLog {
  /** Further turn ids, in the order sent (a message whose turn had ended is sent as a turn). */
  readonly turns: string[];
  /** Messages injected into a running turn, by id. */
  readonly injected: string[];
  /** The turn that asks for a refund (one once-only refund once approved). */
  refundTurnId?: string | undefined;
  /** What the runner planned and could not send (the run ended or a send failed). */
  readonly unsent: string[];
}

/** One journal item, as stored. `data` is undefined when it lives in the blob store. */
export interface RawEntry {
  readonly seq: number;
  readonly kind: string;
  readonly epoch: number;
  readonly writeId: string;
  readonly turnId?: string | undefined;
  readonly data?: Record<string, unknown> | undefined;
}

export interface RawTurn {
  readonly turnId: string;
  readonly outcome?: { readonly status: string; readonly error?: string | undefined } | undefined;
}

/** A session's items: the record (META), its turns and its journal in seq order. */
export interface RawSession {
  readonly pk: string;
  readonly tenant: string;
  readonly agent: string;
  readonly sessionId: string;
  readonly record?:
    | {
        readonly state: string;
        readonly owner?: string | undefined;
        readonly until?: number | undefined;
        readonly epoch: number;
        readonly sweepAt?: number | undefined;
        readonly legs: number;
        readonly recoveries: number;
        readonly activeTurnId?: string | undefined;
        /** A conversation goes idle between turns (the dispatcher, background tasks). */
        readonly conversation?: boolean | undefined;
        /** A background task's session: its parent's id. */
        readonly parentId?: string | undefined;
        readonly pendingVersion?: number | undefined;
        readonly seenVersion?: number | undefined;
      }
    | undefined;
  readonly turns: readonly RawTurn[];
  readonly journal: readonly RawEntry[];
}

/** A result message as drained from the results queue. */
export interface PublishedResult {
  readonly sessionId: string;
  readonly turnId: string;
  readonly ticketId: string;
  readonly status: string;
  readonly error?: string | undefined;
}

/** A call a simulated service received (examples/simulated/ledger.ts writes these). */
export interface LedgerCall {
  readonly service: string;
  readonly operation: string;
  readonly effect: string;
  readonly idempotencyKey: string;
  readonly sessionId: string;
}

export interface ChaosSnapshot {
  readonly tickets: readonly SubmittedTicket[];
  /** By session id. */
  readonly sessions: ReadonlyMap<string, RawSession>;
  readonly results: readonly PublishedResult[];
  readonly ledger: readonly LedgerCall[];
  /** When the snapshot was taken (epoch ms). */
  readonly takenAt: number;
  /** The sweeper's poll interval: a lease expired longer ago than this should have been swept. */
  readonly sweepPeriodMs: number;
}
