/**
 * Fair sharing's stored state (lib/core/tenant-limits.ts): small versioned items per tenant, read
 * and written by every worker. Two primitives, as the idempotency layer of Powertools keeps its
 * adapters small: what an item means (slots, a token bucket) and when it may change is decided
 * once, in lib/runtime/fair-share.ts, not in each adapter.
 */
export interface FairShareStore {
  /** The item `name` of `tenant` (consistent read), or undefined when there is none. */
  get(tenant: string, name: string): Promise<VersionedItem | undefined>;
  /**
   * Writes the item if it is still at `expectVersion` (undefined: still absent), stamping version
   * `expectVersion + 1`; false when another writer got there first (nothing written).
   */
  put(tenant: string, name: string, write: FairShareWrite): Promise<boolean>;
}

/** An item as read: its data (untrusted: the caller validates it) and its version. */
export interface VersionedItem {
  readonly data: unknown;
  readonly version: number;
}

export interface FairShareWrite {
  readonly data: Readonly<Record<string, unknown>>;
  readonly expectVersion: number | undefined;
  /** When the table's TTL may delete the item (epoch s). */
  readonly ttlSeconds: number;
  /**
   * Unique per write: an SDK retry of a write whose first attempt committed fails its condition,
   * and the adapter recognises its own write by this id (it succeeded).
   */
  readonly writeId: string;
}
