import * as z from 'zod';
import { identityOf, sameCall } from './call-identity.ts';
import { callIdentityFields } from './call-identity-fields.ts';
import type { AwaitedApproval, ParkedCall, SessionView } from './fold.ts';
import { interruptedOnceOnly } from './next-action.ts';

/**
 * The inbox: what any process tells a session besides a new turn — a message for the running
 * turn, a human's approval decision, an operator's verdict on a parked call. Items wait on the
 * session record until the owner journals them (each once, by id) and takes them off.
 */
export const InboxItem = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('message'), id: z.string().min(1), text: z.string() }).strict(),
  /**
   * A decision names the call it decides (lib/core/call-identity.ts). The identity is optional here
   * only so that an item an older client left on a record still reads: naming no model entry, it
   * decides nothing and is dropped.
   */
  z
    .object({
      kind: z.literal('decision'),
      id: z.string().min(1),
      callId: z.string().min(1),
      approved: z.boolean(),
      reason: z.string().optional(),
      ...callIdentityFields,
    })
    .strict(),
  /** A verdict names the parked call and its park (`parkSeq`): a call parked again needs a verdict of its own. */
  z
    .object({
      kind: z.literal('resolve'),
      id: z.string().min(1),
      callId: z.string().min(1),
      done: z.boolean(),
      output: z.unknown().optional(),
      parkSeq: z.number().int().positive().optional(),
      ...callIdentityFields,
    })
    .strict(),
  /** A turn sent with `--mode steer`: the running turn winds down (superseded) so it starts at once. */
  z.object({ kind: z.literal('steer'), id: z.string().min(1), turnId: z.string().min(1) }).strict(),
  /**
   * A stop of one turn (useChat's stop, `baton cancel SESSION --turn T`): the named turn ends
   * `cancelled` at its next step boundary, or as it comes up when it still waits in the queue; the
   * conversation goes on. A stop of a turn that has ended does nothing.
   */
  z.object({ kind: z.literal('stop'), id: z.string().min(1), turnId: z.string().min(1) }).strict(),
]);

/** The inbox item a steering turn posts, atomically with its place at the head of the turn queue. */
export const steerItem = (turnId: string): InboxItem => ({ kind: 'steer', id: `steer:${turnId}`, turnId });
export type InboxItem = z.infer<typeof InboxItem>;

/** The error of a stopped turn's `cancelled` outcome (and of its result). */
export const TURN_STOPPED = 'turn stopped by request';

/** The inbox item that stops a turn; its id comes from the turn's, so every stop of one turn is one item. */
export const stopItem = (turnId: string): InboxItem => ({ kind: 'stop', id: `stop:${turnId}`, turnId });

/** The turns of a session that have not started yet: the record's active turn (until its input is journaled) and its queue. */
export interface WaitingTurns {
  readonly activeTurnId?: string | undefined;
  readonly turnQueue: readonly string[];
}

/** A human's decision on an awaited approval; its id comes from the approval's seq, so each request gets its own. */
export const decisionItem = (
  approval: AwaitedApproval,
  decision: { readonly approved: boolean; readonly reason?: string | undefined },
): InboxItem => ({
  kind: 'decision',
  id: `decision:${approval.seq}:${approval.callId}`,
  ...identityOf(approval),
  approved: decision.approved,
  ...(decision.reason !== undefined ? { reason: decision.reason } : {}),
});

/** An operator's verdict on a parked call; its id comes from the park's seq, so each park gets its own. */
export const resolveItem = (
  parked: ParkedCall,
  verdict: { readonly done: boolean; readonly output?: unknown },
): InboxItem => ({
  kind: 'resolve',
  id: `resolve:${parked.seq}:${parked.callId}`,
  ...identityOf(parked),
  parkSeq: parked.seq,
  done: verdict.done,
  ...(verdict.done ? { output: verdict.output ?? null } : {}),
});

/** What the owner does with the inbox: journal some items now, drop some, leave the rest. */
export interface InboxTriage {
  /** Items to journal now, in the order they arrived. */
  readonly deliver: readonly InboxItem[];
  /** Items already journaled, or answering nothing that waits: taken off without an entry. */
  readonly discard: readonly InboxItem[];
}

/**
 * Sorts the inbox against the fold. A message lands in a running turn (one that has no outcome
 * yet) and otherwise waits for the next turn; a decision lands when the call it names (model
 * entry, call id, tool, input digest) awaits approval; a verdict when the park it names holds. A
 * steer supersedes a running turn other than its own (once: the other steers then are dropped,
 * their turns already wait at the head of the queue) and is dropped once its own turn has
 * started. A stop ends the running turn it names; one naming a turn that has not started
 * (`waiting`: the record's active turn and queue) waits for it, and one naming any other turn
 * (ended, or never accepted) is dropped: a stop never touches a turn it does not name. Once an
 * item ends the running turn nothing else lands in this pass: the rest is sorted again against
 * the turn's end. Anything delivered before, or answering nothing, is dropped.
 */
export function triageInbox(
  view: SessionView,
  items: readonly InboxItem[],
  waiting: WaitingTurns = { turnQueue: [] },
): InboxTriage {
  const deliver: InboxItem[] = [];
  const discard: InboxItem[] = [];
  const running = view.turnId !== undefined && !view.outcome;
  // An interrupted once-only call is reconciled before its turn winds down: a steer or stop waits.
  const mayEnd = running && interruptedOnceOnly(view) === undefined;
  let ended = false;
  for (const item of items) {
    if (view.deliveredIds.includes(item.id)) discard.push(item);
    else if (item.kind === 'steer') {
      if (item.turnId === view.turnId || ended) discard.push(item);
      else if (mayEnd) {
        deliver.push(item);
        ended = true;
      }
    } else if (item.kind === 'stop') {
      if (item.turnId === view.turnId) {
        if (!running) discard.push(item);
        else if (mayEnd && !ended) {
          deliver.push(item);
          ended = true;
        }
      } else if (!waitsToStart(waiting, item.turnId)) discard.push(item);
    } else if (ended) {
      // Sorted again at the next boundary, against the ended turn.
    } else if (item.kind === 'message') {
      if (running) deliver.push(item);
    } else if (item.kind === 'decision') {
      (view.awaitingApproval.some((a) => sameCall(a, item)) ? deliver : discard).push(item);
    } else {
      const { parked } = view;
      (parked && item.parkSeq === parked.seq && sameCall(parked, item) ? deliver : discard).push(item);
    }
  }
  return { deliver, discard };
}

/** Is `turnId` a turn that has not started: the record's active turn (its input not yet journaled) or one in its queue? */
const waitsToStart = (waiting: WaitingTurns, turnId: string): boolean =>
  waiting.activeTurnId === turnId || waiting.turnQueue.includes(turnId);
