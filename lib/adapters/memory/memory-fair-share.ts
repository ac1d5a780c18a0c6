import type { FairShareStore, FairShareWrite, VersionedItem } from '../../ports/fair-share.ts';

/** The in-memory twin of the fair-share items (unit tests, the simulator); passes the same contract. */
export class MemoryFairShare implements FairShareStore {
  readonly #items = new Map<string, { data: unknown; version: number; ttlSeconds: number; writeId: string }>();

  async get(tenant: string, name: string): Promise<VersionedItem | undefined> {
    const item = this.#items.get(keyOf(tenant, name));
    // A copy: a caller that changes what it read changes nothing stored.
    return item && { data: structuredClone(item.data), version: item.version };
  }

  async put(tenant: string, name: string, write: FairShareWrite): Promise<boolean> {
    const key = keyOf(tenant, name);
    const old = this.#items.get(key);
    // A retried write that committed the first time is recognised as ours, as DynamoDB's adapter does.
    if (old?.version !== write.expectVersion) return old?.writeId === write.writeId;
    this.#items.set(key, {
      data: structuredClone(write.data),
      version: (write.expectVersion ?? 0) + 1,
      ttlSeconds: write.ttlSeconds,
      writeId: write.writeId,
    });
    return true;
  }

  /** Every item's name and expiry (tests: every item carries one). */
  expiries(): { key: string; ttlSeconds: number }[] {
    return [...this.#items].map(([key, item]) => ({ key, ttlSeconds: item.ttlSeconds }));
  }
}

const keyOf = (tenant: string, name: string) => JSON.stringify([tenant, name]);
