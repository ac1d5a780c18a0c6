import type { SessionRecord } from '../ports/session-store.ts';

/**
 * When a session's items expire (DynamoDB TTL), under one invariant: no item a live session needs
 * (a turn, a journal entry, a snapshot) expires before the session's record.
 *
 * The record's expiry moves a retention past every acquire and release, at no cost: those writes
 * happen anyway. An item's expiry moves only by a write of its own, one per item, so it cannot
 * follow every leg. Items are therefore written to live half a retention longer than the record
 * (`itemTtlAfter`), and the record says until when all of them live: the retention they were
 * written under (`retentionS`) from when they last moved (`expiryRefreshedAt`, or its creation).
 * A leg moves every item forward once the record's new expiry would come within an eighth of a
 * retention of that floor (`itemsNeedRefresh`): at most once per 3/8 of a retention of use (about
 * 11 days at 30), never for a session used for less, so it costs nothing per step. The eighth left
 * over is slack for the later legs of a long turn, and for a refresh that fails (best-effort: the
 * next leg tries again). The other way round — refreshing only past half a retention since the
 * last move — let an idle conversation's record outlive the head of its journal.
 *
 * The price: a finished session's items stay up to half a retention after its record.
 */

const DAY_S = 24 * 3600;

/** The retention of a deployment, in seconds, from its days. */
export const retentionSeconds = (retentionDays: number): number => Math.round(retentionDays * DAY_S);

/** The session record's expiry (epoch s) for a write at `nowMs`: a retention later. */
export const recordTtlAfter = (retentionS: number, nowMs: number): number => Math.floor(nowMs / 1000) + retentionS;

/** An item's expiry (epoch s) for a write at `nowMs`: a retention and a half later. */
export const itemTtlAfter = (retentionS: number, nowMs: number): number =>
  recordTtlAfter(retentionS, nowMs) + Math.ceil(retentionS / 2);

/**
 * The earliest expiry of any item of the session (epoch s), as its record tells; undefined for a
 * session whose record does not tell (written before records kept it).
 */
export function itemsExpireAtSeconds(record: SessionRecord): number | undefined {
  if (record.retentionS === undefined) return undefined;
  return itemTtlAfter(record.retentionS, record.expiryRefreshedAt ?? record.createdAt);
}

/**
 * Must a leg that moves the record's expiry now, under a retention of `retentionS`, move every
 * item forward? Yes when the items' floor is unknown or was set under another retention, or when
 * the record's new expiry comes within an eighth of a retention of it.
 */
export function itemsNeedRefresh(record: SessionRecord, retentionS: number, nowMs: number): boolean {
  const floor = itemsExpireAtSeconds(record);
  if (floor === undefined || record.retentionS !== retentionS) return true;
  return floor < recordTtlAfter(retentionS, nowMs) + Math.ceil(retentionS / 8);
}

/**
 * The expiry of an item written now by anyone but a leg (a sent turn, a reader's snapshot): the
 * session's own retention, so it expires with the session's other items. A session that does not
 * tell its retention: the record's expiry (its next leg moves every item forward anyway).
 */
export function sessionItemTtlSeconds(record: SessionRecord, nowMs: number): number | undefined {
  if (record.retentionS !== undefined) return itemTtlAfter(record.retentionS, nowMs);
  return record.expiresAt === undefined ? undefined : Math.ceil(record.expiresAt / 1000);
}
