import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import type { ApiHandler } from './api-handler.ts';

/** Request bodies above this are refused, as a function URL would (its payload limit is 6 MB). */
const MAX_BODY_BYTES = 6 * 1024 * 1024;

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new Error(
        `request body is over ${MAX_BODY_BYTES} bytes, the HTTP API's limit (a Lambda function URL's payload limit): send a larger ticket input on the tickets queue (the store-backed BatonClient, or a producer), which carries it through the payload bucket`,
      );
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A node:http request as the function URL event Lambda would deliver (`path` with any mount prefix removed). */
export function toFunctionUrlEvent(request: IncomingMessage, path: string, body: string): LambdaFunctionURLEvent {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const method = (request.method ?? 'GET').toUpperCase();
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: url.search.replace(/^\?/, ''),
    headers,
    queryStringParameters: Object.fromEntries(url.searchParams),
    requestContext: {
      accountId: 'anonymous',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      http: {
        method,
        path,
        protocol: 'HTTP/1.1',
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: crypto.randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toISOString(),
      timeEpoch: now.getTime(),
    },
    ...(body === '' ? {} : { body }),
    isBase64Encoded: false,
  };
}

/** Serves one request with the API handler, exactly as the function URL would call it. */
export async function serveWithHandler(
  handler: ApiHandler,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
): Promise<void> {
  const gone = new AbortController();
  response.on('close', () => gone.abort());
  let body: string;
  try {
    body = await readBody(request);
  } catch (error) {
    response.writeHead(413, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 'invalid_request', message: (error as Error).message } }));
    return;
  }
  const result = await handler(toFunctionUrlEvent(request, path, body), { signal: gone.signal, streaming: true });
  if (typeof result === 'string') {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(result);
    return;
  }
  if (result.stream !== undefined) {
    // Each piece goes out as it comes (a chat answer streaming); a client that leaves ends it.
    response.writeHead(result.statusCode ?? 200, result.headers as Record<string, string> | undefined);
    response.flushHeaders();
    for await (const piece of result.stream) {
      if (gone.signal.aborted) break;
      response.write(piece);
    }
    response.end();
    return;
  }
  response.writeHead(result.statusCode ?? 200, result.headers as Record<string, string> | undefined);
  response.end(result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : (result.body ?? ''));
}
