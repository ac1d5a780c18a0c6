import type { LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import type { z } from 'zod';
import { InvalidInputError, RoleRequiredError } from '../core/errors.ts';
import { describeIssues } from '../core/messages.ts';
import { roleRefusal } from '../core/roles.ts';
import { ApiError } from './api-errors.ts';
import { CallerView } from './api-schemas.ts';
import type { Caller, CallerResolver } from './caller.ts';
import { CHAT_ROUTES } from './chat-routes.ts';
import { openApiDocument } from './openapi.ts';
import { type ApiServices, defineRoute, matchPath, type Route, type RouteResult } from './route.ts';
import { SESSION_ROUTES } from './session-routes.ts';

/**
 * The API as a function URL handler; `signal` lets a local server stop a long poll whose client
 * left, and `streaming` lets it write a streamed answer as it comes (`stream` on the result).
 */
export type ApiHandler = (
  event: LambdaFunctionURLEvent,
  options?: { signal?: AbortSignal | undefined; streaming?: boolean | undefined },
) => Promise<ApiResult>;

/** A function URL's answer; with `streaming`, a streamed one keeps its body as `stream`. */
export type ApiResult = LambdaFunctionURLResult & { readonly stream?: AsyncIterable<string> | undefined };

export interface ApiHandlerOptions {
  readonly services: ApiServices;
  readonly resolveCaller: CallerResolver;
  /** Where problems are reported (unexpected errors: the caller sees only `internal`). */
  readonly onError?: ((error: unknown, event: LambdaFunctionURLEvent) => void) | undefined;
  readonly routes?: readonly Route[] | undefined;
}

const API_INFO = { title: 'Baton', version: '1' };

/** Every route the API serves: the session operations, browser chat and the OpenAPI document generated from them. */
export function apiRoutes(operations: readonly Route[] = [...SESSION_ROUTES, ...CHAT_ROUTES, WHO_AM_I]): Route[] {
  const document = openApiDocument(operations, API_INFO);
  return [
    ...operations,
    defineRoute({
      method: 'GET',
      path: '/openapi.json',
      operationId: 'openApi',
      summary: 'This API as OpenAPI 3.1',
      role: 'any',
      public: true,
      responses: { 200: { description: 'the OpenAPI document' } },
      handle: async () => ({ status: 200, json: document }),
    }),
  ];
}

/** The caller as the API sees it: a client (the console) shows only what the caller may do. */
const WHO_AM_I = defineRoute({
  method: 'GET',
  path: '/me',
  operationId: 'whoAmI',
  summary: 'The caller: its principal, the tenants it sees and its roles',
  role: 'any',
  responses: { 200: { description: 'the caller', schema: CallerView } },
  handle: async ({ caller }) => ({ status: 200, json: caller }),
});

/** A public route has no caller; every other one needs the role it names, before it reads anything. */
function authorize(route: Route, resolveCaller: CallerResolver, event: LambdaFunctionURLEvent): Caller {
  if (route.public) return { principal: 'anyone', tenants: [], roles: [] };
  const caller = resolveCaller(event);
  if (route.role !== 'any' && !caller.roles.includes(route.role))
    throw new ApiError('missing_role', roleRefusal(caller.principal, route.role));
  return caller;
}

function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, what: string): T {
  if (schema === undefined) return value as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ApiError('invalid_request', `${what}: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * The body as JSON. Only `application/json` is read: a browser sends `text/plain` and form bodies
 * to any address without asking (no CORS preflight), so a JSON parser that took them would let
 * any web page post here.
 */
function readBody(event: LambdaFunctionURLEvent): unknown {
  const type = event.headers?.['content-type'];
  const { body } = event;
  if ((body || type !== undefined) && !isJson(type))
    throw new ApiError(
      'unsupported_media_type',
      `the body must be application/json${type === undefined ? ' (no content-type was sent)' : `, not ${type}`}`,
    );
  if (!body) return undefined;
  const text = event.isBase64Encoded ? Buffer.from(body, 'base64').toString('utf8') : body;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError('invalid_request', `body is not valid JSON: ${(error as Error).message}`);
  }
}

const isJson = (type: string | undefined): boolean =>
  type !== undefined && type.split(';')[0]?.trim().toLowerCase() === 'application/json';

const json = (status: number, body: unknown): LambdaFunctionURLResult => ({
  statusCode: status,
  headers: {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  },
  body: JSON.stringify(body),
});

/** Collects a streamed answer where the answer is sent whole. */
async function drain(stream: AsyncIterable<string>): Promise<string> {
  let body = '';
  for await (const piece of stream) body += piece;
  return body;
}

async function toResult(result: RouteResult, streaming: boolean): Promise<ApiResult> {
  if ('json' in result) return json(result.status, result.json);
  const headers = { 'content-type': result.contentType, 'cache-control': 'no-store' };
  if ('text' in result) return { statusCode: result.status, headers, body: result.text };
  const all = { ...headers, ...result.headers };
  if (streaming) return { statusCode: result.status, headers: all, stream: result.stream };
  return { statusCode: result.status, headers: all, body: await drain(result.stream) };
}

/**
 * The one API handler, shaped for a Lambda function URL and served as-is by `baton dev`:
 * matches the route, resolves the caller, validates params, query and body with the route's
 * schemas, and answers JSON errors `{ error: { code, message } }` with stable codes.
 */
export function createApiHandler(options: ApiHandlerOptions): ApiHandler {
  const routes = options.routes ?? apiRoutes();
  return async (event, { signal, streaming = false } = {}) => {
    try {
      const method = event.requestContext.http.method.toUpperCase();
      const path = event.rawPath.length > 1 ? event.rawPath.replace(/\/+$/, '') : event.rawPath;
      const matches = routes
        .map((route) => ({ route, params: matchPath(route.path, path) }))
        .filter((m): m is { route: Route; params: Record<string, string> } => m.params !== undefined);
      if (matches.length === 0) throw new ApiError('not_found', `no route ${path}`);
      const match = matches.find((m) => m.route.method === method);
      if (match === undefined)
        throw new ApiError(
          'method_not_allowed',
          `${method} ${path}: allowed ${matches.map((m) => m.route.method).join(', ')}`,
        );
      const { route } = match;
      const caller = authorize(route, options.resolveCaller, event);
      const query = Object.fromEntries(new URLSearchParams(event.rawQueryString ?? ''));
      const result = await route.handle({
        params: parse(route.params, match.params, 'path'),
        query: parse(route.query, route.query === undefined ? {} : query, 'query'),
        body: parse(route.body, readBody(event), 'body'),
        headers: event.headers ?? {},
        caller,
        services: options.services,
        signal,
        streaming,
      });
      return await toResult(result, streaming);
    } catch (error) {
      if (error instanceof ApiError) return json(error.status, { error: { code: error.code, message: error.message } });
      if (error instanceof RoleRequiredError)
        return json(403, { error: { code: 'missing_role', message: error.message } });
      if (error instanceof InvalidInputError)
        return json(400, { error: { code: 'invalid_request', message: error.message } });
      options.onError?.(error, event);
      return json(500, { error: { code: 'internal', message: 'internal error; the operator has the details' } });
    }
  };
}
