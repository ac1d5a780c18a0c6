import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ApiHandler, createApiHandler } from '../api/api-handler.ts';
import { devCallerResolver } from '../api/caller.ts';
import { serveWithHandler } from '../api/node-adapter.ts';
import { systemClock } from '../ports/clock.ts';
import { clientForTarget, type StoreTarget } from './store-target.ts';

/** The console's static assets (plain ES modules, CSS, one HTML page). */
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
  stop(): Promise<void>;
}

export interface ConsoleServerOptions {
  readonly target: StoreTarget;
  /** 0 picks a free port; a taken preferred port falls back to a free one. */
  readonly port?: number | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

/** The API handler as `baton dev` serves it: the same handler as the function, tenants from a header. */
export function localApiHandler(target: StoreTarget, log: (line: string) => void = () => {}): ApiHandler {
  const { client, store } = clientForTarget(target);
  return createApiHandler({
    services: { client, store, clock: systemClock, eventsWaitMs: 15_000, eventsPollMs: 300 },
    resolveCaller: devCallerResolver(),
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

/** Serves the console and, under /api, the API handler, on loopback only. */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const log = options.log ?? (() => {});
  const handler = localApiHandler(options.target, log);
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const serve = async () => {
      if (path === API_MOUNT || path.startsWith(`${API_MOUNT}/`)) {
        await serveWithHandler(handler, request, response, path.slice(API_MOUNT.length) || '/');
        return;
      }
      if (path === '/config.json') {
        response.writeHead(200, { 'content-type': CONTENT_TYPES['.json'] as string, 'cache-control': 'no-store' });
        response.end(JSON.stringify({ apiBase: API_MOUNT }));
        return;
      }
      const asset = await serveStatic(path);
      if (asset === undefined) {
        response.writeHead(404, { 'content-type': 'text/plain' });
        response.end('not found');
        return;
      }
      response.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-cache' });
      response.end(asset.body);
    };
    serve().catch((error: unknown) => {
      log(`console server: ${request.method} ${path} failed: ${(error as Error).message}`);
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end();
    });
  });
  const port = await listen(server, options.port ?? DEFAULT_CONSOLE_PORT);
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    apiUrl: `http://127.0.0.1:${port}${API_MOUNT}`,
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
