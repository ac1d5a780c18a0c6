import { NoSuchKey, type PutObjectCommand, type S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { BlobNotFoundError } from '../../../lib/adapters/blob-not-found-error.ts';
import { S3BlobStore } from '../../../lib/adapters/s3/s3-blob-store.ts';

const preconditionFailed = () =>
  new S3ServiceException({ name: 'PreconditionFailed', $fault: 'client', $metadata: { httpStatusCode: 412 } });

/** An S3 stand-in holding one object, answering as S3 does to a conditional put on an existing key. */
function fakeS3(existing: Record<string, string>) {
  const puts: PutObjectCommand['input'][] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: { Key: string; Body?: string } }) => {
      const { Key } = command.input;
      if (command.constructor.name === 'PutObjectCommand') {
        puts.push(command.input as PutObjectCommand['input']);
        if (existing[Key] !== undefined) throw preconditionFailed();
        existing[Key] = String(command.input.Body);
        return {};
      }
      const body = existing[Key];
      if (body === undefined) throw new NoSuchKey({ message: 'no such key', $metadata: { httpStatusCode: 404 } });
      return { Body: { transformToString: async () => body } };
    },
  } as unknown as S3Client;
  return { client, puts };
}

describe('S3BlobStore', () => {
  it('puts with If-None-Match so S3 never overwrites a blob', async () => {
    // Arrange
    const { client, puts } = fakeS3({});

    // Act
    await new S3BlobStore({ client, bucket: 'b' }).put('k', 'body');

    // Assert
    expect(puts[0]).toMatchObject({ Bucket: 'b', Key: 'k', Body: 'body', IfNoneMatch: '*' });
  });

  it('treats a refused put as its own when the existing object holds the same body (a retried put)', async () => {
    const { client } = fakeS3({ k: 'body' });

    await expect(new S3BlobStore({ client, bucket: 'b' }).put('k', 'body')).resolves.toBeUndefined();
  });

  it('fails a refused put when the existing object holds another body', async () => {
    const { client } = fakeS3({ k: 'first' });

    await expect(new S3BlobStore({ client, bucket: 'b' }).put('k', 'second')).rejects.toThrow(/never overwritten/);
  });

  it('turns S3’s NoSuchKey into BlobNotFoundError', async () => {
    const { client } = fakeS3({});

    await expect(new S3BlobStore({ client, bucket: 'b' }).get('missing')).rejects.toThrow(BlobNotFoundError);
  });
});
