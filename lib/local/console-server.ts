import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AgentRegistry } from '../agent/define-agent.ts';
import { type ApiHandler, createApiHandler } from '../api/api-handler.ts';
import type { CallerMap, CallerResolver } from '../api/caller.ts';
import { serveWithHandler } from '../api/node-adapter.ts';
import { RUNTIME_DEFAULTS } from '../core/resources.ts';
import { systemClock } from '../ports/clock.ts';
import { type LocalCallers, localCallers, TOKEN_COOKIE_PREFIX } from './local-callers.ts';
import { CONSOLE_SECURITY_HEADERS, loopbackRefusal } from './loopback-guard.ts';
import { clientForTarget, type StoreTarget } from './store-target.ts';

/**
 * The console's static assets (plain ES modules, CSS, one HTML page): console/ of a checkout, and
 * dist/console of the published package (the build copies it there, beside dist/lib).
 */
export const CONSOLE_DIR = fileURLToPath(new URL('../../console', import.meta.url));
/** Where the API is mounted next to the console; the console finds it in config.json. */
export const API_MOUNT = '/api';
/** The port `baton dev` tries first, so the console's address stays the same between runs. */
export const DEFAULT_CONSOLE_PORT = 7717;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export interface ConsoleServer {
  /** The console's address, e.g. http://127.0.0.1:7717/ */
  readonly url: string;
  /** The API's base address (the console's plus /api). */
  readonly apiUrl: string;
  /** The developer's token (every role); absent when callers are mapped. */
  readonly token?: string | undefined;
  /** With `callers`: each mapped caller's token, by name. */
  readonly callers?: Readonly<Record<string, string>> | undefined;
  stop(): Promise<void>;
}

export interface ConsoleServerOptions {
  readonly target: StoreTarget;
  /** 0 picks a free port; a taken preferred port falls back to a free one. */
  readonly port?: number | undefined;
  readonly log?: ((line: string) => void) | undefined;
  /**
   * Callers by name and what each may do (`baton dev --callers`): each gets a token of its own.
   * Without it, one token, the developer's, with every tenant and every role.
   */
  readonly callers?: CallerMap | undefined;
  /** The agents the stack hosts: inputs are admitted against them before they are accepted. */
  readonly agents?: AgentRegistry | undefined;
}

/** The API handler as `baton dev` serves it: the same handler as the function, its callers known by their tokens. */
export function localApiHandler(
  target: StoreTarget,
  resolveCaller: CallerResolver,
  options: { readonly agents?: AgentRegistry | undefined; readonly log?: ((line: string) => void) | undefined } = {},
): ApiHandler {
  const log = options.log ?? (() => {});
  const { client, store, streams } = clientForTarget(target, options.agents);
  return createApiHandler({
    // The same stream bound as deployed, on the same kind of slots (DynamoDB Local's table).
    services: {
      client,
      store,
      clock: systemClock,
      eventsWaitMs: 15_000,
      eventsPollMs: 300,
      streams,
      streamsPerCaller: RUNTIME_DEFAULTS.apiStreamsPerCaller,
    },
    resolveCaller,
    onError: (error, event) =>
      log(`api: ${event.requestContext.http.method} ${event.rawPath} failed: ${(error as Error).stack ?? error}`),
  });
}

async function serveStatic(path: string): Promise<{ body: Buffer; type: string } | undefined> {
  // Navigation paths (/, /sessions/ID) get the page; the page's modules route on the client.
  const file = extname(path) === '' ? 'index.html' : normalize(path).replace(/^[/\\]+/, '');
  if (file.split(sep).includes('..')) return undefined;
  try {
    return {
      body: await readFile(join(CONSOLE_DIR, file)),
      type: CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    };
  } catch {
    return undefined;
  }
}

/**
 * The console's address with a token (`/?token=…`, as `baton dev` prints it) becomes a cookie
 * and a redirect to the same page without it: the token leaves the address bar and the history,
 * and the page's requests, EventSource included, carry it. Strict: no other site's page sends it.
 */
function tokenLogin(url: URL, callers: LocalCallers, port: () => number): Record<string, string> | undefined {
  const token = url.searchParams.get('token');
  if (token === null || !callers.knows(token)) return undefined;
  url.searchParams.delete('token');
  return {
    'set-cookie': `${TOKEN_COOKIE_PREFIX}${port()}=${token}; HttpOnly; SameSite=Strict; Path=/`,
    location: `${url.pathname}${url.search}`,
  };
}

/** Serves the console and, under /api, the API handler, on loopback only, to loopback pages only. */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const log = options.log ?? (() => {});
  const callers = localCallers(options.callers);
  const handler = localApiHandler(options.target, callers.resolve, { agents: options.agents, log });
  let port = 0;
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const refusal = loopbackRefusal(request.headers);
    if (refusal !== undefined) {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: { code: 'forbidden', message: refusal } }));
      return;
    }
    const serve = async () => {
      if (path === API_MOUNT || path.startsWith(`${API_MOUNT}/`)) {
        await serveWithHandler(handler, request, response, path.slice(API_MOUNT.length) || '/');
        return;
      }
      const login = tokenLogin(url, callers, () => port);
      if (login !== undefined) {
        response.writeHead(303, { ...CONSOLE_SECURITY_HEADERS, ...login });
        response.end();
        return;
      }
      if (path === '/config.json') {
        response.writeHead(200, { 'content-type': CONTENT_TYPES['.json'] as string, 'cache-control': 'no-store' });
        response.end(JSON.stringify({ apiBase: API_MOUNT }));
        return;
      }
      const asset = await serveStatic(path);
      if (asset === undefined) {
        response.writeHead(404, { ...CONSOLE_SECURITY_HEADERS, 'content-type': 'text/plain' });
        response.end('not found');
        return;
      }
      response.writeHead(200, { ...CONSOLE_SECURITY_HEADERS, 'content-type': asset.type, 'cache-control': 'no-cache' });
      response.end(asset.body);
    };
    serve().catch((error: unknown) => {
      log(`console server: ${request.method} ${path} failed: ${(error as Error).message}`);
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end();
    });
  });
  port = await listen(server, options.port ?? DEFAULT_CONSOLE_PORT);
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    apiUrl: `http://127.0.0.1:${port}${API_MOUNT}`,
    ...(callers.token === undefined ? {} : { token: callers.token }),
    ...(callers.callers === undefined ? {} : { callers: callers.callers }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Listens on loopback at `port`, or on a free port when it is taken. */
async function listen(server: Server, port: number): Promise<number> {
  const attempt = (p: number) =>
    new Promise<number>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.once('error', onError);
      server.listen(p, '127.0.0.1', () => {
        server.off('error', onError);
        resolve((server.address() as AddressInfo).port);
      });
    });
  try {
    return await attempt(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw error;
    return attempt(0);
  }
}
