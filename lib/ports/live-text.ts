import type { SessionKey } from '../core/ids.ts';

/** A piece of a model response while it streams: kept briefly for live followers, never journaled. */
export interface LiveTextChunk {
  /** The journal seq the complete response will take (the model entry to be). */
  readonly seq: number;
  /** The turn the response belongs to. */
  readonly turnId: string;
  /** 0, 1, 2 … in the order written: a follower asks for the chunks after the last it has. */
  readonly index: number;
  /** The text added since the previous chunk. */
  readonly text: string;
}

/**
 * Partial model text beside the journal, readable from any process. Ephemeral by contract: each
 * chunk lives until its `expiresAt`, nothing is replayed or fenced, and the journaled model entry
 * at the chunk's seq is the one truth — a follower stops showing chunks once that entry exists.
 */
export interface LiveTextStore {
  /** Stores one chunk until `expiresAt` (epoch ms); writing the same (seq, index) again replaces it. */
  put(session: SessionKey, chunk: LiveTextChunk, expiresAt: number): Promise<void>;
  /** The unexpired chunks of the response at `seq` with an index above `after` (default: all), in order. */
  read(
    session: SessionKey,
    seq: number,
    options: { readonly after?: number | undefined; readonly now: number },
  ): Promise<LiveTextChunk[]>;
}
