import { describe, expect, it } from 'vitest';
import { EmulatorStartError, javaMajorVersion, startEmulators } from '../../../lib/local/emulators.ts';

describe('startEmulators', () => {
  it('uses the services named by AWS_ENDPOINT_URL_* and starts none of its own', async () => {
    // Arrange
    const env = {
      AWS_ENDPOINT_URL_DYNAMODB: 'http://dynamodb.test:8000',
      AWS_ENDPOINT_URL_SQS: 'http://sqs.test:4566',
      AWS_ENDPOINT_URL_S3: 'http://s3.test:4566',
      AWS_REGION: 'eu-west-3',
    };

    // Act
    const emulators = await startEmulators({ env });
    await emulators.stop();

    // Assert
    expect(emulators.endpoints).toEqual({
      dynamodb: 'http://dynamodb.test:8000',
      sqs: 'http://sqs.test:4566',
      s3: 'http://s3.test:4566',
    });
    expect(emulators.started).toEqual({ dynamodb: false, sqs: false, s3: false });
    expect(emulators.region).toBe('eu-west-3');
  });

  it('falls back to AWS_ENDPOINT_URL for every service without its own variable', async () => {
    // Act
    const emulators = await startEmulators({ env: { AWS_ENDPOINT_URL: 'http://localstack.test:4566' } });
    await emulators.stop();

    // Assert
    expect(new Set(Object.values(emulators.endpoints))).toEqual(new Set(['http://localstack.test:4566']));
  });
});

describe('javaMajorVersion', () => {
  it('explains that DynamoDB Local needs Java 17+ when no java is found', () => {
    // Act
    const attempt = () => javaMajorVersion('baton-test-no-such-java');

    // Assert
    expect(attempt).toThrow(EmulatorStartError);
    expect(attempt).toThrow(/needs Java 17\+.*not found/);
  });
});
