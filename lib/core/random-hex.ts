import { randomFillSync } from 'node:crypto';

/** Random bytes drawn per refill: one call into the CSPRNG serves hundreds of ids. */
const POOL_BYTES = 4_096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/**
 * `bytes` random bytes as hex, from a pool the CSPRNG refills (as `crypto.randomUUID` does):
 * each journal write mints an id, and a call into the CSPRNG per id was a visible share of a
 * step's CPU. Every byte is handed out once.
 */
export function randomHex(bytes: number): string {
  if (bytes > POOL_BYTES) throw new RangeError(`randomHex serves at most ${POOL_BYTES} bytes, not ${bytes}`);
  if (used + bytes > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const hex = pool.toString('hex', used, used + bytes);
  used += bytes;
  return hex;
}
