import { errorMessage } from '../../core/errors.ts';
import { itemTtlSeconds } from '../deps.ts';
import { itemsNeedRefresh, retentionSeconds } from '../expiry.ts';
import type { LegContext } from './leg-context.ts';

/**
 * Keeps every item of the session living at least as long as its record, whose expiry this leg
 * moves (its acquire did, its release will): once the record's would come near its items' floor,
 * moves all of them forward (a read of the partition's keys, one small write per item) and the
 * floor with them; see lib/runtime/expiry.ts for why this is rare. Best-effort: a failure is
 * logged and the next leg tries again, within the slack the rule leaves.
 */
export async function refreshItemExpiry(leg: LegContext): Promise<void> {
  const { deps, key } = leg;
  const now = deps.clock.now();
  const retentionS = retentionSeconds(deps.config.retentionDays);
  if (!itemsNeedRefresh(leg.signals.record, retentionS, now)) return;
  try {
    const ttlSeconds = itemTtlSeconds(deps.config, now);
    // A fork's history is its origins' items: they move with its own (lib/runtime/fork.ts), origins first.
    const origins = leg.signals.record.forkedFrom?.chain ?? [];
    let moved = 0;
    for (const origin of [...origins, key])
      moved += await deps.store.refreshExpiry(origin, { ttlSeconds, now, retentionS });
    leg.log.info('moved the expiry of the session’s items forward', { items: moved, origins: origins.length });
  } catch (error) {
    leg.log.warn('item expiry not moved; the next leg tries again', { error: errorMessage(error) });
  }
}
