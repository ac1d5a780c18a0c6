import type { SessionKey } from '../core/ids.ts';

/** Something a live follower may see that is not journaled: partial model output while it streams. */
export interface LiveEvent {
  readonly kind: 'model-text';
  /** The journal seq the complete response will take. */
  readonly seq: number;
  /** The text so far (cumulative, so a follower that joins late or misses one still reads it whole). */
  readonly text: string;
}

/**
 * An ephemeral channel beside the journal. Best effort by contract: nothing here is durable or
 * replayed, a publish never fails a step, and the journaled entry remains the one truth.
 */
export interface LiveEvents {
  publish(session: SessionKey, event: LiveEvent): void;
}
