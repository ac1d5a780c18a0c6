import type { z } from 'zod';
import type { BatonClient } from '../client/baton-client.ts';
import type { Role } from '../core/roles.ts';
import type { Clock } from '../ports/clock.ts';
import type { SessionStore } from '../ports/session-store.ts';
import type { StreamSlotStore } from '../ports/stream-slots.ts';
import type { Caller } from './caller.ts';

/** What every route handler may use: the store-backed client, the store, time. */
export interface ApiServices {
  readonly client: BatonClient;
  readonly store: SessionStore;
  readonly clock: Clock;
  /** How long an events request waits for a new entry before it answers with none (SSE long poll). */
  readonly eventsWaitMs: number;
  /** How often an events request looks for new entries while it waits. */
  readonly eventsPollMs: number;
  /** The open event streams of every caller, shared by every invocation of the API. */
  readonly streams: StreamSlotStore;
  /** Event streams (requests that wait) one caller may hold open at once; over it, 429. */
  readonly streamsPerCaller: number;
}

/** A validated request as a route handler sees it. */
export interface RouteContext<P, Q, B> {
  readonly params: P;
  readonly query: Q;
  readonly body: B;
  /** Lower-case header names, as function URLs deliver them. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly caller: Caller;
  readonly services: ApiServices;
  /** Aborted when the client goes away (locally); never in Lambda. */
  readonly signal?: AbortSignal | undefined;
  /**
   * The answer reaches the client piece by piece (`baton dev`'s server); false where it is
   * buffered and sent whole (a function URL), so a stream there must end within one request.
   */
  readonly streaming?: boolean | undefined;
}

/**
 * A JSON answer, a text one with its own content type (the event stream), or a text stream
 * written as it comes where the server streams (collected whole where it does not).
 */
export type RouteResult =
  | { readonly status: number; readonly json: unknown }
  | { readonly status: number; readonly text: string; readonly contentType: string }
  | {
      readonly status: number;
      readonly stream: AsyncIterable<string>;
      readonly contentType: string;
      readonly headers?: Readonly<Record<string, string>> | undefined;
    };

export interface RouteResponse {
  readonly description: string;
  readonly schema?: z.ZodType | undefined;
  /** Defaults to application/json. */
  readonly contentType?: string | undefined;
}

/** One operation of the API: method, path template (`/sessions/{id}`), its schemas and its handler. */
export interface Route<P = unknown, Q = unknown, B = unknown> {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly params?: z.ZodType<P> | undefined;
  readonly query?: z.ZodType<Q> | undefined;
  readonly body?: z.ZodType<B> | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  readonly responses: Readonly<Record<number, RouteResponse>>;
  /**
   * The role a caller needs (lib/core/roles.ts OPERATION_ROLES), checked before the handler reads
   * anything; `any` for what every caller may ask (who it is).
   */
  readonly role: Role | 'any';
  /** Served without a caller (the OpenAPI document). */
  readonly public?: boolean | undefined;
  handle(context: RouteContext<P, Q, B>): Promise<RouteResult>;
}

/** Declares a route with its types inferred from its schemas; adding an operation is one of these in the table. */
export const defineRoute = <P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  route: Route<P, Q, B>,
): Route => route as unknown as Route;

/** Matches a path against a template; the named segments come back decoded. */
export function matchPath(template: string, path: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const segment = want[i] as string;
    const actual = got[i] as string;
    const name = /^\{(\w+)\}$/.exec(segment)?.[1];
    if (name === undefined) {
      if (segment !== actual) return undefined;
    } else {
      if (actual === '') return undefined;
      try {
        params[name] = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
    }
  }
  return params;
}
