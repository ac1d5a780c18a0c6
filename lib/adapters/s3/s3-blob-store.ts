import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { BatonError, BlobTooLargeError } from '../../core/errors.ts';
import type { BlobReadOptions, BlobStore } from '../../ports/blob-store.ts';
import { BlobNotFoundError } from '../blob-not-found-error.ts';

export interface S3BlobStoreOptions {
  readonly client: S3Client;
  readonly bucket: string;
}

const HTTP_PRECONDITION_FAILED = 412;
const HTTP_NOT_FOUND = 404;

/**
 * Large payloads in S3. Encryption is the bucket's default (SSE). Objects are never overwritten:
 * puts carry `If-None-Match: *`, and a put refused because the key exists succeeds only when the
 * object holds the same body — our own retried put — and fails otherwise.
 * @example new S3BlobStore({ client: createS3Client({ region }), bucket })
 */
export class S3BlobStore implements BlobStore {
  constructor(private readonly options: S3BlobStoreOptions) {}

  async put(key: string, body: string): Promise<void> {
    try {
      await this.options.client.send(
        new PutObjectCommand({
          Bucket: this.options.bucket,
          Key: key,
          Body: body,
          ContentType: 'application/json',
          IfNoneMatch: '*',
        }),
      );
    } catch (error) {
      if (!(error instanceof S3ServiceException && error.$metadata.httpStatusCode === HTTP_PRECONDITION_FAILED)) {
        throw error;
      }
      if ((await this.get(key)) !== body) {
        throw new BatonError(`blob ${key} already exists with a different body; blobs are never overwritten`);
      }
    }
  }

  async get(key: string, options: BlobReadOptions = {}): Promise<string> {
    try {
      const { Body, ContentLength } = await this.options.client.send(
        new GetObjectCommand({ Bucket: this.options.bucket, Key: key }),
      );
      if (Body === undefined) throw new BlobNotFoundError(key);
      if (options.maxBytes !== undefined && (ContentLength ?? Number.POSITIVE_INFINITY) > options.maxBytes) {
        // Only the headers were read: the body is dropped unread.
        (Body as { destroy?: () => void }).destroy?.();
        throw new BlobTooLargeError(key, ContentLength ?? Number.NaN, options.maxBytes);
      }
      return await Body.transformToString('utf-8');
    } catch (error) {
      if (error instanceof NoSuchKey) throw new BlobNotFoundError(key, { cause: error });
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === HTTP_NOT_FOUND) {
        throw new BlobNotFoundError(key, { cause: error });
      }
      throw error;
    }
  }
}
