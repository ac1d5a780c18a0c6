import type { Kick } from './messages.ts';
import { RUNTIME_DEFAULTS } from './resources.ts';
import type { SessionState } from './vocabulary.ts';
import { TERMINAL_SESSION_STATES } from './vocabulary.ts';

/** Lease math. The store enforces the conditions; this decides which acquire to attempt. */

export const DEFAULT_LEASE_TTL_MS = RUNTIME_DEFAULTS.leaseTtlMs;

/** Renew three times per TTL, so one lost renewal never loses the lease. */
export const renewIntervalMs = (ttlMs: number): number => Math.floor(ttlMs / 3);

/** The most a `sweepAt` (or a new lease's expiry) moves off what was asked to meet the one already set: a tenth of the TTL. */
export const sweepAlignMs = (ttlMs: number): number => Math.floor(ttlMs / 10);

/**
 * The `sweepAt` to write when `wanted` is asked for and the record holds `held`. Moving
 * `sweepAt` is a delete and a put of the session's sweep index entry (2 write units on
 * DynamoDB); writing the value it already holds writes no index at all. A lease's expiry, a
 * hand-off's backstop and the next turn's grace are all about a TTL ahead and only bound when the
 * sweeper looks, so a value within a tenth of the TTL of the one asked for stands in for it.
 */
export function alignSweepAt(held: number | undefined, wanted: number, ttlMs: number): number {
  return held !== undefined && Math.abs(held - wanted) <= sweepAlignMs(ttlMs) ? held : wanted;
}

/**
 * The expiry of a lease taken now (an acquire sets `sweepAt = until`). A turn's enqueue, or a
 * leg's hand-off moments before, set `sweepAt` a TTL ahead just before the kick arrives: the new
 * lease then ends exactly there, at most a tenth of the TTL shorter or longer than `now + TTL`,
 * and the acquire writes no index. The holder's heartbeat counts from the expiry it got.
 */
export function leaseUntil(record: Pick<LeaseState, 'sweepAt'>, now: number, ttlMs: number): number {
  return alignSweepAt(record.sweepAt, now + ttlMs, ttlMs);
}

/** What a leg knows of how fresh its session record and its lease are, at a step boundary. */
export interface RecordInHand {
  readonly now: number;
  /** When the record in hand was read: the acquire, the last renewal or the last look, as sent. */
  readonly readAt: number;
  /** The lease's expiry as of the last good renewal. */
  readonly leaseUntil: number;
  readonly leaseTtlMs: number;
  /** The oldest a record may be and still stand for a read (RuntimeConfig.inboxLookMs). */
  readonly lookMs: number;
}

/**
 * Must the inbox step read the session record, or may it take the one in hand? It reads when the
 * record is older than `lookMs` — so an event reaches a running turn within that, or within the
 * step in flight when it is longer — and whenever the heartbeat has fallen behind (less than half
 * a TTL left on the lease in hand, where renewals keep more than two thirds), so a leg whose lease
 * could pass to another owner looks before each step, as it did at every boundary.
 */
export function mustReadRecord(hand: RecordInHand): boolean {
  return hand.now - hand.readAt >= hand.lookMs || hand.leaseUntil - hand.now < hand.leaseTtlMs / 2;
}

/** The fields of a session record that the acquire decision reads. */
export interface LeaseState {
  readonly state: SessionState;
  readonly owner?: string | undefined;
  readonly until?: number | undefined;
  readonly epoch: number;
  readonly pendingVersion: number;
  readonly seenVersion: number;
  readonly cancelRequested: boolean;
  readonly sweepAt?: number | undefined;
  /** The nonce the holder stored when it yielded; its continuation must carry it. */
  readonly handoff?: string | undefined;
}

export type AcquirePlan =
  | { readonly kind: 'acquire'; readonly recovery: boolean; readonly expectOwner?: string | undefined }
  | { readonly kind: 'drop'; readonly why: 'finished' | 'held' | 'no-work' | 'wrong-handoff' };

/** Is there something for a new owner to do? */
export function hasWork(lease: LeaseState, kick: Pick<Kick, 'reason'>, now: number): boolean {
  if (TERMINAL_SESSION_STATES.includes(lease.state)) return false;
  if (lease.state === 'queued' || lease.state === 'running') return true;
  if (lease.cancelRequested || lease.pendingVersion > lease.seenVersion) return true;
  // A waiting session with a timer (a retry backoff) wakes when the timer is due.
  return lease.state === 'waiting' && lease.sweepAt !== undefined && lease.sweepAt <= now && kick.reason !== 'first';
}

/**
 * Decides how to acquire for a kick: take a free lease when there is work; take over an expired
 * one (a recovery); take over from a predecessor that yielded to this continuation. Anything
 * else is dropped: the holder will see the new pendingVersion.
 */
export function planAcquire(
  lease: LeaseState,
  kick: Pick<Kick, 'reason' | 'fromEpoch' | 'handoff'>,
  now: number,
): AcquirePlan {
  if (TERMINAL_SESSION_STATES.includes(lease.state)) return { kind: 'drop', why: 'finished' };
  if (lease.owner === undefined) {
    return hasWork(lease, kick, now) ? { kind: 'acquire', recovery: false } : { kind: 'drop', why: 'no-work' };
  }
  if (lease.until !== undefined && lease.until < now)
    return { kind: 'acquire', recovery: true, expectOwner: lease.owner };
  // A live lease is handed over only to the continuation its holder sent: right epoch and nonce.
  const fromHolder = kick.handoff !== undefined && kick.handoff === lease.handoff;
  if (kick.reason === 'continuation' && kick.fromEpoch === lease.epoch) {
    // The holder stores its nonce before it sends its continuation: one without it is forged.
    return fromHolder
      ? { kind: 'acquire', recovery: false, expectOwner: lease.owner }
      : { kind: 'drop', why: 'wrong-handoff' };
  }
  return { kind: 'drop', why: 'held' };
}
