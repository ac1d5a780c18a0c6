import { errorMessage } from '../../core/errors.ts';
import type { JournalEntry } from '../../core/journal.ts';
import { holderKey, limitOf, type SlotEntry, slotHolder, slotWaitText } from '../../core/tenant-limits.ts';
import { TERMINAL_SESSION_STATES } from '../../core/vocabulary.ts';
import { claimTenantSlot, dropTenantSlots, type FairShareDeps, leaveTenantSlot } from '../fair-share.ts';
import { post, postDepsOf } from '../protocol/post.ts';
import type { LegContext } from './leg-context.ts';
import type { LegExit } from './leg-exit.ts';

/**
 * A tenant's concurrency limit (fair sharing, issue 27 item 6). A session holds one of its
 * tenant's slots from the leg that first does work for a turn until the session leaves `running`
 * for good — idle between turns, waiting (a timer, a human, tasks: a parent waiting on its own
 * tenant's children must not hold the slot they need), or ended. A leg that finds no slot free
 * journals why (`limited`), joins the tenant's line and releases into `waiting` holding nothing;
 * the leg that frees a slot hands it to the oldest waiter and kicks it. Every write is one
 * conditional write of the tenant's item (lib/runtime/fair-share.ts).
 */

/**
 * The first recheck of a waiting session, in leases: the hand-off kick is the fast path, the
 * recheck (the session's sweepAt, so the sweeper runs it) covers a hand-off lost between the
 * slot's write and its kick. It doubles with each wait in a row, up to SLOT_RECHECK_MAX_LEASES.
 */
const SLOT_RECHECK_LEASES = 2;
/** The longest a waiting session goes between rechecks, in leases (15 min at the default 30 s). */
const SLOT_RECHECK_MAX_LEASES = 30;
/**
 * A slot held this long (in leases) may be checked against its holder's record when the tenant is
 * full: younger ones are in the hands of a live leg, or were handed over a moment ago.
 */
const STALE_SLOT_LEASES = 2;

/** The tenant's concurrency limit, when one applies (a limit and a store to keep slots in). */
export function slotLimitOf(leg: LegContext): number | undefined {
  if (!leg.deps.fairShare) return undefined;
  return limitOf(leg.deps.config.tenantLimits, leg.key.tenant)?.maxRunning;
}

/**
 * Claims the session's tenant slot before the leg's first work; undefined when it holds one (or
 * no limit applies), else the wait for one. A claim is idempotent by session: a duplicate kick, a
 * continuation or a recovery of a session that holds a slot finds it held.
 */
export async function claimSlotStep(leg: LegContext): Promise<LegExit | undefined> {
  const limit = slotLimitOf(leg);
  if (limit === undefined) return undefined;
  const { deps, key } = leg;
  const holder = slotHolder(key);
  const request = { holder, acceptedAt: leg.signals.record.createdAt, epoch: leg.signals.epoch, limit };
  let claim = await claimTenantSlot(fairShareOf(leg), key.tenant, { ...request, now: deps.clock.now() });
  if (!claim.granted && (await reclaimStaleSlots(leg, claim.running, limit))) {
    claim = await claimTenantSlot(fairShareOf(leg), key.tenant, { ...request, now: deps.clock.now() });
  }
  await handSlotsOver(leg, claim.promoted, limit);
  if (claim.granted) return undefined;
  const reason = slotWaitText(key.tenant, limit, claim.place);
  deps.telemetry.metrics.count('TenantSlotWaits');
  leg.log.info('waiting for a tenant slot', { limit, place: claim.place });
  await leg.journal.append(
    'limited',
    { limit: 'tenant-concurrency', reason, max: limit, ...(claim.place === undefined ? {} : { place: claim.place }) },
    leg.signals.record.activeTurnId ?? leg.journal.view.turnId,
  );
  // Off the line (the item was too busy to join, or the line is full): look again within a lease.
  const delay = claim.place === undefined ? deps.config.leaseTtlMs : recheckDelayMs(leg);
  return { kind: 'wait-slot', until: deps.clock.now() + delay };
}

/**
 * Frees the session's slot (or its place in line) as its leg leaves it not running, and hands
 * free slots to the oldest waiters. Best-effort after the release: a failure leaves a slot that
 * the stale check reclaims, never a session stuck.
 */
export async function freeSlot(leg: LegContext): Promise<void> {
  const limit = slotLimitOf(leg);
  if (limit === undefined) return;
  try {
    const promoted = await leaveTenantSlot(fairShareOf(leg), leg.key.tenant, {
      holder: slotHolder(leg.key),
      epoch: leg.signals.epoch,
      now: leg.deps.clock.now(),
      limit,
    });
    await handSlotsOver(leg, promoted, limit);
  } catch (error) {
    leg.log.warn('tenant slot not freed; a waiting session reclaims it', { error: errorMessage(error) });
  }
}

/**
 * Tells each session that just got a slot: a bump and a `wake` kick (post). A holder whose
 * session is gone or ended gives its slot back, to the next in line.
 */
async function handSlotsOver(leg: LegContext, promoted: readonly string[], limit: number): Promise<void> {
  let next = promoted;
  while (next.length > 0) {
    const gone: string[] = [];
    for (const holder of next) {
      const key = holderKey(leg.key.tenant, holder);
      const posted = key && (await post(postDepsOf(leg.deps), key, { kind: 'slot-granted' }));
      if (!posted?.ok) gone.push(holder);
    }
    next = await dropTenantSlots(fairShareOf(leg), leg.key.tenant, gone, { now: leg.deps.clock.now(), limit });
  }
}

/**
 * The backstop for slots whose holder left without freeing them (a crash between its release
 * and the slot's write): with the tenant full, each slot held longer than STALE_SLOT_LEASES is
 * checked against its holder's record. An ended, idle or missing session's slot is freed; a
 * waiting one is woken (a hand-off kick that was lost, or a leave that was), and its own leg
 * either runs with the slot or frees it. True when slots were freed.
 */
async function reclaimStaleSlots(
  leg: LegContext,
  running: Readonly<Record<string, SlotEntry>>,
  limit: number,
): Promise<boolean> {
  const { deps, key } = leg;
  const now = deps.clock.now();
  const staleAfter = STALE_SLOT_LEASES * deps.config.leaseTtlMs;
  const old = Object.entries(running)
    .filter(([holder, held]) => now - held.at >= staleAfter && holder !== slotHolder(key))
    .slice(0, limit);
  const ended: string[] = [];
  for (const [holder] of old) {
    const holderSession = holderKey(key.tenant, holder);
    const record = holderSession && (await deps.store.getSession(holderSession));
    if (!record || record.state === 'idle' || TERMINAL_SESSION_STATES.includes(record.state)) ended.push(holder);
    else if (record.state === 'waiting' && now - record.updatedAt >= staleAfter && holderSession)
      await post(postDepsOf(deps), holderSession, { kind: 'slot-granted' });
  }
  if (ended.length === 0) return false;
  leg.log.warn('freed tenant slots whose sessions no longer run', { holders: ended });
  const promoted = await dropTenantSlots(fairShareOf(leg), key.tenant, ended, { now, limit });
  await handSlotsOver(
    leg,
    promoted.filter((h) => h !== slotHolder(key)),
    limit,
  );
  return true;
}

/** Rechecks back off: the first after SLOT_RECHECK_LEASES, doubling with each wait in a row. */
function recheckDelayMs(leg: LegContext): number {
  const lease = leg.deps.config.leaseTtlMs;
  const waits = waitsInARow(leg.journal.entries);
  return Math.min(SLOT_RECHECK_LEASES * lease * 2 ** Math.min(waits, 10), SLOT_RECHECK_MAX_LEASES * lease);
}

/** Slot waits since the session last did anything else (leg markers between them don't count). */
function waitsInARow(entries: readonly JournalEntry[]): number {
  let waits = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] as JournalEntry;
    if (entry.kind === 'leg') continue;
    if (entry.kind !== 'limited' || entry.data.limit !== 'tenant-concurrency') break;
    waits++;
  }
  return waits;
}

const fairShareOf = (leg: LegContext): FairShareDeps => ({
  fairShare: leg.deps.fairShare!,
  ids: leg.deps.ids,
  pause: { clock: leg.deps.clock, random: leg.deps.random },
});
