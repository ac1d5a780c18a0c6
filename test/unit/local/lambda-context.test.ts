import { describe, expect, it } from 'vitest';
import { withAwsTraceHeaderShim } from '../../../lib/local/aws-trace-header-shim.ts';
import { createLambdaContext } from '../../../lib/local/lambda-context.ts';
import { reachableQueueUrl } from '../../../lib/local/provision.ts';

describe('createLambdaContext', () => {
  it('counts the remaining time down to start + timeout, and never below zero', () => {
    // Arrange
    let now = 1_000_000;
    const context = createLambdaContext({
      functionName: 'step',
      region: 'eu-west-1',
      timeoutS: 10,
      now: () => now,
    });

    // Act
    const atStart = context.getRemainingTimeInMillis();
    now += 4_000;
    const later = context.getRemainingTimeInMillis();
    now += 60_000;
    const overrun = context.getRemainingTimeInMillis();

    // Assert
    expect([atStart, later, overrun]).toEqual([10_000, 6_000, 0]);
    expect(context.invokedFunctionArn).toBe('arn:aws:lambda:eu-west-1:000000000000:function:step');
  });
});

describe('withAwsTraceHeaderShim', () => {
  it('copies the AWSTraceHeader system attribute into a message attribute and keeps the others', () => {
    // Act
    const entry = withAwsTraceHeaderShim({
      MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' } },
      MessageAttributes: { traceparent: { DataType: 'String', StringValue: '00-x' } },
    });

    // Assert
    expect(entry.MessageAttributes).toEqual({
      traceparent: { DataType: 'String', StringValue: '00-x' },
      AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' },
    });
  });

  it('leaves a message without a trace header untouched', () => {
    const entry = { MessageAttributes: { a: { DataType: 'String', StringValue: 'v' } } };
    expect(withAwsTraceHeaderShim(entry)).toBe(entry);
  });
});

describe('reachableQueueUrl', () => {
  it('moves a fauxqs *.localhost queue URL onto the endpoint', () => {
    expect(reachableQueueUrl('http://sqs.us-east-1.localhost:4566/000000000000/work', 'http://127.0.0.1:4566')).toBe(
      'http://127.0.0.1:4566/000000000000/work',
    );
  });

  it('leaves a resolvable queue URL alone', () => {
    const url = 'https://sqs.us-east-1.amazonaws.com/123456789012/work';
    expect(reachableQueueUrl(url, 'http://127.0.0.1:4566')).toBe(url);
  });
});
