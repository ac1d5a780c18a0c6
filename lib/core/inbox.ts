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
]);

/** The inbox item a steering turn posts, atomically with its place at the head of the turn queue. */
export const steerItem = (turnId: string): InboxItem => ({ kind: 'steer', id: `steer:${turnId}`, turnId });
export type InboxItem = z.infer<typeof InboxItem>;

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
 * started. Anything delivered before, or answering nothing, is dropped.
 */
export function triageInbox(view: SessionView, items: readonly InboxItem[]): InboxTriage {
  const deliver: InboxItem[] = [];
  const discard: InboxItem[] = [];
  const running = view.turnId !== undefined && !view.outcome;
  let superseded = false;
  for (const item of items) {
    if (view.deliveredIds.includes(item.id)) discard.push(item);
    else if (item.kind === 'steer') {
      if (item.turnId === view.turnId || superseded) discard.push(item);
      // An interrupted once-only call is reconciled before its turn winds down: the steer waits.
      else if (running && interruptedOnceOnly(view) === undefined) {
        deliver.push(item);
        superseded = true;
      }
    } else if (item.kind === 'message') {
      if (view.turnId !== undefined && !view.outcome) deliver.push(item);
    } else if (item.kind === 'decision') {
      (view.awaitingApproval.some((a) => sameCall(a, item)) ? deliver : discard).push(item);
    } else {
      const { parked } = view;
      (parked && item.parkSeq === parked.seq && sameCall(parked, item) ? deliver : discard).push(item);
    }
  }
  return { deliver, discard };
}
