import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { localClients } from '../../../lib/local/aws-clients.ts';
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

describe('the in-process fauxqs', () => {
  it('gives back a message a long poll took after its client had gone (a worker stopped or killed mid-poll)', async () => {
    // Arrange: fauxqs alone (DynamoDB named elsewhere), a queue with a long visibility timeout.
    const emulators = await startEmulators({ env: { AWS_ENDPOINT_URL_DYNAMODB: 'http://dynamodb.test:8000' } });
    const { sqs } = localClients(emulators.endpoints, emulators.region);
    try {
      const { QueueUrl } = await sqs.send(
        new CreateQueueCommand({ QueueName: 'abandoned', Attributes: { VisibilityTimeout: '300' } }),
      );
      // A worker's long poll, cut off as a reload (SIGTERM) or a kill -9 cuts it.
      const cut = new AbortController();
      const poll = sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 20 }), {
        abortSignal: cut.signal,
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      cut.abort();
      await poll.catch(() => undefined);

      // Act: a ticket arrives; the next worker polls.
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'ticket' }));
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 3 }));

      // Assert: it has the ticket now, not after the 300 s the poll nobody reads would hold it.
      expect(Messages.map((m) => m.Body)).toEqual(['ticket']);
    } finally {
      sqs.destroy();
      await emulators.stop();
    }
  }, 15_000);
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
