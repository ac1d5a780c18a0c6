/** Large payloads (over the item limit) live here; keys are never overwritten by another owner. */
export interface BlobStore {
  put(key: string, body: string): Promise<void>;
  get(key: string): Promise<string>;
}
