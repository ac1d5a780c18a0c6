import { SWEEP_SHARDS } from '../ports/session-store.ts';

/**
 * The sweep-index shard of a session: FNV-1a of its id, mod SWEEP_SHARDS. Stable across
 * processes and releases, so a session stays in one shard for its whole life.
 */
export function sweepShardOf(sessionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    hash ^= sessionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % SWEEP_SHARDS;
}
