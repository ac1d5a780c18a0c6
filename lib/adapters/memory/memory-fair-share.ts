import type { FairShareStore, FairShareWrite, VersionedItem } from '../../ports/fair-share.ts';

/** The in-memory twin of the fair-share items (unit tests, the simulator); passes the same contract. */
export class MemoryFairShare implements FairShareStore {
  readonly #items = new Map<string, { data: unknown; version: number; ttlSeconds: number }>();

  async get(tenant: string, name: string): Promise<VersionedItem | undefined> {
    const item = this.#items.get(keyOf(tenant, name));
    // A copy: a caller that changes what it read changes nothing stored.
    return item && { data: structuredClone(item.data), version: item.version };
  }

  async put(tenant: string, name: string, write: FairShareWrite): Promise<boolean> {
    const key = keyOf(tenant, name);
    if (this.#items.get(key)?.version !== write.expectVersion) return false;
    this.#items.set(key, {
      data: structuredClone(write.data),
      version: (write.expectVersion ?? 0) + 1,
      ttlSeconds: write.ttlSeconds,
    });
    return true;
  }

  /** Every item's name and expiry (tests: every item carries one). */
  expiries(): { key: string; ttlSeconds: number }[] {
    return [...this.#items].map(([key, item]) => ({ key, ttlSeconds: item.ttlSeconds }));
  }
}

const keyOf = (tenant: string, name: string) => JSON.stringify([tenant, name]);
