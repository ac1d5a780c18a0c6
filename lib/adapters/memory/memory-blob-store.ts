import { BatonError, BlobTooLargeError } from '../../core/errors.ts';
import type { BlobReadOptions, BlobStore } from '../../ports/blob-store.ts';
import { BlobNotFoundError } from '../blob-not-found-error.ts';

/**
 * The blob store in memory, with S3BlobStore's semantics: a key is written once; putting the
 * same body again (a retried put) succeeds, a different body is refused; a missing key throws
 * BlobNotFoundError.
 */
export class MemoryBlobStore implements BlobStore {
  readonly #objects = new Map<string, string>();

  async put(key: string, body: string): Promise<void> {
    const existing = this.#objects.get(key);
    if (existing !== undefined && existing !== body) {
      throw new BatonError(`blob ${key} already exists with a different body; blobs are never overwritten`);
    }
    this.#objects.set(key, body);
  }

  async get(key: string, options: BlobReadOptions = {}): Promise<string> {
    const body = this.#objects.get(key);
    if (body === undefined) throw new BlobNotFoundError(key);
    const bytes = Buffer.byteLength(body);
    if (options.maxBytes !== undefined && bytes > options.maxBytes)
      throw new BlobTooLargeError(key, bytes, options.maxBytes);
    return body;
  }

  /** Every key written so far, in write order. */
  keys(): string[] {
    return [...this.#objects.keys()];
  }

  /** Replaces a blob's body behind the store's back (for tests of corrupt or tampered state). */
  tamper(key: string, body: string | undefined): void {
    if (body === undefined) this.#objects.delete(key);
    else this.#objects.set(key, body);
  }
}
