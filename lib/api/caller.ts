import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { z } from 'zod';
import { NAME_PATTERN } from '../core/ids.ts';
import { ApiError } from './api-errors.ts';

/** Who is calling, as far as tenancy goes: the tenants it may see, or every tenant. */
export interface Caller {
  /** A label for logs: the principal ARN, or `dev`. */
  readonly principal: string;
  readonly tenants: readonly string[] | 'all';
}

/** Finds the caller of a request; throws ApiError unauthenticated/forbidden when there is none. */
export type CallerResolver = (event: LambdaFunctionURLEvent) => Caller;

/** May the caller see this tenant? */
export const canSee = (caller: Caller, tenant: string): boolean =>
  caller.tenants === 'all' || caller.tenants.includes(tenant);

/** `"*"` grants every tenant; otherwise a list of tenant names. */
export const TenantGrant = z.union([z.literal('*'), z.array(z.string().regex(NAME_PATTERN)).min(1)]);
/** The deployed API's tenancy: IAM principal ARN → its tenants (the BATON_API_TENANTS variable, JSON). */
export const TenantMap = z.record(z.string().min(1), TenantGrant);
export type TenantMap = z.infer<typeof TenantMap>;

/** The role ARN behind an assumed-role session ARN (`arn:aws:sts::A:assumed-role/R/S` → `arn:aws:iam::A:role/R`). */
export function roleArnOf(principalArn: string): string | undefined {
  const match = /^arn:(aws[\w-]*):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(principalArn);
  return match ? `arn:${match[1]}:iam::${match[2]}:role/${match[3]}` : undefined;
}

/**
 * The deployed resolver: the function URL's IAM auth has already verified the SigV4 signature,
 * so the principal in the request context is trusted; its tenants come from the map, by its
 * exact ARN or, for an assumed-role session, by its role's ARN. A principal not in the map is refused.
 */
export function iamCallerResolver(map: TenantMap): CallerResolver {
  return (event) => {
    const principal = (event.requestContext as { authorizer?: { iam?: { userArn?: string } } }).authorizer?.iam
      ?.userArn;
    if (!principal)
      throw new ApiError(
        'unauthenticated',
        'the request carries no IAM principal (is the function URL IAM-authenticated?)',
      );
    const role = roleArnOf(principal);
    const grant = map[principal] ?? (role === undefined ? undefined : map[role]);
    if (grant === undefined)
      throw new ApiError('forbidden', `principal ${principal} has no tenants in BATON_API_TENANTS`);
    return { principal, tenants: grant === '*' ? 'all' : grant };
  };
}

/** The header `baton dev` reads a caller's tenants from (comma-separated); the local stack trusts it. */
export const DEV_TENANTS_HEADER = 'x-baton-tenants';

/**
 * The local resolver: whoever reaches the loopback port is the developer, and the header says
 * which tenants they act as (default: every tenant). Never used by the deployed function.
 */
export function devCallerResolver(): CallerResolver {
  return (event) => {
    const header = event.headers[DEV_TENANTS_HEADER]?.trim();
    if (!header || header === '*') return { principal: 'dev', tenants: 'all' };
    const tenants = header
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    const bad = tenants.find((t) => !NAME_PATTERN.test(t));
    if (bad !== undefined)
      throw new ApiError('invalid_request', `${DEV_TENANTS_HEADER}: '${bad}' is not a tenant name`);
    return { principal: 'dev', tenants };
  };
}
