import { describe, expect, it } from 'vitest';
import { InfrastructureError, InvalidInputError, isInfrastructureError, StepError } from '../../../lib/core/errors.ts';
import { LegAborted } from '../../../lib/runtime/leg/leg-signals.ts';

/** An AWS SDK service error as the client raises it: a name and the SDK's fields. */
const sdkError = (name: string, fields: Record<string, unknown> = {}) =>
  Object.assign(new Error(`${name} from the service`), { name, $metadata: { httpStatusCode: 400 }, ...fields });

describe('isInfrastructureError', () => {
  it.each([
    ['a DynamoDB throttle', sdkError('ProvisionedThroughputExceededException')],
    ['a throttle', sdkError('ThrottlingException')],
    ['a request limit', sdkError('RequestLimitExceeded')],
    ['a 500', sdkError('InternalServerError', { $metadata: { httpStatusCode: 500 } })],
    ['a 503', sdkError('ServiceUnavailable', { $metadata: { httpStatusCode: 503 } })],
    ['a 429', sdkError('TooManyRequests', { $metadata: { httpStatusCode: 429 } })],
    ['an error the SDK marks retryable', sdkError('Whatever', { $retryable: {} })],
    ['a reset socket', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    ['a request timeout', Object.assign(new Error('timed out'), { name: 'TimeoutError' })],
    [
      'a fetch that failed on the network',
      new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }),
    ],
    ['the journal writer’s InfrastructureError', new InfrastructureError('journal append', new Error('x'))],
  ])('is true for %s', (_what, error) => {
    expect(isInfrastructureError(error)).toBe(true);
  });

  it.each([
    ['a validation error', sdkError('ValidationException')],
    ['a conditional check that failed', sdkError('ConditionalCheckFailedException')],
    ['a plain error', new Error('boom')],
    ['a model’s throttle, already the step’s', new StepError('model: ThrottlingException', { retryable: true })],
    ['invalid input', new InvalidInputError('bad')],
    ['a string', 'ThrottlingException'],
    ['an interruption', new LegAborted('cancel')],
  ])('is false for %s', (_what, error) => {
    expect(isInfrastructureError(error)).toBe(false);
  });
});
