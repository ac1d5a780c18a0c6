import { TicketConflictError, TurnRefusedError } from '../core/errors.ts';
import { formatSessionKey, hashJson, type SessionKey } from '../core/ids.ts';
import type { SpendLimits } from '../core/spend.ts';
import { childContext } from '../core/trace-context.ts';
import { DEFAULT_MAX_PENDING_INPUTS } from '../core/vocabulary.ts';
import type { Clock } from '../ports/clock.ts';
import type { WorkQueue } from '../ports/queues.ts';
import { type ActiveInput, EnqueueRefusal, type SessionRecord, type SessionStore } from '../ports/session-store.ts';
import { sessionItemTtlSeconds } from './expiry.ts';

/** What accepting a further turn needs: the store, the work queue and a clock. */
export interface TurnIntakeDeps {
  readonly store: SessionStore;
  readonly workQueue: WorkQueue;
  readonly clock: Clock;
}

export interface NewTurn {
  readonly key: SessionKey;
  /** The turn's id: a second send with the same id is the same turn. */
  readonly turnId: string;
  readonly ticketId: string;
  readonly input: unknown;
  /** Refuse unless the turn accepted last is this one. */
  readonly ifLastTurn?: string | undefined;
  readonly maxPendingInputs?: number | undefined;
  /** Supersede the running turn at its next step boundary and run this one at once (`--mode steer`). */
  readonly steer?: boolean | undefined;
  /** When the sweeper kicks an idle session should the kick be lost. */
  readonly sweepGraceMs: number;
  /** The turn's spend limits, within the agent's ceiling (checked by the caller, capped again by the leg). */
  readonly limits?: SpendLimits | undefined;
  /**
   * The session's record as the caller has just read it (strongly consistently), to save reading
   * it again: what is taken from it (its kind, its retention) is as good from a read a moment
   * earlier, and the enqueue is conditional on the record as stored at that time.
   */
  readonly session?: SessionRecord | undefined;
}

export interface AcceptedTurn {
  readonly key: SessionKey;
  readonly turnId: string;
  /** False when this turn was accepted before: the send converged on it. */
  readonly queued: boolean;
  /** It heads the queue and the running turn winds down for it. */
  readonly steered: boolean;
}

/**
 * The largest input (as JSON) carried on the session record beside its turn item: the leg that
 * starts the turn then reads no turn item. Small, because every step boundary reads the record
 * (a strongly consistent read of up to 4 KB is one RCU) and the ended turn's input leaves it only
 * at the end of the turn.
 */
export const INLINE_INPUT_MAX_BYTES = 1024;

/** The input to carry on the record, when it is small enough. */
export function inlineInput(turnId: string, input: unknown): ActiveInput | undefined {
  return Buffer.byteLength(JSON.stringify(input) ?? '') <= INLINE_INPUT_MAX_BYTES ? { turnId, input } : undefined;
}

/**
 * Accepts a further turn of a conversation from any process: checks the session can take it,
 * persists the input as a turn (conditional put: a resend converges) expiring with the session's
 * other items, queues it atomically behind the active turn, then kicks. Throws TurnRefusedError
 * naming why a turn is refused, and TicketConflictError when the id was used for another input.
 */
export async function acceptTurn(turn: NewTurn, deps: TurnIntakeDeps): Promise<AcceptedTurn> {
  const { key, turnId } = turn;
  const existing = turn.session ?? (await deps.store.getSession(key));
  if (!existing) throw refusal('not-found', key, turnId, undefined, undefined);
  if (!existing.conversation && existing.activeTurnId !== turnId)
    throw refusal('one-shot', key, turnId, existing, undefined);
  const now = deps.clock.now();
  const inputHash = hashJson(turn.input);
  const maxPending = turn.maxPendingInputs ?? DEFAULT_MAX_PENDING_INPUTS;
  const put = await deps.store.putTurn(
    key,
    {
      turnId,
      ticketId: turn.ticketId,
      input: turn.input,
      inputHash,
      createdAt: now,
      ...(turn.limits === undefined ? {} : { limits: turn.limits }),
    },
    sessionItemTtlSeconds(existing, now),
  );
  if (!put.created && put.turn.inputHash !== inputHash) throw new TicketConflictError(turnId);
  // A resend of a turn refused before gets the same answer: its sender (a redelivered ticket
  // whose refusal result was not yet published, say) learns it again.
  const refusedBefore = earlierRefusal(turnId, put.turn.outcome?.error);
  if (refusedBefore) throw refusedBefore;
  const result = await deps.store.enqueueTurn(key, {
    turnId,
    now,
    sweepAt: now + turn.sweepGraceMs,
    maxPending,
    ifLastTurn: turn.ifLastTurn,
    steer: turn.steer,
    // A turn with limits is read from its item, which carries them (the record carries the input alone).
    activeInput: turn.limits === undefined ? inlineInput(turnId, turn.input) : undefined,
  });
  if (!result.ok) {
    const refused = refusal(result.reason, key, turnId, result.current, maxPending);
    // The turn would list as queued for good: every refused turn gets the refusal as its
    // outcome, so each stored turn has exactly one — the one this send wrote, or one an earlier
    // send wrote before it died. A resend of the same id gets the same answer; a sender that
    // tries again later uses a new id. A concurrent send of the same id may have been accepted
    // past a full queue meanwhile: such a turn is on the record, and is left to its leg.
    if (put.turn.outcome === undefined && !(await acceptedMeanwhile(deps.store, key, turnId, result.reason)))
      await deps.store.setTurnOutcome(key, turnId, { status: 'failed', error: refused.message, at: now });
    throw refused;
  }
  // Kick even for a turn accepted before: its first kick may be what was lost. A holder drops it.
  if (put.turn.outcome === undefined) {
    await deps.workQueue.sendKick(
      { v: 1, session: key, reason: 'first', turnId },
      { trace: childContext(result.record.traceId) },
    );
  }
  return { key, turnId, queued: result.queued, steered: result.steered === true };
}

function refusal(
  reason: EnqueueRefusal,
  key: SessionKey,
  turnId: string,
  current: SessionRecord | undefined,
  maxPending?: number,
): TurnRefusedError {
  const session = `session ${key.id}`;
  const why: Record<EnqueueRefusal, string> = {
    'not-found': `${session} not found (${formatSessionKey(key)})`,
    finished: `${session} has ended (${current?.state}): it takes no further turns`,
    'one-shot': `${session} belongs to agent ${key.agent}, which takes one turn per session; declare conversation: true to send further turns`,
    stale: `turn ${turnId} was written against a stale view: the last turn of ${session} is ${current?.lastTurnId ?? 'none'}`,
    released: `${session} was released: it takes no further turns`,
    full: `${session} already has ${current?.turnQueue.length ?? 'too many'} turns waiting, its limit of pending inputs${maxPending === undefined ? '' : ` (${maxPending})`}; wait for one to finish or raise maxPendingInputs`,
  };
  return new TurnRefusedError(reason, `turn ${turnId} refused (${reason}): ${why[reason]}`);
}

/** Was the turn accepted by a concurrent send after this one was refused? Only a full queue or a stale view can pass later. */
async function acceptedMeanwhile(
  store: SessionStore,
  key: SessionKey,
  turnId: string,
  reason: EnqueueRefusal,
): Promise<boolean> {
  if (reason !== EnqueueRefusal.full && reason !== EnqueueRefusal.stale) return false;
  const record = await store.getSession(key);
  return record?.activeTurnId === turnId || record?.turnQueue.includes(turnId) === true;
}

/** The refusal a turn's stored outcome records, if it was refused at its enqueue. */
function earlierRefusal(turnId: string, error: string | undefined): TurnRefusedError | undefined {
  const reason = error?.startsWith(`turn ${turnId} refused (`)
    ? error.slice(`turn ${turnId} refused (`.length).split(')')[0]
    : undefined;
  return reason !== undefined && (Object.values(EnqueueRefusal) as string[]).includes(reason)
    ? new TurnRefusedError(reason as EnqueueRefusal, error!)
    : undefined;
}
