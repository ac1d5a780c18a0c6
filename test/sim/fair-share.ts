import type { MemoryFairShare } from '../../lib/adapters/memory/memory-fair-share.ts';
import type { MemorySessionStore } from '../../lib/adapters/memory/memory-session-store.ts';
import type { JournalEntry } from '../../lib/core/journal.ts';
import { slotHolder, type TenantLimits, type TenantSlots } from '../../lib/core/tenant-limits.ts';
import type { FairShareStore } from '../../lib/ports/fair-share.ts';
import { readTenantSlots, SLOTS_ITEM } from '../../lib/runtime/fair-share.ts';
import { STEP_KINDS } from '../../lib/runtime/leg/journal-writer.ts';
import type { Facts } from './facts.ts';
import { underFault } from './ports.ts';
import type { Rng } from './rng.ts';
import type { Scheduler } from './scheduler.ts';

/**
 * Fair sharing in the simulator: some seeds' tenant runs at most one or two sessions at once, and
 * some rate-limits its model calls (a rate slow enough that a call waits past the leg, or one
 * that a leg sleeps out). The fair-share store sits behind gates like every port, with the same
 * SDK-shaped faults, and every step the memory store journals is checked against the tenant's
 * slots at the moment it is written.
 */

/** A seed's tenant limits (every planned session is tenant `default`); undefined for most seeds, as before. */
export function drawTenantLimits(rng: Rng): TenantLimits | undefined {
  if (!rng.chance(0.5)) return undefined;
  const maxRunning = rng.chance(0.8) ? rng.int(1, 2) : undefined;
  const rate = rng.weighted<'none' | 'slow' | 'brisk'>([
    ['none', 2],
    // One call a minute: most calls wait out of the leg, holding no lease.
    ['slow', 1],
    // One a second: a wait is short enough to sleep in the leg.
    ['brisk', 1],
  ]);
  const modelCallsPerMinute = rate === 'slow' ? 1 : rate === 'brisk' ? 60 : undefined;
  if (maxRunning === undefined && modelCallsPerMinute === undefined) return { default: { maxRunning: 1 } };
  return {
    default: {
      ...(maxRunning === undefined ? {} : { maxRunning }),
      ...(modelCallsPerMinute === undefined ? {} : { modelCallsPerMinute, burst: 1 }),
    },
  };
}

/** The fair-share store behind a gate per call, as gatedStore does for the session store. */
export function gatedFairShare(real: FairShareStore, sim: Scheduler): FairShareStore {
  return {
    get: async (tenant, name) => {
      const fault = await sim.gate(`fair.get(${name})`, 'read');
      return underFault(fault, () => real.get(tenant, name));
    },
    put: async (tenant, name, write) => {
      const fault = await sim.gate(`fair.put(${name} v${write.expectVersion ?? 0})`, 'write');
      return underFault(fault, () => real.put(tenant, name, write));
    },
  };
}

/**
 * `tenant-limit-held`: a step is journaled only by a session that holds one of its tenant's
 * slots, and a tenant never has more slots taken than its limit — so no more than the limit of
 * its sessions do work at once, as the store sees it. Checked inside the journal write itself.
 */
export function watchSteps(
  memory: MemorySessionStore,
  slots: MemoryFairShare,
  limits: TenantLimits | undefined,
  facts: Facts,
): void {
  const append = memory.append.bind(memory);
  memory.append = async (key, entry, ttlSeconds) => {
    // Only a write that lands counts: a stale owner's append that collides did no work.
    await append(key, entry, ttlSeconds);
    const max = limits?.[key.tenant]?.maxRunning;
    if (max !== undefined && isWork(entry)) {
      const held = await readTenantSlots({ fairShare: slots, ids: { writeId: () => 'peek' } }, key.tenant);
      const running = Object.keys(held.running).length;
      if (held.running[slotHolder(key)] === undefined)
        facts.violate('tenant-limit-held', `${key.id}: journaled ${entry.kind} #${entry.seq} holding no tenant slot`);
      if (running > max)
        facts.violate('tenant-limit-held', `tenant ${key.tenant}: ${running} slots taken, limit ${max}`);
    }
  };
}

/**
 * A step the session did: an operator's verdict journaled by the inbox step is a human's word
 * delivered (as a message is), not work, and needs no slot.
 */
function isWork(entry: JournalEntry): boolean {
  if (entry.kind === 'reconciled' && entry.data.id !== undefined) return false;
  return STEP_KINDS.has(entry.kind);
}

/** The tenant's slots as stored, read without a gate (the invariants). */
export async function slotsNow(slots: MemoryFairShare, tenant: string): Promise<TenantSlots | undefined> {
  return (await slots.get(tenant, SLOTS_ITEM)) === undefined
    ? undefined
    : readTenantSlots({ fairShare: slots, ids: { writeId: () => 'peek' } }, tenant);
}
