import type { IncomingHttpHeaders } from 'node:http';

/**
 * The names under which a browser reaches this machine's loopback and nothing else. A page of
 * another site can make the browser send to 127.0.0.1, and a DNS-rebinding page can do it under
 * its own name (and then read the answers): neither comes in under one of these.
 */
const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

const hostnameOf = (authority: string): string | undefined => {
  try {
    return new URL(`http://${authority}`).hostname;
  } catch {
    return undefined;
  }
};

/** Whether an `Origin` is a page served from this machine's loopback (`null`, a sandboxed or file page, is not). */
const isLoopbackOrigin = (origin: string): boolean => {
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_NAMES.has(url.hostname);
  } catch {
    return false;
  }
};

/**
 * Why `baton dev`'s server refuses a request before reading it, or undefined: its Host must be a
 * loopback name (DNS rebinding) and its Origin, when a browser sends one, a loopback page (a
 * cross-site request). Tools such as the CLI and curl send no Origin.
 */
export function loopbackRefusal(headers: IncomingHttpHeaders): string | undefined {
  const host = headers.host;
  const hostname = host === undefined ? undefined : hostnameOf(host);
  if (hostname === undefined || !LOOPBACK_NAMES.has(hostname))
    return `Host ${host ?? '(none)'} is not a loopback name: baton dev answers only 127.0.0.1, localhost and [::1]`;
  const origin = headers.origin;
  if (origin !== undefined && !isLoopbackOrigin(origin))
    return `Origin ${origin} is not a page of this machine: baton dev answers only its own console and local tools`;
  return undefined;
}

/**
 * The console's headers: its scripts and styles come from itself only, it connects only to
 * itself, and no other page may frame it (clickjacking its buttons).
 */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // The console's first address carries the token: it must never leave in a Referer.
  'referrer-policy': 'no-referrer',
};
