import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { failedMessageIds } from '../../../lib/local/event-source-mapping.ts';
import { md5OfAttributes, toSqsRecord } from '../../../lib/local/sqs-event-record.ts';

const source = { queueArn: 'arn:aws:sqs:us-east-1:000000000000:work', region: 'us-east-1' };

const message = {
  MessageId: 'm-1',
  ReceiptHandle: 'r-1',
  Body: 'hello',
  MD5OfBody: '5d41402abc4b2a76b9719d911017c592',
  Attributes: {
    ApproximateReceiveCount: '3',
    SentTimestamp: '1700000000000',
    SenderId: '000000000000',
    ApproximateFirstReceiveTimestamp: '1700000000100',
  },
};

describe('toSqsRecord', () => {
  it('moves the AWSTraceHeader shim attribute into record.attributes and drops its MD5', () => {
    // Arrange
    const shimmed = {
      ...message,
      MessageAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' } },
      MD5OfMessageAttributes: 'md5-with-the-shim',
    };

    // Act
    const record = toSqsRecord(shimmed, source);

    // Assert
    expect(record.attributes.AWSTraceHeader).toBe('Root=1-abc');
    expect(record.messageAttributes).toEqual({});
    expect(record).not.toHaveProperty('md5OfMessageAttributes');
  });

  it('recomputes the attributes MD5 for what is left once the shim is removed', () => {
    // Arrange
    const shimmed = {
      ...message,
      MessageAttributes: {
        AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' },
        a: { DataType: 'String', StringValue: 'v' },
      },
      MD5OfMessageAttributes: 'md5-with-the-shim',
    };

    // Act
    const record = toSqsRecord(shimmed, source);

    // Assert
    expect(record.md5OfMessageAttributes).toBe(md5OfAttributes({ a: { DataType: 'String', StringValue: 'v' } }));
  });

  it('encodes binary attribute values in base64 and always lists the reserved list values', () => {
    // Arrange
    const binary = { ...message, MessageAttributes: { blob: { DataType: 'Binary', BinaryValue: Buffer.from('hi') } } };

    // Act
    const record = toSqsRecord(binary, source);

    // Assert
    expect(record.messageAttributes.blob).toEqual({
      binaryValue: 'aGk=',
      stringListValues: [],
      binaryListValues: [],
      dataType: 'Binary',
    });
  });

  it('names the queue and region as Lambda does', () => {
    // Act
    const record = toSqsRecord(message, source);

    // Assert
    expect(record).toMatchObject({ eventSource: 'aws:sqs', eventSourceARN: source.queueArn, awsRegion: 'us-east-1' });
    expect(record.attributes.ApproximateReceiveCount).toBe('3');
  });
});

describe('md5OfAttributes', () => {
  it('matches the MD5 SQS (here fauxqs) reports for the same attributes', () => {
    // Act
    const md5 = md5OfAttributes({ a: { DataType: 'String', StringValue: 'v' } });

    // Assert
    expect(md5).toBe('a18cbb58171ebf4ce88d9fb787f9210b');
  });
});

describe('failedMessageIds', () => {
  const event = { Records: [{ messageId: 'a' }, { messageId: 'b' }] } as SQSEvent;

  it.each([
    ['no response', undefined],
    ['null', null],
    ['an empty object', {}],
    ['an empty list', { batchItemFailures: [] }],
  ])('treats %s as full success', (_, response) => {
    expect(failedMessageIds(response, event)).toEqual(new Set());
  });

  it('returns the reported ids', () => {
    expect(failedMessageIds({ batchItemFailures: [{ itemIdentifier: 'b' }] }, event)).toEqual(new Set(['b']));
  });

  it.each([
    ['an unknown id', { batchItemFailures: [{ itemIdentifier: 'zzz' }] }],
    ['an empty id', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a missing id', { batchItemFailures: [{ id: 'a' }] }],
    ['a non-list', { batchItemFailures: 'a' }],
    ['a string response', 'ok'],
  ])('fails the whole batch on %s, as Lambda does', (_, response) => {
    expect(failedMessageIds(response, event)).toBe('all');
  });
});
