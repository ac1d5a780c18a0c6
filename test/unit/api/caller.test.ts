import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/api/api-errors.ts';
import { granteeOf, iamCallerResolver, roleArnOf } from '../../../lib/api/caller.ts';
import { matchPath } from '../../../lib/api/route.ts';
import { functionUrlRegion } from '../../../lib/client/sigv4-fetch.ts';
import { ALL_ROLES } from '../../../lib/core/roles.ts';
import { localCallers } from '../../../lib/local/local-callers.ts';

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
    'arn:aws:iam::111122223333:role/Approvers': { tenants: ['acme'], roles: ['read', 'approve'] },
  });

  it('maps an assumed-role session to its role’s tenants, and a user to its own', () => {
    const support = resolve(event('arn:aws:sts::111122223333:assumed-role/Support/alice'));
    const ops = resolve(event('arn:aws:iam::111122223333:user/ops'));

    expect(support.tenants).toEqual(['acme', 'globex']);
    expect(ops.tenants).toBe('all');
    expect(roleArnOf('arn:aws-cn:sts::111122223333:assumed-role/R/s')).toBe('arn:aws-cn:iam::111122223333:role/R');
  });

  it('counts an assumed-role session against its role, so a new session name buys no more streams', () => {
    const alice = resolve(event('arn:aws:sts::111122223333:assumed-role/Support/alice'));
    const mallory = resolve(event('arn:aws:sts::111122223333:assumed-role/Support/mallory-42'));
    const ops = resolve(event('arn:aws:iam::111122223333:user/ops'));

    expect(granteeOf(alice)).toBe('arn:aws:iam::111122223333:role/Support');
    expect(granteeOf(mallory)).toBe(granteeOf(alice));
    expect(granteeOf(ops)).toBe('arn:aws:iam::111122223333:user/ops');
  });

  it('gives a principal the roles its grant names, and every role to a grant of tenants alone', () => {
    const approver = resolve(event('arn:aws:sts::111122223333:assumed-role/Approvers/bob'));
    const support = resolve(event('arn:aws:sts::111122223333:assumed-role/Support/alice'));

    expect(approver).toMatchObject({ tenants: ['acme'], roles: ['read', 'approve'] });
    expect(support.roles).toEqual(ALL_ROLES);
  });

  it('refuses a principal that is not in the map, and a request that carries none', () => {
    expect(codeOf(() => resolve(event('arn:aws:sts::111122223333:assumed-role/Other/bob')))).toBe('forbidden');
    expect(codeOf(() => resolve(event()))).toBe('unauthenticated');
  });
});

describe('who is calling baton dev’s API: a token per caller, as Jupyter does', () => {
  const bearer = (token: string | undefined, headers: Record<string, string> = {}) =>
    event(undefined, { ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...headers });

  it('refuses a request without the run’s token, or with another one', () => {
    const local = localCallers();

    expect(codeOf(() => local.resolve(event()))).toBe('unauthenticated');
    expect(codeOf(() => local.resolve(bearer('not-the-token')))).toBe('unauthenticated');
    expect(codeOf(() => local.resolve(bearer(localCallers().token)))).toBe('unauthenticated');
  });

  it('takes the developer’s token as a bearer token or as the console’s cookie: every tenant, every role', () => {
    const local = localCallers();
    const cookie = event(undefined, { cookie: `other=1; baton_token_7717=${local.token}` });

    expect(local.resolve(bearer(local.token))).toEqual({ principal: 'dev', tenants: 'all', roles: ALL_ROLES });
    expect(local.resolve(cookie).roles).toEqual(ALL_ROLES);
    expect(local.knows(local.token as string)).toBe(true);
  });

  it('reads the developer’s tenants from its header, every tenant without one, and refuses a bad name', () => {
    const local = localCallers();

    expect(local.resolve(bearer(local.token, { 'x-baton-tenants': 'acme, globex' })).tenants).toEqual([
      'acme',
      'globex',
    ]);
    expect(local.resolve(bearer(local.token)).tenants).toBe('all');
    expect(codeOf(() => local.resolve(bearer(local.token, { 'x-baton-tenants': 'a#b' })))).toBe('invalid_request');
  });

  it('with a mapping, gives each named caller a token of its own with its tenants and roles, and the developer none', () => {
    const local = localCallers({ alice: { tenants: ['acme'], roles: ['read', 'approve'] }, ops: '*' });

    expect(local.token).toBeUndefined();
    expect(local.resolve(bearer(local.callers?.alice))).toEqual({
      principal: 'alice',
      tenants: ['acme'],
      roles: ['read', 'approve'],
    });
    expect(local.resolve(bearer(local.callers?.ops)).roles).toEqual(ALL_ROLES);
    expect(new Set(Object.values(local.callers ?? {})).size).toBe(2);
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
