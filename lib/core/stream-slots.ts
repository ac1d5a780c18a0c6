/**
 * Open event streams per caller: what the API's long polls may hold at once. Pure: the stores
 * (lib/adapters/{dynamodb,memory}) keep one small map per caller and decide with these.
 */

/** A caller's open streams: stream id → the time (epoch ms) its slot lapses if never closed. */
export type StreamSlots = Readonly<Record<string, number>>;

/** Whether one more stream may open, and the caller's slots if it does. */
export type StreamAdmission =
  | { readonly admitted: true; readonly slots: StreamSlots }
  | {
      readonly admitted: false;
      /** Streams the caller holds now. */
      readonly open: number;
      /** When the first of them lapses at the latest (an invocation cannot outlive it). */
      readonly freeAt: number;
    };

/**
 * Admits stream `id` until `until` when the caller holds fewer than `limit` unexpired slots. An
 * expired slot is one whose invocation died without closing it (a timeout, a crash): it is dropped
 * here, so a lost close costs at most one slot for one hold, never a slot for good.
 */
export function admitStream(
  slots: StreamSlots,
  request: { readonly id: string; readonly until: number; readonly now: number; readonly limit: number },
): StreamAdmission {
  const live = Object.entries(slots).filter(([, until]) => until > request.now);
  if (live.length >= request.limit)
    return { admitted: false, open: live.length, freeAt: Math.min(...live.map(([, until]) => until)) };
  return { admitted: true, slots: Object.fromEntries([...live, [request.id, request.until]]) };
}

/** The sentence a refused stream is answered with (HTTP 429). */
export function streamRefusal(holder: string, refusal: { open: number; freeAt: number }, now: number): string {
  const seconds = Math.max(1, Math.ceil((refusal.freeAt - now) / 1_000));
  return `${holder} has ${refusal.open} event streams open, the most one caller may hold at once; close one, or retry in ${seconds} s`;
}
