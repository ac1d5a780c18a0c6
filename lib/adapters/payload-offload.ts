import { type ContentDigest, contentDigest, isKeyUnder, matchesDigest } from '../core/content-digest.ts';
import { BlobTooLargeError, CorruptStateError, PayloadTooLargeError } from '../core/errors.ts';
import type { BlobStore } from '../ports/blob-store.ts';
import { BlobNotFoundError } from './blob-not-found-error.ts';

/**
 * DynamoDB items hold at most 400 KB; a payload above this goes to the blob store and the item
 * keeps a pointer. The margin leaves room for the item's other attributes.
 */
export const DEFAULT_OFFLOAD_THRESHOLD_BYTES = 350_000;

/**
 * The largest blob a pointer may declare. Payloads are capped by the agent's `maxPayloadBytes`
 * (8 MiB by default) before they are stored; this bounds what a tampered pointer can make a
 * reader load.
 */
export const DEFAULT_MAX_BLOB_BYTES = 64 * 1024 * 1024;

/** A blob key ends with its payload's size and SHA-256, so the pointer itself carries the digest. */
const DIGEST_SUFFIX = /-(\d+)-([0-9a-f]{64})\.json$/;

/** A serialized payload as an item holds it: inline JSON text, or the key of a blob holding it. */
export type StoredPayload = { readonly inline: string } | { readonly blob: string };

export interface PayloadOffloadOptions {
  readonly blobs?: BlobStore | undefined;
  readonly thresholdBytes?: number | undefined;
  readonly maxBlobBytes?: number | undefined;
}

/** Moves large serialized payloads to the blob store and follows the pointers back. */
export class PayloadOffload {
  readonly #blobs: BlobStore | undefined;
  readonly thresholdBytes: number;
  readonly #maxBlobBytes: number;

  constructor(options: PayloadOffloadOptions = {}) {
    this.#blobs = options.blobs;
    this.thresholdBytes = options.thresholdBytes ?? DEFAULT_OFFLOAD_THRESHOLD_BYTES;
    this.#maxBlobBytes = options.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES;
  }

  /**
   * Keeps `json` inline when it is small; otherwise writes it first to the blob at `blobStem()`
   * followed by its size and hash, so an item never points at a blob that does not exist yet and
   * its pointer says what the blob must hold.
   */
  async store(json: string, blobStem: () => string, what: string): Promise<StoredPayload> {
    const bytes = Buffer.byteLength(json);
    if (bytes <= this.thresholdBytes) return { inline: json };
    if (this.#blobs === undefined)
      throw new PayloadTooLargeError(`${what} (no blob store configured)`, bytes, this.thresholdBytes);
    const digest = contentDigest(json);
    const key = `${blobStem()}-${digest.bytes}-${digest.sha256}.json`;
    await this.#blobs.put(key, json);
    return { blob: key };
  }

  /**
   * The JSON text of a stored payload. A pointer is untrusted: it must stay under `scope` (its
   * session's prefix), carry a digest, and the blob must match it; the body is read only when the
   * blob is no larger than the pointer declares. Any of these failing, or a missing blob, is
   * corrupt state; other errors (throttles) propagate.
   */
  async load(stored: StoredPayload, what: string, scope: string): Promise<string> {
    if ('inline' in stored) return stored.inline;
    const key = stored.blob;
    const refuse = (why: string, cause?: unknown) =>
      new CorruptStateError(`${what} points at blob ${key}, ${why}`, cause === undefined ? undefined : { cause });
    if (!isKeyUnder(key, scope)) throw refuse(`outside its session (${scope}/)`);
    const digest = digestOf(key);
    if (digest === undefined) throw refuse('which carries no content hash');
    if (digest.bytes > this.#maxBlobBytes)
      throw refuse(`which declares ${digest.bytes} bytes, over the ${this.#maxBlobBytes}-byte limit`);
    if (this.#blobs === undefined) throw refuse('but no blob store is configured');
    let text: string;
    try {
      text = await this.#blobs.get(key, { maxBytes: digest.bytes });
    } catch (error) {
      if (error instanceof BlobTooLargeError)
        throw refuse(`which is larger than the ${digest.bytes} bytes its pointer declares`, error);
      if (error instanceof BlobNotFoundError) throw refuse('which cannot be read', error);
      throw error;
    }
    if (!matchesDigest(text, digest)) throw refuse('which does not match the content hash its pointer carries');
    return text;
  }
}

/** JSON text of a value; `undefined` (which JSON cannot hold) is stored as null. */
export const toJson = (value: unknown): string => JSON.stringify(value) ?? 'null';

/** The digest a blob key carries at its end, if it carries one. */
function digestOf(key: string): ContentDigest | undefined {
  const match = DIGEST_SUFFIX.exec(key);
  return match?.[1] && match[2] ? { bytes: Number(match[1]), sha256: match[2] } : undefined;
}
