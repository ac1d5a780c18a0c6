import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BlobNotFoundError } from '../../lib/adapters/blob-not-found-error.ts';
import { BlobTooLargeError } from '../../lib/core/errors.ts';
import type { BlobStore } from '../../lib/ports/blob-store.ts';

export interface BlobStoreHarness {
  readonly blobs: BlobStore;
  /** False where the backend ignores `If-None-Match` (fauxqs): the overwrite test is skipped there. */
  readonly refusesOverwrite: boolean;
}

const ONE_MB = 1024 * 1024;
const newKey = () => `contract/${randomUUID()}/J1-e1-w1.json`;

/** The BlobStore contract: bodies round-trip byte for byte, a missing key is BlobNotFoundError, keys are written once. */
export function describeBlobStoreContract(name: string, harness: BlobStoreHarness): void {
  describe(`BlobStore contract: ${name}`, () => {
    const { blobs } = harness;

    it('returns what was put, byte for byte, for a 1 MB body with multi-byte characters', async () => {
      // Arrange
      const key = newKey();
      const body = JSON.stringify({ text: 'é✓🚀'.repeat(ONE_MB / 8) });

      // Act
      await blobs.put(key, body);
      const read = await blobs.get(key);

      // Assert
      expect(read).toBe(body);
    });

    it('refuses to read a body larger than the caller allows, before reading it', async () => {
      // Arrange
      const key = newKey();
      await blobs.put(key, 'x'.repeat(2_000));

      // Act
      const read = blobs.get(key, { maxBytes: 1_000 });

      // Assert
      await expect(read).rejects.toThrow(BlobTooLargeError);
      await expect(read).rejects.toThrow(/blob .* is 2000 bytes, more than the 1000 allowed/);
      expect(await blobs.get(key, { maxBytes: 2_000 })).toHaveLength(2_000);
    });

    it('throws BlobNotFoundError for a key that holds nothing', async () => {
      await expect(blobs.get(newKey())).rejects.toThrow(BlobNotFoundError);
    });

    it('accepts the same body put twice under one key, as a retried put does', async () => {
      // Arrange
      const key = newKey();
      await blobs.put(key, '{"a":1}');

      // Act
      await blobs.put(key, '{"a":1}');

      // Assert
      expect(await blobs.get(key)).toBe('{"a":1}');
    });

    it.skipIf(!harness.refusesOverwrite)('refuses to overwrite a key with a different body', async () => {
      // Arrange
      const key = newKey();
      await blobs.put(key, '{"owner":"first"}');

      // Act
      const overwrite = blobs.put(key, '{"owner":"stale"}');

      // Assert
      await expect(overwrite).rejects.toThrow(/never overwritten/);
      expect(await blobs.get(key)).toBe('{"owner":"first"}');
    });
  });
}
