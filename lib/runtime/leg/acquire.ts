import { NewerRecordFormatError } from '../../core/errors.ts';
import { leaseUntil, planAcquire } from '../../core/lease.ts';
import type { Kick } from '../../core/messages.ts';
import type { KickReason } from '../../core/vocabulary.ts';
import type { SessionRecord } from '../../ports/session-store.ts';
import { type RuntimeDeps, type RuntimeLogger, ttlSeconds } from '../deps.ts';
import { newerFormatDelayMs } from '../protocol/newer-format.ts';
import type { Invocation } from './invocation.ts';
import type { KickOutcome } from './leg-context.ts';

/** How many times a kick plans its acquire again when the record moved under the write. */
const ACQUIRE_ATTEMPTS = 3;

/** A lease taken for a kick: the record before and after the acquire, and the new owner's id. */
export interface Acquired {
  readonly before: SessionRecord;
  readonly record: SessionRecord;
  readonly recovery: boolean;
  readonly owner: string;
}

/**
 * The acquire protocol: a kick early for its time is re-sent; otherwise read the record, plan
 * with the pure `planAcquire`, and compare-and-set the epoch, planning again (a bounded number of
 * times) when the record moved under the write. Returns the lease, or how the kick ended.
 */
export async function acquireForKick(
  kick: Kick,
  invocation: Invocation,
  deps: RuntimeDeps,
  log: RuntimeLogger,
): Promise<Acquired | KickOutcome> {
  try {
    return await acquire(kick, invocation, deps, log);
  } catch (error) {
    if (!(error instanceof NewerRecordFormatError)) throw error;
    // A newer build's record: take nothing, and come back after a lease TTL, when the newer
    // workers of a rolling deploy have it (the sweeper is the backstop, as for a newer journal).
    deps.telemetry.metrics.count('NewerJournalFormat');
    log.warn('session record written by a newer build: left to a newer worker', { what: error.what });
    await deps.workQueue.sendKick(kick, { notBefore: deps.clock.now() + newerFormatDelayMs(deps.config) });
    return 'delayed';
  }
}

async function acquire(
  kick: Kick,
  invocation: Invocation,
  deps: RuntimeDeps,
  log: RuntimeLogger,
): Promise<Acquired | KickOutcome> {
  const key = kick.session;
  const now = deps.clock.now();
  if (kick.notBefore !== undefined && kick.notBefore > now) return delayAgain(kick, kick.notBefore, now, deps, log);

  await deps.failpoint('before-acquire');
  let record = await deps.store.getSession(key);
  const owner = deps.ids.ownerId(invocation.requestId);
  for (let attempt = 1; ; attempt++) {
    if (!record) {
      log.warn('kick for a session that does not exist; dropped');
      deps.telemetry.metrics.count('DuplicateKicksDropped');
      return 'dropped';
    }
    const now = deps.clock.now();
    const plan = planAcquire(record, kick, now);
    if (plan.kind === 'drop' && plan.why === 'wrong-handoff') {
      // Only the holder knows its nonce: this continuation was forged (or tampered with).
      log.warn('continuation without its hand-off nonce refused; the holder keeps the lease', {
        epoch: record.epoch,
        owner: record.owner,
      });
      deps.telemetry.metrics.count('ForgedKicksRefused');
      return 'dropped';
    }
    if (plan.kind === 'drop') {
      log.debug('kick dropped', { why: plan.why, epoch: record.epoch });
      deps.telemetry.metrics.count('DuplicateKicksDropped');
      return 'dropped';
    }
    const acquired = await deps.store.acquire(key, {
      owner,
      until: leaseUntil(record, now, deps.config.leaseTtlMs),
      now,
      expectEpoch: record.epoch,
      expectOwner: plan.expectOwner,
      recovery: plan.recovery,
      ttlSeconds: ttlSeconds(deps.config, now),
    });
    if (acquired.ok) return { before: record, record: acquired.record, recovery: plan.recovery, owner };
    // The record moved under the write — most often a predecessor releasing just as its
    // continuation arrived. Plan again from what the write found.
    if (attempt >= ACQUIRE_ATTEMPTS) {
      log.debug('lost the acquire race; dropped', { epoch: record.epoch });
      deps.telemetry.metrics.count('LeaseConflicts');
      return 'dropped';
    }
    record = acquired.current;
  }
}

/**
 * The furthest ahead a kick's `notBefore` may lie. Chained kicks carry a retry's wake-up time,
 * which a session's retention (30 days by default) bounds; anything later is forged or stale.
 */
export const MAX_NOT_BEFORE_MS = 30 * 24 * 3600 * 1000;

/**
 * A kick early for its time is sent again, delayed, but only when the session waits for exactly
 * that time (its sweepAt): a forged far-future kick would otherwise circle every 15 minutes for
 * ever without touching the store. Dropping one costs nothing: the sweeper wakes a due session.
 */
async function delayAgain(
  kick: Kick,
  notBefore: number,
  now: number,
  deps: RuntimeDeps,
  log: RuntimeLogger,
): Promise<KickOutcome> {
  const drop = (why: string) => {
    log.warn(`delayed kick ${why}; dropped`, { notBefore });
    deps.telemetry.metrics.count('DuplicateKicksDropped');
    return 'dropped' as const;
  };
  if (notBefore - now > MAX_NOT_BEFORE_MS) return drop(`due more than ${MAX_NOT_BEFORE_MS / 86_400_000} days ahead`);
  const record = await deps.store.getSession(kick.session);
  if (!record) return drop('for a session that does not exist');
  if (record.state !== 'waiting' || record.sweepAt !== notBefore)
    return drop('for a session that does not wait for that time');
  await deps.workQueue.sendKick(kick, { notBefore });
  return 'delayed';
}

/**
 * Why the leg really started, for its marker: only a taken-over expired lease is a recovery; a
 * sweeper kick or a late first kick that finds a free lease is a wake-up.
 */
export function legReason(kick: Kick, acquired: Acquired): KickReason {
  if (acquired.recovery) return 'recovery';
  if (kick.reason === 'recovery' || (kick.reason === 'first' && acquired.before.legs > 0)) return 'wake';
  return kick.reason;
}
