import { CorruptStateError, PayloadTooLargeError } from '../core/errors.ts';
import type { BlobStore } from '../ports/blob-store.ts';
import { BlobNotFoundError } from './blob-not-found-error.ts';

/**
 * DynamoDB items hold at most 400 KB; a payload above this goes to the blob store and the item
 * keeps a pointer. The margin leaves room for the item's other attributes.
 */
export const DEFAULT_OFFLOAD_THRESHOLD_BYTES = 350_000;

/** A serialized payload as an item holds it: inline JSON text, or the key of a blob holding it. */
export type StoredPayload = { readonly inline: string } | { readonly blob: string };

export interface PayloadOffloadOptions {
  readonly blobs?: BlobStore | undefined;
  readonly thresholdBytes?: number | undefined;
}

/** Moves large serialized payloads to the blob store and follows the pointers back. */
export class PayloadOffload {
  readonly #blobs: BlobStore | undefined;
  readonly thresholdBytes: number;

  constructor(options: PayloadOffloadOptions = {}) {
    this.#blobs = options.blobs;
    this.thresholdBytes = options.thresholdBytes ?? DEFAULT_OFFLOAD_THRESHOLD_BYTES;
  }

  /**
   * Keeps `json` inline when it is small; otherwise writes it to the blob at `blobKey()` first,
   * so an item never points at a blob that does not exist yet.
   */
  async store(json: string, blobKey: () => string, what: string): Promise<StoredPayload> {
    const bytes = Buffer.byteLength(json);
    if (bytes <= this.thresholdBytes) return { inline: json };
    if (this.#blobs === undefined)
      throw new PayloadTooLargeError(`${what} (no blob store configured)`, bytes, this.thresholdBytes);
    const key = blobKey();
    await this.#blobs.put(key, json);
    return { blob: key };
  }

  /** The JSON text of a stored payload. A missing blob is corrupt state; other errors (throttles) propagate. */
  async load(stored: StoredPayload, what: string): Promise<string> {
    if ('inline' in stored) return stored.inline;
    if (this.#blobs === undefined)
      throw new CorruptStateError(`${what} points at blob ${stored.blob} but no blob store is configured`);
    try {
      return await this.#blobs.get(stored.blob);
    } catch (error) {
      if (!(error instanceof BlobNotFoundError)) throw error;
      throw new CorruptStateError(`${what} points at blob ${stored.blob}, which cannot be read`, { cause: error });
    }
  }
}

/** JSON text of a value; `undefined` (which JSON cannot hold) is stored as null. */
export const toJson = (value: unknown): string => JSON.stringify(value) ?? 'null';
