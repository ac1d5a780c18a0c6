import { errorMessage } from '../../core/errors.ts';
import { ttlSeconds } from '../deps.ts';
import type { LegContext } from './leg-context.ts';

/**
 * Every item of a session expires a retention after it was written, so a conversation in use for
 * longer would lose its first entries. Once half a retention has passed since the items' expiry
 * last moved (or since the session began), the holder moves it forward for all of them: a read of
 * the partition's keys and one small write per item, about twice a retention. Best-effort: a
 * failure is logged and the next leg tries again.
 */
export async function refreshItemExpiry(leg: LegContext): Promise<void> {
  const { deps, key } = leg;
  const record = leg.signals.record;
  const now = deps.clock.now();
  const halfRetentionMs = (deps.config.retentionDays * 24 * 3600 * 1000) / 2;
  if (now - (record.expiryRefreshedAt ?? record.createdAt) < halfRetentionMs) return;
  try {
    const moved = await deps.store.refreshExpiry(key, { ttlSeconds: ttlSeconds(deps.config, now), now });
    leg.log.info('moved the expiry of the session’s items forward', { items: moved });
  } catch (error) {
    leg.log.warn('item expiry not moved; the next leg tries again', { error: errorMessage(error) });
  }
}
