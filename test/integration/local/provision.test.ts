import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { HeadBucketCommand } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { SESSION_TABLE, visibilityTimeoutSeconds } from '../../../lib/core/resources.ts';
import { localClients } from '../../../lib/local/aws-clients.ts';
import { provisionResources } from '../../../lib/local/provision.ts';

const { endpoints, region, resources } = inject('baton');

describe('provisionResources', () => {
  it('creates the session table with its indexes and TTL on the ttl attribute', async () => {
    // Arrange
    const { dynamodb } = localClients(endpoints, region);

    // Act
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: resources.table }));
    const ttl = await dynamodb.send(new DescribeTimeToLiveCommand({ TableName: resources.table }));

    // Assert
    expect(Table?.GlobalSecondaryIndexes?.map((index) => index.IndexName).sort()).toEqual([
      'bySessionId',
      'byTenant',
      'sweep',
    ]);
    const byTenant = Table?.GlobalSecondaryIndexes?.find((index) => index.IndexName === 'byTenant');
    expect(byTenant?.Projection?.NonKeyAttributes?.sort()).toEqual(
      [...SESSION_TABLE.indexes.byTenant.nonKeyAttributes].sort(),
    );
    expect(ttl.TimeToLiveDescription?.AttributeName).toBe(SESSION_TABLE.ttlAttribute);
  });

  it('gives consumed queues a DLQ redrive and a visibility timeout derived from the function timeout', async () => {
    // Arrange
    const { sqs } = localClients(endpoints, region);

    // Act
    const { queues } = await provisionResources(endpoints, { prefix: 'prov-a', functionTimeoutS: 7, region });
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queues.work.url, AttributeNames: ['All'] }),
    );

    // Assert
    expect(Attributes?.VisibilityTimeout).toBe(String(visibilityTimeoutSeconds(7)));
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toEqual({
      deadLetterTargetArn: queues.workDlq.arn,
      maxReceiveCount: 5,
    });
  });

  it('reuses what exists and applies new overrides when run twice with one prefix', async () => {
    // Arrange
    const { sqs, s3 } = localClients(endpoints, region);
    const first = await provisionResources(endpoints, { prefix: 'prov-b', functionTimeoutS: 7, region });

    // Act
    const second = await provisionResources(endpoints, {
      prefix: 'prov-b',
      functionTimeoutS: 7,
      region,
      visibilityTimeoutS: 2,
      maxReceiveCount: 2,
    });
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: second.queues.tickets.url, AttributeNames: ['All'] }),
    );

    // Assert
    expect(second).toEqual(first);
    expect(Attributes?.VisibilityTimeout).toBe('2');
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}').maxReceiveCount).toBe(2);
    await expect(s3.send(new HeadBucketCommand({ Bucket: second.bucket }))).resolves.toBeDefined();
  });
});
