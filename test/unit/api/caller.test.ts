import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/api/api-errors.ts';
import { devCallerResolver, iamCallerResolver, roleArnOf } from '../../../lib/api/caller.ts';
import { matchPath } from '../../../lib/api/route.ts';
import { functionUrlRegion } from '../../../lib/client/sigv4-fetch.ts';

const event = (userArn?: string, headers: Record<string, string> = {}) =>
  ({
    headers,
    requestContext: userArn === undefined ? {} : { authorizer: { iam: { userArn } } },
  }) as unknown as LambdaFunctionURLEvent;

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof ApiError ? error.code : String(error);
  }
  return 'no error';
};

describe('who is calling the API', () => {
  const resolve = iamCallerResolver({
    'arn:aws:iam::111122223333:role/Support': ['acme', 'globex'],
    'arn:aws:iam::111122223333:user/ops': '*',
  });

  it('maps an assumed-role session to its role’s tenants, and a user to its own', () => {
    const support = resolve(event('arn:aws:sts::111122223333:assumed-role/Support/alice'));
    const ops = resolve(event('arn:aws:iam::111122223333:user/ops'));

    expect(support.tenants).toEqual(['acme', 'globex']);
    expect(ops.tenants).toBe('all');
    expect(roleArnOf('arn:aws-cn:sts::111122223333:assumed-role/R/s')).toBe('arn:aws-cn:iam::111122223333:role/R');
  });

  it('refuses a principal that is not in the map, and a request that carries none', () => {
    expect(codeOf(() => resolve(event('arn:aws:sts::111122223333:assumed-role/Other/bob')))).toBe('forbidden');
    expect(codeOf(() => resolve(event()))).toBe('unauthenticated');
  });

  it('reads the local caller’s tenants from its header, every tenant without one, and refuses a bad name', () => {
    const dev = devCallerResolver();

    expect(dev(event(undefined, { 'x-baton-tenants': 'acme, globex' })).tenants).toEqual(['acme', 'globex']);
    expect(dev(event()).tenants).toBe('all');
    expect(codeOf(() => dev(event(undefined, { 'x-baton-tenants': 'a#b' })))).toBe('invalid_request');
  });
});

describe('routing and addresses', () => {
  it('matches path templates segment by segment, decoding parameters', () => {
    expect(matchPath('/sessions/{id}/cancel', '/sessions/abc%20d/cancel')).toEqual({ id: 'abc d' });
    expect(matchPath('/sessions/{id}', '/sessions/abc/cancel')).toBeUndefined();
    expect(matchPath('/sessions/{id}', '/sessions/')).toBeUndefined();
    expect(matchPath('/sessions', '/sessions')).toEqual({});
  });

  it('recognises a Lambda function URL and its region, and nothing else', () => {
    expect(functionUrlRegion('https://abcdef123.lambda-url.eu-west-1.on.aws/')).toBe('eu-west-1');
    expect(functionUrlRegion('http://127.0.0.1:7717/api')).toBeUndefined();
  });
});
