import { createHash, randomBytes } from 'node:crypto';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { ApiError } from '../api/api-errors.ts';
import { type Caller, type CallerMap, type CallerResolver, callerOf } from '../api/caller.ts';
import { NAME_PATTERN } from '../core/ids.ts';
import { ALL_ROLES } from '../core/roles.ts';

/** The header a local caller that sees every tenant narrows them with (comma-separated). */
export const DEV_TENANTS_HEADER = 'x-baton-tenants';
/** The console's cookie carrying a token: the port follows, so two stacks' cookies never overwrite each other. */
export const TOKEN_COOKIE_PREFIX = 'baton_token_';

/** Who may call `baton dev`'s API: a token per caller, written to local.json, and the resolver that reads them. */
export interface LocalCallers {
  /** The developer's token (every tenant, every role); absent when the stack maps its callers. */
  readonly token?: string | undefined;
  /** With `baton dev --callers`: each mapped caller's token, by name. */
  readonly callers?: Readonly<Record<string, string>> | undefined;
  readonly resolve: CallerResolver;
  /** Whether `token` is one of this run's (the console's address carries one). */
  knows(token: string): boolean;
}

const digest = (token: string) => createHash('sha256').update(token).digest('hex');
const newToken = () => randomBytes(32).toString('base64url');

/**
 * The local callers of one `baton dev` run. Each gets a random token, as Jupyter does: a web page
 * cannot read `.baton/local.json`, so it cannot call the API even from the developer's browser.
 * Without a mapping there is one caller, the developer, with every role; with one, each named
 * caller gets the tenants and roles the mapping gives it.
 */
export function localCallers(mapping?: CallerMap): LocalCallers {
  // Keyed by the token's digest: a lookup compares digests, never the token itself byte by byte.
  const byDigest = new Map<string, Caller>();
  const issue = (caller: Caller) => {
    const token = newToken();
    byDigest.set(digest(token), caller);
    return token;
  };
  const resolve: CallerResolver = (event) => narrowed(callerFor(event, byDigest), event);
  const knows = (token: string) => byDigest.has(digest(token));
  if (mapping === undefined)
    return { token: issue({ principal: 'dev', tenants: 'all', roles: ALL_ROLES }), resolve, knows };
  const callers = Object.fromEntries(
    Object.entries(mapping).map(([name, grant]) => [name, issue(callerOf(name, grant))]),
  );
  return { callers, resolve, knows };
}

function callerFor(event: LambdaFunctionURLEvent, byDigest: ReadonlyMap<string, Caller>): Caller {
  const presented = presentedTokens(event);
  if (presented.length === 0)
    throw new ApiError(
      'unauthenticated',
      'the local API needs the token baton dev wrote to .baton/local.json: send Authorization: Bearer TOKEN, or open the console at the address baton dev printed',
    );
  for (const token of presented) {
    const caller = byDigest.get(digest(token));
    if (caller !== undefined) return caller;
  }
  throw new ApiError('unauthenticated', 'the token is not this stack’s (baton dev makes new ones each run)');
}

/** The bearer token, or else the values of the console's token cookies (of this stack or another). */
function presentedTokens(event: LambdaFunctionURLEvent): string[] {
  const bearer = /^Bearer\s+(\S+)$/i.exec(event.headers.authorization ?? '')?.[1];
  if (bearer !== undefined) return [bearer];
  return (event.headers.cookie ?? '')
    .split(';')
    .map((pair) => pair.trim().split(/=(.*)/s, 2))
    .filter(([name, value]) => name?.startsWith(TOKEN_COOKIE_PREFIX) && value)
    .map(([, value]) => value as string);
}

/** A caller that sees every tenant acts for those the header names, when it names some. */
function narrowed(caller: Caller, event: LambdaFunctionURLEvent): Caller {
  const header = event.headers[DEV_TENANTS_HEADER]?.trim();
  if (caller.tenants !== 'all' || !header || header === '*') return caller;
  const tenants = header
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  const bad = tenants.find((t) => !NAME_PATTERN.test(t));
  if (bad !== undefined) throw new ApiError('invalid_request', `${DEV_TENANTS_HEADER}: '${bad}' is not a tenant name`);
  return { ...caller, tenants };
}
