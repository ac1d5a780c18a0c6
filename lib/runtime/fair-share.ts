import * as z from 'zod';
import type { IdSource } from '../core/ids.ts';
import {
  type Bucket,
  type ClaimRequest,
  claimSlot,
  dropSlots,
  leaveSlot,
  NO_SLOTS,
  type RateRule,
  type SlotChange,
  type SlotClaim,
  type TenantSlots,
  type TokenTake,
  takeToken,
} from '../core/tenant-limits.ts';
import type { Clock } from '../ports/clock.ts';
import type { FairShareStore } from '../ports/fair-share.ts';

/**
 * What the fair-share items mean and when they may change, written once for every adapter: each
 * operation reads the item, decides with lib/core/tenant-limits.ts, and writes it back
 * conditioned on the version it read; a writer that lost the race reads again.
 */

/** The tenant's slots item. */
export const SLOTS_ITEM = 'SLOTS';
/** A token bucket's item: one per (tenant, scope), scope `*` or a model id. */
export const bucketItem = (scope: string) => `RATE#${scope}`;

/**
 * Writers racing on one tenant's item try this many times before giving up for now, each after a
 * random pause that grows with the attempt (RACE_PAUSE_MS): a burst of a tenant's first legs (a
 * flood of tickets) all write the one item. Giving up is safe — a claim waits off the line and
 * rechecks soon, a leave leaves a slot the stale check reclaims — but slow, so the bound is high.
 */
const MAX_ATTEMPTS = 24;
/** The pause before a retry after a lost race is random in [0, RACE_PAUSE_MS × attempt). */
const RACE_PAUSE_MS = 15;
/** The slots item lives this long after its last write (a month: longer than any wait in line). */
const SLOTS_TTL_S = 30 * 86_400;
/** A bucket lives a day after its last take: a bucket idle that long is full again anyway. */
const BUCKET_TTL_S = 86_400;

const Entry = z.object({ at: z.number().finite(), epoch: z.number().int().nonnegative() });
const SlotsData = z.object({
  running: z.record(z.string(), Entry).default({}),
  waiting: z.record(z.string(), Entry).default({}),
});
const BucketData = z.object({ tokens: z.number().finite(), at: z.number().finite() });

export interface FairShareDeps {
  readonly fairShare: FairShareStore;
  readonly ids: Pick<IdSource, 'writeId'>;
  /** Pauses between attempts after a lost race (the runtime's clock and jitter); none: retry at once. */
  readonly pause?: { readonly clock: Pick<Clock, 'sleep'>; readonly random: () => number } | undefined;
}

/** Claims a slot for `holder` (see claimSlot); a claim that keeps losing races waits off the line and rechecks. */
export async function claimTenantSlot(deps: FairShareDeps, tenant: string, request: ClaimRequest): Promise<SlotClaim> {
  const claimed = await changeSlots(deps, tenant, request.now, (slots) => claimSlot(slots, request));
  return claimed ?? { granted: false, place: undefined, running: {}, promoted: [] };
}

/** Frees `holder`'s slot or place; returns the waiters that got a slot, for their kicks. */
export async function leaveTenantSlot(
  deps: FairShareDeps,
  tenant: string,
  request: {
    readonly holder: string;
    readonly epoch: number;
    readonly now: number;
    readonly limit: number | undefined;
  },
): Promise<readonly string[]> {
  return (await changeSlots(deps, tenant, request.now, (slots) => leaveSlot(slots, request))) ?? [];
}

/** Frees the slots of holders found ended (the stale check); returns the waiters that got a slot. */
export async function dropTenantSlots(
  deps: FairShareDeps,
  tenant: string,
  holders: readonly string[],
  request: { readonly now: number; readonly limit: number | undefined },
): Promise<readonly string[]> {
  if (holders.length === 0) return [];
  return (await changeSlots(deps, tenant, request.now, (slots) => dropSlots(slots, holders, request))) ?? [];
}

/** The tenant's slots as stored (status's place in line); a malformed item reads as none. */
export async function readTenantSlots(deps: FairShareDeps, tenant: string): Promise<TenantSlots> {
  const item = await deps.fairShare.get(tenant, SLOTS_ITEM);
  return parseSlots(item?.data);
}

/** Takes a token from the (tenant, scope) bucket, or says how long to wait for one. */
export async function takeModelToken(
  deps: FairShareDeps,
  tenant: string,
  scope: string,
  rule: RateRule,
  now: number,
): Promise<TokenTake> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await deps.fairShare.get(tenant, bucketItem(scope));
    const parsed = BucketData.safeParse(item?.data);
    // A malformed bucket is replaced by a full one: stored state never throttles by garbage.
    const taken = takeToken(parsed.success ? (parsed.data as Bucket) : undefined, rule, now);
    if (!taken.ok) return taken;
    const written = await deps.fairShare.put(tenant, bucketItem(scope), {
      data: { ...taken.bucket },
      expectVersion: item?.version,
      ttlSeconds: Math.ceil(now / 1_000) + BUCKET_TTL_S,
      writeId: deps.ids.writeId(),
    });
    if (written) return taken;
    await pauseAfterLostRace(deps, attempt);
  }
  // Other workers took the tokens as fast as this one read them: wait a moment, as a throttle does.
  return { ok: false, waitMs: 1_000 };
}

async function changeSlots<T>(
  deps: FairShareDeps,
  tenant: string,
  now: number,
  change: (slots: TenantSlots) => SlotChange<T>,
): Promise<T | undefined> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await deps.fairShare.get(tenant, SLOTS_ITEM);
    const changed = change(parseSlots(item?.data));
    if (!changed.changed) return changed.result;
    const written = await deps.fairShare.put(tenant, SLOTS_ITEM, {
      data: { running: changed.slots.running, waiting: changed.slots.waiting },
      expectVersion: item?.version,
      ttlSeconds: Math.ceil(now / 1_000) + SLOTS_TTL_S,
      writeId: deps.ids.writeId(),
    });
    if (written) return changed.result;
    await pauseAfterLostRace(deps, attempt);
  }
  return undefined;
}

/** Spreads writers that lost a race apart, so a burst on one item does not retry in lockstep. */
async function pauseAfterLostRace(deps: FairShareDeps, attempt: number): Promise<void> {
  if (!deps.pause) return;
  await deps.pause.clock.sleep(Math.floor(deps.pause.random() * RACE_PAUSE_MS * (attempt + 1)));
}

/**
 * Stored slots are untrusted: a malformed item reads as no slots. Nothing is lost by it — every
 * session that held or waited for a slot rechecks and claims again, in acceptance order.
 */
function parseSlots(data: unknown): TenantSlots {
  if (data === undefined) return NO_SLOTS;
  const parsed = SlotsData.safeParse(data);
  return parsed.success ? parsed.data : NO_SLOTS;
}
