import type { S3Client } from '@aws-sdk/client-s3';
import { BatonError, BlobTooLargeError } from '../../core/errors.ts';
import type { BlobReadOptions, BlobStore } from '../../ports/blob-store.ts';
import { BlobNotFoundError } from '../blob-not-found-error.ts';
import { loadS3Sdk } from './s3-sdk.ts';

export interface S3BlobStoreOptions {
  /**
   * The client, or how to build it at the first put or get: only payloads over ~350 KB go to S3,
   * so most legs never need the S3 SDK, the largest the runtime uses (see loadS3Client).
   */
  readonly client: S3Client | (() => Promise<S3Client>);
  readonly bucket: string;
}

const HTTP_PRECONDITION_FAILED = 412;
const HTTP_NOT_FOUND = 404;

/**
 * Large payloads in S3. Encryption is the bucket's default (SSE). Objects are never overwritten:
 * puts carry `If-None-Match: *`, and a put refused because the key exists succeeds only when the
 * object holds the same body — our own retried put — and fails otherwise.
 * @example new S3BlobStore({ client: () => loadS3Client({ region }), bucket })
 */
export class S3BlobStore implements BlobStore {
  #client: Promise<S3Client> | undefined;

  constructor(private readonly options: S3BlobStoreOptions) {}

  #sdkClient(): Promise<S3Client> {
    const { client } = this.options;
    this.#client ??= typeof client === 'function' ? client() : Promise.resolve(client);
    return this.#client;
  }

  async put(key: string, body: string): Promise<void> {
    const [sdk, client] = await Promise.all([loadS3Sdk(), this.#sdkClient()]);
    try {
      await client.send(
        new sdk.PutObjectCommand({
          Bucket: this.options.bucket,
          Key: key,
          Body: body,
          ContentType: 'application/json',
          IfNoneMatch: '*',
        }),
      );
    } catch (error) {
      if (httpStatusOf(error) !== HTTP_PRECONDITION_FAILED) {
        throw error;
      }
      if ((await this.get(key)) !== body) {
        throw new BatonError(`blob ${key} already exists with a different body; blobs are never overwritten`);
      }
    }
  }

  async get(key: string, options: BlobReadOptions = {}): Promise<string> {
    const [sdk, client] = await Promise.all([loadS3Sdk(), this.#sdkClient()]);
    try {
      const { Body, ContentLength } = await client.send(
        new sdk.GetObjectCommand({ Bucket: this.options.bucket, Key: key }),
      );
      if (Body === undefined) throw new BlobNotFoundError(key);
      if (options.maxBytes !== undefined && (ContentLength ?? Number.POSITIVE_INFINITY) > options.maxBytes) {
        // Only the headers were read: the body is dropped unread.
        (Body as { destroy?: () => void }).destroy?.();
        throw new BlobTooLargeError(key, ContentLength ?? Number.NaN, options.maxBytes);
      }
      return await Body.transformToString('utf-8');
    } catch (error) {
      if ((error as Error | undefined)?.name === 'NoSuchKey' || httpStatusOf(error) === HTTP_NOT_FOUND) {
        throw new BlobNotFoundError(key, { cause: error });
      }
      throw error;
    }
  }
}

/** The HTTP status of an S3 service error (the SDK's exceptions carry `$metadata`); undefined for anything else. */
function httpStatusOf(error: unknown): number | undefined {
  const { $fault, $metadata } = (error ?? {}) as { $fault?: unknown; $metadata?: { httpStatusCode?: number } };
  return $fault === 'client' || $fault === 'server' ? $metadata?.httpStatusCode : undefined;
}
