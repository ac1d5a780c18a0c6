import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const PAGE_DIR = fileURLToPath(new URL('./page', import.meta.url));

export interface ChatWebServer {
  readonly url: string;
  stop(): Promise<void>;
}

export interface ChatWebServerOptions {
  /** The Baton API's base address (`baton dev` prints it; `.baton/local.json` has it as `api`). */
  readonly apiUrl: string;
  /** The caller's token for the API: it stays on this server, the page never sees it. */
  readonly token?: string | undefined;
  /** 0 picks a free port. */
  readonly port?: number | undefined;
}

/** The page's script: app.tsx and React, useChat and the AI SDK bundled for the browser. */
async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [join(PAGE_DIR, 'app.tsx')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    write: false,
    minify: true,
    logLevel: 'silent',
  });
  return result.outputFiles[0]?.text ?? '';
}

/**
 * Forwards `/api/…` to Baton's API with the caller's token, streaming both ways: the page's
 * backend holds the credentials, as a deployed app's server would (signing for the function
 * URL). A page that leaves (a reload) closes the upstream request too — which cancels nothing.
 */
function proxy(options: ChatWebServerOptions, request: IncomingMessage, response: ServerResponse, path: string) {
  const target = new URL(`${options.apiUrl.replace(/\/$/, '')}${path}`);
  const headers: Record<string, string> = {};
  for (const name of ['content-type', 'accept', 'last-event-id']) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const upstream = httpRequest(target, { method: request.method, headers }, (answer) => {
    response.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(response);
  });
  upstream.on('error', (error) => {
    if (!response.headersSent) response.writeHead(502, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 'bad_gateway', message: error.message } }));
  });
  response.on('close', () => upstream.destroy());
  request.pipe(upstream);
}

/** Serves the chat page (bundled once, at start) and its API calls, on loopback. */
export async function startChatWebServer(options: ChatWebServerOptions): Promise<ChatWebServer> {
  const script = await bundle();
  const page = readFileSync(join(PAGE_DIR, 'index.html'));
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname.startsWith('/api/'))
      return proxy(options, request, response, `${url.pathname.slice(4)}${url.search}`);
    if (url.pathname === '/app.js') {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' });
      return response.end(script);
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' });
    return response.end(page);
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// `tsx examples/chat-web/server.ts` beside `baton dev --agents examples/chat-web/agent.ts`.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const local = JSON.parse(readFileSync(join('.baton', 'local.json'), 'utf8')) as { api?: string; token?: string };
  if (local.api === undefined) throw new Error('.baton/local.json has no API address: is baton dev running?');
  const server = await startChatWebServer({
    apiUrl: local.api,
    token: local.token,
    port: Number(process.env.PORT ?? 5177),
  });
  console.log(`chat page: ${server.url}`);
}
