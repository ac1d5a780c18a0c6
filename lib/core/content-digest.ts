import { createHash } from 'node:crypto';

/** What a payload pointer promises about the blob it names: its size and its SHA-256, hex. */
export interface ContentDigest {
  readonly sha256: string;
  readonly bytes: number;
}

/** The digest of a payload's UTF-8 text. */
export function contentDigest(text: string): ContentDigest {
  const body = Buffer.from(text, 'utf8');
  return { sha256: createHash('sha256').update(body).digest('hex'), bytes: body.length };
}

/** Whether `text` is exactly the payload `digest` describes. */
export const matchesDigest = (text: string, digest: ContentDigest): boolean => {
  const actual = contentDigest(text);
  return actual.bytes === digest.bytes && actual.sha256 === digest.sha256;
};

/**
 * Whether a blob key lies under `prefix/` with no `.` or `..` segment: S3 keys are literal, but a
 * file-backed store (or a copy tool) would resolve such a segment out of the prefix.
 */
export function isKeyUnder(key: string, prefix: string): boolean {
  return key.startsWith(`${prefix}/`) && !key.split('/').some((segment) => segment === '.' || segment === '..');
}

/** Where a producer puts a ticket input too large for a message: under its own tenant and agent. */
export const ticketBlobPrefix = (tenant: string, agent: string): string => `tickets/${tenant}/${agent}`;

/**
 * The digest an approval names: the SHA-256 of the parsed tool input's JSON text, so a decision
 * holds only for the input it was made on (lib/core/call-identity.ts).
 */
export const inputDigest = (json: string): string => contentDigest(json).sha256;
