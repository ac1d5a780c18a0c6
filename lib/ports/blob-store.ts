export interface BlobReadOptions {
  /** Refuse (BlobTooLargeError) a blob larger than this, before reading its body. */
  readonly maxBytes?: number | undefined;
}

/** Large payloads (over the item limit) live here; keys are never overwritten by another owner. */
export interface BlobStore {
  put(key: string, body: string): Promise<void>;
  get(key: string, options?: BlobReadOptions): Promise<string>;
}
