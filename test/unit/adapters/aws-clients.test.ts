import { describe, expect, it } from 'vitest';
import { createDocumentClient } from '../../../lib/adapters/aws-clients.ts';
import { createS3Client } from '../../../lib/adapters/s3/s3-client.ts';

describe('AWS client factories', () => {
  it('uses path-style S3 URLs when an endpoint is set, and virtual-hosted ones otherwise', () => {
    const local = createS3Client({ region: 'eu-west-1', endpoints: { s3: 'http://127.0.0.1:4566' } });
    const cloud = createS3Client({ region: 'eu-west-1' });

    expect(local.config.forcePathStyle).toBe(true);
    expect(cloud.config.forcePathStyle).toBe(false);
  });

  it('drops undefined values from documents instead of refusing them', () => {
    const documents = createDocumentClient({ region: 'eu-west-1', maxAttempts: 5 });

    expect(documents.config.translateConfig?.marshallOptions?.removeUndefinedValues).toBe(true);
  });
});
