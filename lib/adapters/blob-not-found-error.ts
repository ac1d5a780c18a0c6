import { BatonError } from '../core/errors.ts';

/** A blob key that holds nothing. Deterministic (blob stores are strongly consistent): never retried. */
export class BlobNotFoundError extends BatonError {
  constructor(
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(`blob ${key} does not exist`, { ...options, retryable: false });
    this.name = 'BlobNotFoundError';
  }
}
