import type { LambdaFunctionURLEvent } from 'aws-lambda';
import * as z from 'zod';
import { DEFAULT_TENANT, NAME_PATTERN } from '../core/ids.ts';
import { API_ROLES } from '../core/resources.ts';
import { ALL_ROLES, type Role } from '../core/roles.ts';
import { ApiError } from './api-errors.ts';

/** Who is calling: the tenants it may see (or every tenant) and what it may do with their sessions. */
export interface Caller {
  /** A label for logs and refusals: the principal ARN, or a local caller's name. */
  readonly principal: string;
  readonly tenants: readonly string[] | 'all';
  readonly roles: readonly Role[];
  /**
   * Whom the grant names, when not `principal` itself: an assumed-role session's role. Per-caller
   * bounds (open event streams) count against it, so new session names buy no more.
   */
  readonly grantee?: string | undefined;
}

/** The key per-caller bounds count against: the grant's principal, not a session of it. */
export const granteeOf = (caller: Caller): string => caller.grantee ?? caller.principal;

/** Finds the caller of a request; throws ApiError unauthenticated/forbidden when there is none. */
export type CallerResolver = (event: LambdaFunctionURLEvent) => Caller;

/** May the caller see this tenant? */
export const canSee = (caller: Caller, tenant: string): boolean =>
  caller.tenants === 'all' || caller.tenants.includes(tenant);

/** The tenant a request acts on: the one named (if the caller may), else the caller's only one. */
export function tenantFor(caller: Caller, named: string | undefined): string {
  if (named !== undefined) {
    if (!canSee(caller, named)) throw new ApiError('forbidden', `tenant ${named} is not one of the caller's tenants`);
    return named;
  }
  if (caller.tenants === 'all') return DEFAULT_TENANT;
  if (caller.tenants.length === 1) return caller.tenants[0] as string;
  throw new ApiError('tenant_required', `the caller has several tenants (${caller.tenants.join(', ')}): name one`);
}

/** `"*"` grants every tenant; otherwise a list of tenant names. */
export const TenantGrant = z.union([z.literal('*'), z.array(z.string().regex(NAME_PATTERN)).min(1)]);
/** `"*"` grants every role; otherwise a list of roles (lib/core/roles.ts). */
export const RoleGrant = z.union([z.literal('*'), z.array(z.enum(API_ROLES)).min(1)]);
/**
 * One caller's grant: `{ tenants, roles }`, or its tenants alone — the form from before roles
 * existed, which keeps meaning what it meant then: every role.
 */
export const CallerGrant = z.union([TenantGrant, z.object({ tenants: TenantGrant, roles: RoleGrant }).strict()]);
export type CallerGrant = z.infer<typeof CallerGrant>;
/** Callers and their grants: the deployed API's by IAM principal ARN (BATON_API_TENANTS, JSON), `baton dev --callers` by name. */
export const CallerMap = z.record(z.string().min(1), CallerGrant);
export type CallerMap = z.infer<typeof CallerMap>;

/** The caller a grant makes of a principal. */
export function callerOf(principal: string, grant: CallerGrant): Caller {
  const { tenants, roles } = Array.isArray(grant) || grant === '*' ? { tenants: grant, roles: '*' as const } : grant;
  return { principal, tenants: tenants === '*' ? 'all' : tenants, roles: roles === '*' ? ALL_ROLES : roles };
}

/** The role ARN behind an assumed-role session ARN (`arn:aws:sts::A:assumed-role/R/S` → `arn:aws:iam::A:role/R`). */
export function roleArnOf(principalArn: string): string | undefined {
  const match = /^arn:(aws[\w-]*):sts::(\d{12}):assumed-role\/([^/]+)\/.+$/.exec(principalArn);
  return match ? `arn:${match[1]}:iam::${match[2]}:role/${match[3]}` : undefined;
}

/**
 * The deployed resolver: the function URL's IAM auth has already verified the SigV4 signature,
 * so the principal in the request context is trusted; its tenants and roles come from the map,
 * by its exact ARN or, for an assumed-role session, by its role's ARN. A principal not in the map is refused.
 */
export function iamCallerResolver(map: CallerMap): CallerResolver {
  return (event) => {
    const principal = (event.requestContext as { authorizer?: { iam?: { userArn?: string } } }).authorizer?.iam
      ?.userArn;
    if (!principal)
      throw new ApiError(
        'unauthenticated',
        'the request carries no IAM principal (is the function URL IAM-authenticated?)',
      );
    const role = roleArnOf(principal);
    const own = map[principal];
    const grant = own ?? (role === undefined ? undefined : map[role]);
    if (grant === undefined)
      throw new ApiError('forbidden', `principal ${principal} has no tenants in BATON_API_TENANTS`);
    return own === undefined ? { ...callerOf(principal, grant), grantee: role } : callerOf(principal, grant);
  };
}
