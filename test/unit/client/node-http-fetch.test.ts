import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBatonClient } from '../../../lib/client/http-baton-client.ts';
import { nodeHttpFetch } from '../../../lib/client/node-http-fetch.ts';
import { TurnRefusedError } from '../../../lib/core/errors.ts';

/** What the server last received. */
let received: {
  method?: string | undefined;
  url?: string | undefined;
  headers?: IncomingMessage['headers'];
  body?: string;
} = {};
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received = { method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() };
      if (req.url === '/api/sessions/S-1') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ sessionId: 'S-1', agent: 'désk', status: 'idle' }));
      } else if (req.url === '/api/sessions/S-1/send') {
        res.writeHead(409, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'already_finished', message: 'session S-1 has ended' } }));
      } else if (req.url === '/slow') {
        // Never answers: the client's signal ends the request.
      } else if (req.url === '/cut') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
        res.write('partial');
        setTimeout(() => res.destroy(), 10);
      } else {
        res.writeHead(404, { 'content-type': 'application/json', 'x-many': ['a', 'b'] });
        res.end('{"error":{"code":"not_found","message":"no such thing"}}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('the fetch over node:http that the CLI uses', () => {
  it('answers the status, the headers and the whole body', async () => {
    const answer = await nodeHttpFetch(`${base}/api/sessions/S-1`, { headers: { authorization: 'Bearer T' } });

    expect(answer.ok).toBe(true);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('Content-Type')).toBe('application/json');
    expect(answer.headers.get('x-absent')).toBeNull();
    expect(JSON.parse(await answer.text())).toEqual({ sessionId: 'S-1', agent: 'désk', status: 'idle' });
    expect(received).toMatchObject({ method: 'GET', url: '/api/sessions/S-1', headers: { authorization: 'Bearer T' } });
  });

  it('sends a body whole, its length counted in bytes', async () => {
    const body = JSON.stringify({ input: { text: 'café ☕' } });
    const answer = await nodeHttpFetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

    expect(answer.ok).toBe(false);
    expect(answer.status).toBe(404);
    expect(answer.headers.get('x-many')).toBe('a, b');
    expect(received).toMatchObject({
      method: 'POST',
      body,
      headers: { 'content-length': String(Buffer.byteLength(body)) },
    });
  });

  it('fails as fetch does when nothing listens, so the client names the address and the cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));

    await expect(nodeHttpFetch(`http://127.0.0.1:${port}/api`, {})).rejects.toMatchObject({
      message: 'fetch failed',
      cause: { message: expect.stringContaining('ECONNREFUSED') },
    });
    const client = new HttpBatonClient({ baseUrl: `http://127.0.0.1:${port}/api`, fetch: nodeHttpFetch });
    await expect(client.status('S-1')).rejects.toThrow(
      `cannot reach the Baton API at http://127.0.0.1:${port}/api (GET http://127.0.0.1:${port}/api/sessions/S-1): connect ECONNREFUSED 127.0.0.1:${port}`,
    );
  });

  it('rejects with the signal’s reason when the signal aborts the request', async () => {
    const controller = new AbortController();
    const pending = nodeHttpFetch(`${base}/slow`, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stopped by the caller')), 20);

    await expect(pending).rejects.toThrow('stopped by the caller');
    await expect(nodeHttpFetch(`${base}/slow`, { signal: controller.signal })).rejects.toThrow('stopped by the caller');
  });

  it('fails on an answer cut short, rather than answering part of it', async () => {
    await expect(nodeHttpFetch(`${base}/cut`, {})).rejects.toThrow('fetch failed');
  });

  it('carries the HTTP client: a session, a missing one, a refusal with its code', async () => {
    const client = new HttpBatonClient({ baseUrl: `${base}/api`, token: 'T', fetch: nodeHttpFetch });

    await expect(client.status('S-1')).resolves.toMatchObject({ sessionId: 'S-1', agent: 'désk' });
    expect(received.headers?.authorization).toBe('Bearer T');
    await expect(client.status('S-2')).resolves.toBeUndefined();
    await expect(client.send('S-1', { text: 'again' })).rejects.toThrow(TurnRefusedError);
    await expect(client.send('S-1', { text: 'again' })).rejects.toMatchObject({ reason: 'finished' });
  });
});
