import type { z } from 'zod';
import { InvalidInputError, PayloadTooLargeError } from '../core/errors.ts';
import {
  ATTR_RESULT_ID,
  ATTR_TRACEPARENT,
  describeIssues,
  type Kick,
  MAX_MESSAGE_BYTES,
  type Result,
} from '../core/messages.ts';
import { formatTraceparent } from '../core/trace-context.ts';
import type { SendOptions } from '../ports/queues.ts';

/**
 * What every queue adapter does before a send, SQS or in memory alike: validate the body against
 * its contract, check the delay, name the message attributes. SDK-free.
 */

/** SQS's cap on DelaySeconds; longer delays are chained by the runtime. */
export const MAX_DELAY_SECONDS = 900;

/** The message, validated against its contract (defaults applied): a bad body is refused before it is sent. */
export function validateMessage<S extends z.ZodType>(schema: S, message: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(message);
  if (!parsed.success)
    throw new InvalidInputError(`${what} does not match its contract: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** Characters JSON carries raw that a queue refuses in a message body: U+FFFE and U+FFFF (SQS), astral ones (fauxqs). */
const OUTSIDE_SQS_CHARACTERS = /[\u{FFFE}\u{FFFF}\u{10000}-\u{10FFFF}]/gu;

/** A character as JSON `\uXXXX` escapes of its UTF-16 code units (a surrogate pair for an astral one). */
const escapeUtf16 = (character: string): string =>
  Array.from(
    { length: character.length },
    (_, i) => `\\u${character.charCodeAt(i).toString(16).padStart(4, '0')}`,
  ).join('');

/**
 * A message body as JSON text that SQS accepts: the same JSON value, with the characters SQS's
 * body alphabet leaves out (emoji among them: fauxqs refuses them, and U+FFFE/U+FFFF are refused
 * by SQS itself) written as `\u` escapes, which any JSON parser reads back unchanged.
 */
export const sqsMessageBody = (body: unknown): string =>
  JSON.stringify(body).replace(OUTSIDE_SQS_CHARACTERS, escapeUtf16);

/**
 * Refuses a message over the SQS limit before it is sent, as SQS would (body plus attribute
 * names and values). A refusal is deterministic: resending cannot help.
 */
export function checkMessageSize(body: unknown, attributes: Record<string, string>, what: string): void {
  const bytes =
    Buffer.byteLength(sqsMessageBody(body)) +
    Object.entries(attributes).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + 6, 0);
  if (bytes > MAX_MESSAGE_BYTES) throw new PayloadTooLargeError(`${what} message`, bytes, MAX_MESSAGE_BYTES);
}

/** DelaySeconds: whole seconds in [0, 900]; anything else is a caller's bug, refused. */
export function delaySecondsOf(options: SendOptions | undefined): number | undefined {
  const delay = options?.delaySeconds;
  if (delay === undefined) return undefined;
  if (!Number.isFinite(delay) || delay < 0 || delay > MAX_DELAY_SECONDS) {
    throw new InvalidInputError(`delay of ${delay} s is outside SQS's 0–${MAX_DELAY_SECONDS} s`);
  }
  return Math.ceil(delay);
}

/**
 * A kick due at `options.notBefore`: delayed up to SQS's cap, and carrying `notBefore` past it so
 * the receiver sends it on again. Without `notBefore` the kick and its options are unchanged.
 */
export function scheduleKick(
  kick: Kick,
  options: SendOptions | undefined,
  now: number,
): { kick: Kick; options: SendOptions | undefined } {
  const due = options?.notBefore;
  if (due === undefined) return { kick, options };
  const { notBefore: _due, ...rest } = options!;
  const delayMs = Math.max(0, due - now);
  const chained = delayMs > MAX_DELAY_SECONDS * 1000;
  const { notBefore: _stale, ...plain } = kick;
  return {
    kick: chained ? { ...plain, notBefore: due } : plain,
    options: { ...rest, delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.ceil(delayMs / 1000)) },
  };
}

/** The message attributes of a send: `traceparent` when a trace is given, plus the extras. */
export function messageAttributesOf(
  options: SendOptions | undefined,
  extra: Record<string, string> = {},
): Record<string, string> {
  const trace = options?.trace;
  return trace ? { ...extra, [ATTR_TRACEPARENT]: formatTraceparent(trace) } : { ...extra };
}

/** The id a result consumer dedupes on: one result per turn of a session. */
export const resultIdOf = (result: Pick<Result, 'sessionId' | 'turnId'>): string =>
  `${result.sessionId}/${result.turnId}`;

/** The extra attributes of a result message. */
export const resultAttributes = (result: Result): Record<string, string> => ({ [ATTR_RESULT_ID]: resultIdOf(result) });
