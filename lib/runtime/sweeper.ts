import { formatSessionKey } from '../core/ids.ts';
import { SWEEP_SHARDS } from '../ports/session-store.ts';
import type { RuntimeDeps } from './deps.ts';

export type SweeperDeps = Pick<RuntimeDeps, 'store' | 'workQueue' | 'clock' | 'telemetry'>;

export interface SweepOptions {
  /** How long one scheduled invocation keeps polling (schedules fire at most once a minute). */
  readonly windowMs: number;
  readonly intervalMs: number;
  /** A session overdue by more than this is counted as stalled (the health alarm's gauge). */
  readonly stalledAfterMs: number;
  readonly remainingMs: () => number;
  readonly signal?: AbortSignal | undefined;
  /** A session kicked once is kicked again only after this, doubling each time (default stalledAfterMs / 2). */
  readonly rekickAfterMs?: number | undefined;
}

/** Index entries per shard query (due first, then those due within the window); a backlog drains over successive polls. */
const SWEEP_PAGE = 100;
/** Stop polling this long before the invocation's deadline. */
const SWEEP_RESERVE_MS = 2_000;
/** The re-kick gap doubles up to this many times its first value. */
const MAX_REKICK_BACKOFF = 8;

/**
 * Finds sessions whose lease expired while work is pending (or whose wake-up is due) and kicks
 * them, polling every few seconds within the window — but only while there is something to
 * watch: each poll reads every entry of the sweep index that comes due before the window ends
 * (a live lease, a pending kick, a timer), and a poll that finds none ends the invocation. A
 * deployment with nothing in flight thus pays one poll a minute, not a minute of polling.
 *
 * Recovery after a crash takes about lease TTL + the poll interval while the sweeper is polling,
 * which it is whenever a lease was live at a poll. A lease taken after a poll found the index
 * empty is first seen by the next scheduled invocation, within a schedule period of that poll:
 * its owner's crash is then recovered within max(TTL + interval, period) of the acquire. The SQS
 * visibility timeout is only the backstop.
 */
export async function sweep(
  options: SweepOptions,
  deps: SweeperDeps,
): Promise<{ polls: number; kicked: number; idle: boolean }> {
  const started = deps.clock.now();
  // The last poll of this invocation is at most this late: an entry due after it is the next invocation's.
  const horizon = started + options.windowMs;
  let polls = 0;
  let idle = false;
  let kicked = 0;
  // A session stays due until a kick is acquired. When kicks wait in a backed-up queue, kicking
  // every due session on every poll floods the queue with duplicates that starve the real work:
  // a session already kicked is kicked again only after a gap that doubles.
  const firstGapMs = options.rekickAfterMs ?? options.stalledAfterMs / 2;
  let kickedBefore = new Map<string, { at: number; gapMs: number }>();
  while (!options.signal?.aborted) {
    const now = deps.clock.now();
    let stalled = 0;
    const seen = new Map<string, { at: number; gapMs: number }>();
    let watched = 0;
    let kickedThisPoll = 0;
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      // Oldest first: the due sessions head the page, and the stalled ones are counted from it.
      const page = await deps.store.findDue(shard, Math.max(now, horizon), SWEEP_PAGE);
      watched += page.length;
      const due = page.filter((d) => d.sweepAt < now);
      stalled += due.filter((d) => d.sweepAt < now - options.stalledAfterMs).length;
      for (const { key } of due) {
        const id = formatSessionKey(key);
        const last = kickedBefore.get(id);
        if (last && now - last.at < last.gapMs) {
          seen.set(id, last);
          continue;
        }
        seen.set(id, { at: now, gapMs: last ? Math.min(last.gapMs * 2, firstGapMs * MAX_REKICK_BACKOFF) : firstGapMs });
        await deps.workQueue.sendKick({ v: 1, session: key, reason: 'recovery' });
        kickedThisPoll++;
      }
    }
    // A session that left the due set (acquired, finished) starts afresh when it is due again.
    kickedBefore = seen;
    kicked += kickedThisPoll;
    polls++;
    deps.telemetry.metrics.count('StalledSessions', stalled);
    // This poll's figures, not the invocation's running total: a log line per poll that repeated
    // an earlier kick read as a session kicked every interval.
    if (kickedThisPoll > 0 || stalled > 0) deps.telemetry.logger.info('sweep', { kicked: kickedThisPoll, stalled });
    // Nothing leased, pending or due within the window: the next scheduled invocation looks again.
    if (watched === 0) {
      idle = true;
      break;
    }
    const elapsed = deps.clock.now() - started;
    if (
      elapsed + options.intervalMs >= options.windowMs ||
      options.remainingMs() < options.intervalMs + SWEEP_RESERVE_MS
    )
      break;
    await deps.clock.sleep(options.intervalMs, options.signal).catch(() => undefined);
  }
  return { polls, kicked, idle };
}
