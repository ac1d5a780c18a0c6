import { inject } from 'vitest';
import { MemoryBlobStore } from '../../lib/adapters/memory/memory-blob-store.ts';
import { S3BlobStore } from '../../lib/adapters/s3/s3-blob-store.ts';
import { createS3Client } from '../../lib/adapters/s3/s3-client.ts';
import { LOCAL_CREDENTIALS } from '../../lib/local/aws-clients.ts';
import { describeBlobStoreContract } from './blob-store.contract.ts';

const { endpoints, region, resources } = inject('baton');

describeBlobStoreContract('MemoryBlobStore', { blobs: new MemoryBlobStore(), refusesOverwrite: true });

describeBlobStoreContract('S3BlobStore on fauxqs', {
  blobs: new S3BlobStore({
    client: createS3Client({ region, endpoints, credentials: LOCAL_CREDENTIALS }),
    bucket: resources.bucket,
  }),
  // fauxqs ignores If-None-Match on PutObject; real S3 answers 412, which the adapter handles.
  refusesOverwrite: false,
});
