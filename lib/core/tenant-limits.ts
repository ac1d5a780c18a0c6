import * as z from 'zod';
import type { SessionKey } from './ids.ts';

/**
 * Fair sharing between tenants (issue 27 items 6–7): how many of a tenant's sessions may run at
 * once, and how fast its model calls may go. Pure: the stores (lib/adapters/{dynamodb,memory})
 * keep one small item per tenant (slots) and per tenant and model (a token bucket) and decide
 * with these functions; the runtime (lib/runtime/leg/fair-share.ts) asks them.
 */

/** What one tenant may use. Every field is optional: an absent one is no limit. */
export const TenantLimitSchema = z
  .object({
    /** Sessions of the tenant that may run (have a turn being worked on) at once. */
    maxRunning: z.number().int().positive().optional(),
    /** Model calls per minute across all the tenant's sessions and models. */
    modelCallsPerMinute: z.number().positive().finite().optional(),
    /** Model calls per minute per model id, beside (not instead of) `modelCallsPerMinute`. */
    modelCallsPerMinuteByModel: z.record(z.string().min(1), z.number().positive().finite()).optional(),
    /** Calls a bucket may save up while idle (default: ten seconds' worth, at least 1). */
    burst: z.number().int().positive().optional(),
  })
  .strict();
export type TenantLimit = z.infer<typeof TenantLimitSchema>;

/** Tenant name → its limits; `*` applies to every tenant the map does not name. */
export const TenantLimitsSchema = z.record(z.string().min(1), TenantLimitSchema);
export type TenantLimits = z.infer<typeof TenantLimitsSchema>;

/** The key in `TenantLimits` that applies to every tenant not named. */
export const ANY_TENANT = '*';

/** The limits that apply to `tenant`: its own entry, else the `*` entry, else none. */
export function limitOf(limits: TenantLimits | undefined, tenant: string): TenantLimit | undefined {
  return limits?.[tenant] ?? limits?.[ANY_TENANT];
}

/**
 * Parses a `tenantLimits` setting (JSON text or an object) with a message that names what is
 * wrong: the tenant and the field.
 */
export function parseTenantLimits(value: unknown, where: string): TenantLimits {
  let raw = value;
  if (typeof value === 'string') {
    try {
      raw = JSON.parse(value);
    } catch (error) {
      throw new Error(`${where} is not JSON: ${(error as Error).message}`);
    }
  }
  const parsed = TenantLimitsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const why = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`${where} is invalid: ${why}`);
}

// ---------------------------------------------------------------------------------------------
// Concurrency slots

/**
 * A tenant's slots as one item holds them. `running`: holder → when it got its slot and the epoch
 * of the leg that last claimed it. `waiting`: holder → when its work was accepted (the oldest
 * acceptance gets the next free slot) and the epoch of the leg that put it in line. The epoch
 * lets a late leave of an older leg (its session since taken up by a newer leg) change nothing.
 */
export interface TenantSlots {
  readonly running: Readonly<Record<string, SlotEntry>>;
  readonly waiting: Readonly<Record<string, SlotEntry>>;
}

/** A holder's slot or place: `at` is when it got the slot (running) or when its work was accepted (waiting). */
export interface SlotEntry {
  readonly at: number;
  readonly epoch: number;
}

export const NO_SLOTS: TenantSlots = { running: {}, waiting: {} };

/**
 * Waiting places one tenant item keeps: about 80 bytes each, so the item stays far below
 * DynamoDB's 400 KB. A session past it waits off the list (a slower recheck, order not kept).
 */
export const MAX_WAITING = 2_000;

/** A slot holder's name in the tenant's item: agent and session id (the item's key has the tenant). */
export const slotHolder = (key: SessionKey): string => `${key.agent}/${key.id}`;

/** The session a holder name stands for, in `tenant`; undefined for a name that is not one (stored state is untrusted). */
export function holderKey(tenant: string, holder: string): SessionKey | undefined {
  const slash = holder.indexOf('/');
  if (slash <= 0 || slash === holder.length - 1) return undefined;
  return { tenant, agent: holder.slice(0, slash), id: holder.slice(slash + 1) };
}

/** What a claim found: the slot, or a place in line (1 = next), with the holders of the slots. */
export type SlotClaim =
  | { readonly granted: true; readonly promoted: readonly string[] }
  | {
      readonly granted: false;
      /** 1-based place among the waiting; undefined when the line is full and the claim waits off it. */
      readonly place: number | undefined;
      readonly running: Readonly<Record<string, SlotEntry>>;
      readonly promoted: readonly string[];
    };

/** A change of a tenant's slots: the new state and its result. */
export interface SlotChange<T> {
  readonly slots: TenantSlots;
  readonly result: T;
  /** False when nothing changed (no write needed). */
  readonly changed: boolean;
}

/** Who claims: the session's holder name, when its work was accepted, and the claiming leg's epoch. */
export interface ClaimRequest {
  readonly holder: string;
  readonly acceptedAt: number;
  readonly epoch: number;
  readonly now: number;
  readonly limit: number;
}

/**
 * Claims a slot for `holder`. One it holds already is confirmed (a duplicate kick, a recovery, a
 * continuation), stamped with this leg's epoch; otherwise it joins the line at its acceptance
 * time and free slots go to the line in order, so a new claim never passes an older waiter (a
 * limit raised while some waited serves them first). Promoted holders other than the claimant
 * are returned for their kick.
 */
export function claimSlot(slots: TenantSlots, request: ClaimRequest): SlotChange<SlotClaim> {
  const { holder, acceptedAt, epoch, now, limit } = request;
  const held = slots.running[holder];
  if (held !== undefined) {
    if (held.epoch >= epoch) return { slots, result: { granted: true, promoted: [] }, changed: false };
    const running = { ...slots.running, [holder]: { at: held.at, epoch } };
    return { slots: { ...slots, running }, result: { granted: true, promoted: [] }, changed: true };
  }
  const waiting = { ...slots.waiting };
  const listed = waiting[holder];
  const fits = listed !== undefined || Object.keys(waiting).length < MAX_WAITING;
  if (fits) waiting[holder] = { at: listed?.at ?? acceptedAt, epoch: Math.max(epoch, listed?.epoch ?? 0) };
  const promoted = promote({ running: slots.running, waiting }, limit, now);
  const granted = promoted.slots.running[holder] !== undefined;
  const others = promoted.result.filter((h) => h !== holder);
  if (granted) return { slots: promoted.slots, result: { granted: true, promoted: others }, changed: true };
  const place = fits ? lineOf(promoted.slots).indexOf(holder) + 1 : undefined;
  return {
    slots: promoted.slots,
    result: { granted: false, place, running: promoted.slots.running, promoted: others },
    changed: promoted.changed || listed?.epoch !== waiting[holder]?.epoch,
  };
}

/**
 * Frees `holder`'s slot, or its place in line (a cancelled waiter), as its leg of `epoch` leaves
 * the session not running, and gives free slots to the oldest waiters. A slot or place a newer
 * leg has claimed since is that leg's and stays. Leaving twice is no error.
 */
export function leaveSlot(
  slots: TenantSlots,
  request: {
    readonly holder: string;
    readonly epoch: number;
    readonly now: number;
    readonly limit: number | undefined;
  },
): SlotChange<readonly string[]> {
  const { holder, epoch } = request;
  const mine = (entry: SlotEntry | undefined) => entry !== undefined && entry.epoch <= epoch;
  const drop = mine(slots.running[holder]) || mine(slots.waiting[holder]) ? [holder] : [];
  return dropSlots(slots, drop, request);
}

/** Frees the slots and places of `holders` (ended sessions found holding one), then promotes. */
export function dropSlots(
  slots: TenantSlots,
  holders: readonly string[],
  request: { readonly now: number; readonly limit: number | undefined },
): SlotChange<readonly string[]> {
  const running = { ...slots.running };
  const waiting = { ...slots.waiting };
  let changed = false;
  for (const holder of holders) {
    if (running[holder] !== undefined || waiting[holder] !== undefined) changed = true;
    delete running[holder];
    delete waiting[holder];
  }
  const promoted = promote({ running, waiting }, request.limit ?? Number.POSITIVE_INFINITY, request.now);
  return { slots: promoted.slots, result: promoted.result, changed: changed || promoted.changed };
}

/** The waiting holders, oldest acceptance first (ties by name, so every reader agrees). */
export function lineOf(slots: TenantSlots): string[] {
  return Object.entries(slots.waiting)
    .sort(([a, x], [b, y]) => x.at - y.at || (a < b ? -1 : a > b ? 1 : 0))
    .map(([holder]) => holder);
}

/** Moves the oldest waiters into free slots while there is room under `limit` (a lowered limit frees none). */
function promote(slots: TenantSlots, limit: number, now: number): SlotChange<readonly string[]> {
  const room = limit - Object.keys(slots.running).length;
  if (room <= 0) return { slots, result: [], changed: false };
  const chosen = lineOf(slots).slice(0, room);
  if (chosen.length === 0) return { slots, result: [], changed: false };
  const running = { ...slots.running };
  const waiting = { ...slots.waiting };
  for (const holder of chosen) {
    running[holder] = { at: now, epoch: waiting[holder]?.epoch ?? 0 };
    delete waiting[holder];
  }
  return { slots: { running, waiting }, result: chosen, changed: true };
}

/** The sentence status and the journal use for a session waiting for a slot. */
export function slotWaitText(tenant: string, limit: number, place: number | undefined): string {
  const where = place === undefined ? '' : ` (place ${place} in line)`;
  return `waiting for a tenant slot: tenant ${tenant} runs at most ${limit} sessions at once${where}`;
}

// ---------------------------------------------------------------------------------------------
// Model call rate: a token bucket per (tenant, model scope)

/** A bucket as its item holds it: tokens left at time `at` (epoch ms). */
export interface Bucket {
  readonly tokens: number;
  readonly at: number;
}

/** The rule a bucket refills by. */
export interface RateRule {
  readonly perMinute: number;
  readonly burst: number;
}

/** A call either takes a token now, or may try again after `waitMs`. */
export type TokenTake =
  | { readonly ok: true; readonly bucket: Bucket }
  | { readonly ok: false; readonly waitMs: number };

/** The default burst: ten seconds' worth of calls, at least one. */
export const defaultBurst = (perMinute: number): number => Math.max(1, Math.ceil(perMinute / 6));

/**
 * Takes one token from `bucket` (absent: a full one) refilled to `now` at `rule`. A clock behind
 * the bucket's (another worker's skew) refills nothing rather than draining it.
 */
export function takeToken(bucket: Bucket | undefined, rule: RateRule, now: number): TokenTake {
  const perMs = rule.perMinute / 60_000;
  const last = bucket ?? { tokens: rule.burst, at: now };
  const tokens = Math.min(rule.burst, last.tokens + Math.max(0, now - last.at) * perMs);
  if (tokens >= 1) return { ok: true, bucket: { tokens: tokens - 1, at: Math.max(now, last.at) } };
  return { ok: false, waitMs: Math.max(1, Math.ceil((1 - tokens) / perMs)) };
}

/** The buckets a model call of `tenant` on `model` takes a token from, with their rules. */
export function rateScopes(
  limit: TenantLimit | undefined,
  model: string,
): { readonly scope: string; readonly rule: RateRule }[] {
  if (!limit) return [];
  const scopes: { scope: string; rule: RateRule }[] = [];
  const rule = (perMinute: number) => ({ perMinute, burst: limit.burst ?? defaultBurst(perMinute) });
  if (limit.modelCallsPerMinute !== undefined) scopes.push({ scope: '*', rule: rule(limit.modelCallsPerMinute) });
  const perModel = limit.modelCallsPerMinuteByModel?.[model];
  if (perModel !== undefined) scopes.push({ scope: model, rule: rule(perModel) });
  return scopes;
}

/** The sentence the journal and status use for a model call held back by a rate limit. */
export function rateWaitText(tenant: string, scope: string, rule: RateRule, waitMs: number): string {
  const what = scope === '*' ? 'model calls' : `calls to ${scope}`;
  return `model call rate limit reached: tenant ${tenant} may make ${rule.perMinute} ${what} a minute; waiting ${Math.ceil(waitMs / 1_000)} s`;
}
