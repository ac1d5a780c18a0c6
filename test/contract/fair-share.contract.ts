import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FairShareStore } from '../../lib/ports/fair-share.ts';
import {
  claimTenantSlot,
  leaveTenantSlot,
  readTenantSlots,
  SLOTS_ITEM,
  takeModelToken,
} from '../../lib/runtime/fair-share.ts';

const NOW = 1_700_000_000_000;
const newTenant = () => `contract-${randomUUID()}`;
let writes = 0;
const ids = { writeId: () => `w-${randomUUID()}-${++writes}` };
const write = (data: Record<string, unknown>, expectVersion: number | undefined, writeId = ids.writeId()) => ({
  data,
  expectVersion,
  ttlSeconds: Math.ceil(NOW / 1_000) + 3_600,
  writeId,
});
const claim = (holder: string, acceptedAt: number, limit = 2, epoch = 1) => ({
  holder,
  acceptedAt,
  epoch,
  now: NOW,
  limit,
});

/**
 * The FairShareStore contract: every implementation (the in-memory twin, DynamoDB) must pass it.
 * Its two primitives — a consistent read and a write conditioned on the version read — and the
 * slots and buckets built on them (lib/runtime/fair-share.ts): a tenant never has more slots
 * taken than its limit however many claim at once, free slots go to the oldest acceptance, a
 * late leave of an older leg frees nothing, tenants never share an item.
 */
export function describeFairShareContract(name: string, store: () => FairShareStore) {
  describe(`FairShareStore contract: ${name}`, () => {
    it('writes an absent item only while it is absent, then only at the version read', async () => {
      const items = store();
      const tenant = newTenant();
      expect(await items.get(tenant, SLOTS_ITEM)).toBeUndefined();
      expect(await items.put(tenant, SLOTS_ITEM, write({ n: 1 }, undefined))).toBe(true);
      expect(await items.put(tenant, SLOTS_ITEM, write({ n: 2 }, undefined))).toBe(false);
      expect(await items.get(tenant, SLOTS_ITEM)).toEqual({ data: { n: 1 }, version: 1 });
      expect(await items.put(tenant, SLOTS_ITEM, write({ n: 3 }, 0))).toBe(false);
      expect(await items.put(tenant, SLOTS_ITEM, write({ n: 4 }, 1))).toBe(true);
      expect(await items.get(tenant, SLOTS_ITEM)).toEqual({ data: { n: 4 }, version: 2 });
    });

    it('recognises its own write sent again (an SDK retry of a write that committed) as success', async () => {
      const items = store();
      const tenant = newTenant();
      const once = write({ n: 1 }, undefined, 'retried-write');
      expect(await items.put(tenant, SLOTS_ITEM, once)).toBe(true);
      expect(await items.put(tenant, SLOTS_ITEM, once)).toBe(true);
      expect(await items.put(tenant, SLOTS_ITEM, write({ n: 2 }, undefined))).toBe(false);
      expect(await items.get(tenant, SLOTS_ITEM)).toEqual({ data: { n: 1 }, version: 1 });
    });

    it('keeps tenants and item names apart', async () => {
      const items = store();
      const [one, two] = [newTenant(), newTenant()];
      await items.put(one, SLOTS_ITEM, write({ who: 'one' }, undefined));
      expect(await items.get(two, SLOTS_ITEM)).toBeUndefined();
      expect(await items.get(one, 'RATE#*')).toBeUndefined();
    });

    it('grants slots up to the limit and puts the rest in line in order of acceptance', async () => {
      const deps = { fairShare: store(), ids };
      const tenant = newTenant();
      expect((await claimTenantSlot(deps, tenant, claim('a/1', 10))).granted).toBe(true);
      expect((await claimTenantSlot(deps, tenant, claim('a/2', 20))).granted).toBe(true);
      const late = await claimTenantSlot(deps, tenant, claim('a/4', 40));
      const early = await claimTenantSlot(deps, tenant, claim('a/3', 30));
      expect(late).toMatchObject({ granted: false, place: 1 });
      expect(early).toMatchObject({ granted: false, place: 1 });
      // The later acceptance is now behind the earlier one, whichever claimed first.
      expect(await claimTenantSlot(deps, tenant, claim('a/4', 40))).toMatchObject({ granted: false, place: 2 });
      // A holder claiming again (a duplicate kick, a continuation) keeps its slot.
      expect((await claimTenantSlot(deps, tenant, claim('a/1', 10, 2, 2))).granted).toBe(true);
    });

    it('hands a freed slot to the oldest waiter, and a late leave of an older leg frees nothing', async () => {
      const deps = { fairShare: store(), ids };
      const tenant = newTenant();
      await claimTenantSlot(deps, tenant, claim('a/1', 10, 1, 1));
      await claimTenantSlot(deps, tenant, claim('a/3', 30, 1));
      await claimTenantSlot(deps, tenant, claim('a/2', 20, 1));
      // The session a/1 was taken up by a newer leg (epoch 2) before its older leg's leave landed.
      await claimTenantSlot(deps, tenant, claim('a/1', 10, 1, 2));
      expect(await leaveTenantSlot(deps, tenant, { holder: 'a/1', epoch: 1, now: NOW, limit: 1 })).toEqual([]);
      expect(await leaveTenantSlot(deps, tenant, { holder: 'a/1', epoch: 2, now: NOW, limit: 1 })).toEqual(['a/2']);
      expect(await leaveTenantSlot(deps, tenant, { holder: 'a/1', epoch: 2, now: NOW, limit: 1 })).toEqual([]);
      const slots = await readTenantSlots(deps, tenant);
      expect(Object.keys(slots.running)).toEqual(['a/2']);
      expect(Object.keys(slots.waiting)).toEqual(['a/3']);
    });

    it('never has more slots taken than the limit when many claim at once', async () => {
      const deps = { fairShare: store(), ids };
      const tenant = newTenant();
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) => claimTenantSlot(deps, tenant, claim(`a/${i}`, i, 3))),
      );
      const slots = await readTenantSlots(deps, tenant);
      expect(Object.keys(slots.running).length).toBeLessThanOrEqual(3);
      // Every claim that says granted holds a slot, and no slot is held by a claim told to wait.
      const granted = claims.flatMap((c, i) => (c.granted ? [`a/${i}`] : []));
      expect(Object.keys(slots.running).sort()).toEqual(granted.sort());
      expect(granted.length).toBeGreaterThan(0);
    });

    it('reads a malformed slots item as no slots, never trusting it', async () => {
      const items = store();
      const tenant = newTenant();
      await items.put(tenant, SLOTS_ITEM, write({ running: { 'a/1': 'yesterday' } }, undefined));
      expect(await readTenantSlots({ fairShare: items, ids }, tenant)).toEqual({ running: {}, waiting: {} });
    });

    it('takes tokens up to the burst, then says how long until the next, refilled by time', async () => {
      const deps = { fairShare: store(), ids };
      const tenant = newTenant();
      const rule = { perMinute: 60, burst: 2 };
      expect((await takeModelToken(deps, tenant, '*', rule, NOW)).ok).toBe(true);
      expect((await takeModelToken(deps, tenant, '*', rule, NOW)).ok).toBe(true);
      expect(await takeModelToken(deps, tenant, '*', rule, NOW)).toEqual({ ok: false, waitMs: 1_000 });
      // Another scope of the same tenant has a bucket of its own.
      expect((await takeModelToken(deps, tenant, 'model-x', rule, NOW)).ok).toBe(true);
      expect((await takeModelToken(deps, tenant, '*', rule, NOW + 1_000)).ok).toBe(true);
    });

    it('never hands out more tokens than the bucket holds when many take at once', async () => {
      const deps = { fairShare: store(), ids };
      const tenant = newTenant();
      const rule = { perMinute: 1, burst: 3 };
      const taken = await Promise.all(Array.from({ length: 8 }, () => takeModelToken(deps, tenant, '*', rule, NOW)));
      expect(taken.filter((t) => t.ok).length).toBeLessThanOrEqual(3);
      expect(taken.filter((t) => t.ok).length).toBeGreaterThan(0);
    });
  });
}
