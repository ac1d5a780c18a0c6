import { createHash } from 'node:crypto';
import { randomHex } from './random-hex.ts';

/** The identity of a session: one conversation or one job. */
export interface SessionKey {
  readonly tenant: string;
  readonly agent: string;
  readonly id: string;
}

export const DEFAULT_TENANT = 'default';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
const SESSION_ID_CHARS = 26; // 130 bits of sha256: collision-free for any realistic volume
/** Every session id is derived (deriveSessionId, deriveChildSessionId): 26 base32 characters. */
export const SESSION_ID_PATTERN = /^[a-z2-7]{26}$/;

export { NAME_PATTERN } from './resources.ts';

function base32(bytes: Uint8Array, chars: number): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += BASE32[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= 0xff;
  }
  return out;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/**
 * Derives a session id from (tenant, agent, ticketId), so a resubmitted ticket lands on the same
 * session and `baton submit` can print the id before intake runs.
 * @example deriveSessionId('default', 'order-investigator', 'T-1001')
 */
export function deriveSessionId(tenant: string, agent: string, ticketId: string): string {
  return base32(sha256(`${tenant}|${agent}|${ticketId}`), SESSION_ID_CHARS);
}

/** A child task's id, derived from its parent and the call that started it. */
export function deriveChildSessionId(parent: SessionKey, seq: number, toolCallId: string): string {
  return base32(sha256(`${parent.tenant}|${parent.agent}|${parent.id}|${seq}|${toolCallId}`), SESSION_ID_CHARS);
}

/** A stable hash of a JSON value (object keys sorted), used to refuse a reused ticket id. */
export function hashJson(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A leg's owner id: the invocation id plus a random suffix, unique even when Lambda reuses ids. */
export function newOwnerId(invocationId: string): string {
  return `${invocationId}:${randomHex(6)}`;
}

/** The nonce a yielding leg stores and puts in its continuation: 128 random bits, hex. */
export const newHandoffNonce = (): string => randomHex(16);
export const HANDOFF_PATTERN = /^[0-9a-f]{32}$/;

/** A unique write id, stamped on journal entries to recognise one's own retried write. */
export const newWriteId = (): string => randomHex(8);

/** Where the runtime gets the ids it mints, injected so tests can make them predictable. */
export interface IdSource {
  /** A leg's owner id for this invocation. */
  ownerId(invocationId: string): string;
  /** A journal entry's write id. */
  writeId(): string;
  /** The nonce a yielding leg stores and its continuation carries. */
  handoffNonce(): string;
}

/** Random ids: what the deployed runtime uses. */
export const randomIds: IdSource = { ownerId: newOwnerId, writeId: newWriteId, handoffNonce: newHandoffNonce };

/** Predictable ids (`<invocation>:o1`, `w1`, `w2`, …): unique within one source, for tests. */
export function sequentialIds(): IdSource {
  let owners = 0;
  let writes = 0;
  let nonces = 0;
  return {
    ownerId: (invocationId) => `${invocationId}:o${++owners}`,
    writeId: () => `w${++writes}`,
    handoffNonce: () => (++nonces).toString(16).padStart(32, '0'),
  };
}

/**
 * The idempotency key handed to a tool call: identical on every re-run of the same call.
 * `modelSeq` is the seq of the model entry that requested the call.
 */
export function idempotencyKey(key: SessionKey, modelSeq: number, toolCallId: string): string {
  return `${key.tenant}:${key.agent}:${key.id}:${modelSeq}:${toolCallId}`;
}

export const formatSessionKey = (key: SessionKey): string => `${key.tenant}/${key.agent}/${key.id}`;
