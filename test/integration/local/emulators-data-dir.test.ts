import { readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { localClients } from '../../../lib/local/aws-clients.ts';
import { startEmulators } from '../../../lib/local/emulators.ts';

describe('the emulators with a data folder', () => {
  it('keep DynamoDB Local state in a folder given by a relative path (baton dev --data ../state)', async () => {
    // Arrange: only DynamoDB Local is started here; SQS and S3 are the shared stack's.
    const { region, endpoints } = inject('baton');
    const dataDir = relative(process.cwd(), join(await mkdtemp(join(tmpdir(), 'baton-data-')), 'state'));
    const emulators = await startEmulators({
      dataDir,
      env: { AWS_REGION: region, AWS_ENDPOINT_URL_SQS: endpoints.sqs, AWS_ENDPOINT_URL_S3: endpoints.s3 },
    });
    try {
      // Act
      const { dynamodb } = localClients(emulators.endpoints, region);
      await dynamodb.send(
        new CreateTableCommand({
          TableName: 'kept',
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );

      // Assert: the database file is in the folder the relative path names, not under DynamoDB Local's home.
      expect(emulators.started.dynamodb).toBe(true);
      expect(readdirSync(join(dataDir, 'dynamodb'))).toContainEqual(expect.stringMatching(/\.db$/));
    } finally {
      await emulators.stop();
    }
  });
});
