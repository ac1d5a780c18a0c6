/**
 * The part of `fetch` the HTTP client uses, over node:http (node:https for an https address).
 * Node's global fetch loads its HTTP stack (undici) on the first call, ~100 ms of a `baton status`
 * that is over in a few hundred: a one-call command (the CLI) passes this instead. It answers the
 * whole body at once, as the client reads it.
 */

/** What a request gives: the method, the headers, a text body, a signal that aborts it. */
export interface FetchInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal?: AbortSignal;
}

/** What the client reads of an answer (a Response has all of it). */
export interface FetchAnswer {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}

/** A fetch as the client calls it: the global one fits, and so does nodeHttpFetch. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchAnswer>;

/**
 * Fails as fetch does ("fetch failed", the reason as `cause`) so a caller's message names the
 * cause the same way; an abort rejects with the signal's reason.
 */
export const nodeHttpFetch: FetchLike = async (url, init) => {
  const target = new URL(url);
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new TypeError(`fetch failed`, { cause: new Error(`unsupported protocol ${target.protocol}`) });
  // Not `import('node:http')`: its ES module facade reads every export, WebSocket's lazy getter
  // among them, which loads undici after all.
  const { request } =
    target.protocol === 'https:' ? process.getBuiltinModule('node:https') : process.getBuiltinModule('node:http');
  init.signal?.throwIfAborted();
  const body = init.body === undefined ? undefined : Buffer.from(init.body, 'utf8');
  return new Promise<FetchAnswer>((resolve, reject) => {
    const failed = (error: Error) =>
      reject(init.signal?.aborted ? init.signal.reason : new TypeError('fetch failed', { cause: error }));
    const req = request(
      target,
      {
        method: init.method ?? 'GET',
        headers: { ...init.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) },
        ...(init.signal === undefined ? {} : { signal: init.signal }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', failed);
        res.on('close', () => {
          if (!res.complete) failed(new Error('the connection closed before the answer ended'));
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            ok: status >= 200 && status < 300,
            status,
            headers: {
              get: (name) => {
                const value = res.headers[name.toLowerCase()];
                return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
              },
            },
            text: async () => text,
          });
        });
      },
    );
    req.on('error', failed);
    req.end(body);
  });
};
