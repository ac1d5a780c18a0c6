import type { Role } from './roles.ts';

/** Base of every Baton error. `retryable` says whether spending retry budget on it can help. */
export class BatonError extends Error {
  readonly retryable: boolean;
  constructor(message: string, options?: ErrorOptions & { retryable?: boolean }) {
    super(message, options);
    this.name = 'BatonError';
    this.retryable = options?.retryable ?? false;
  }
}

/** Input that can never succeed (schema, unknown agent, too large): fail at once, never retry. */
export class InvalidInputError extends BatonError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { ...options, retryable: false });
    this.name = 'InvalidInputError';
  }
}

/** A ticket id reused with a different input. */
export class TicketConflictError extends InvalidInputError {
  constructor(readonly ticketId: string) {
    super(`ticket ${ticketId} was already submitted with a different input`);
    this.name = 'TicketConflictError';
  }
}

/** A ticket whose sender is not bound to its tenant: refused without touching that tenant's records. */
export class TenantNotAllowedError extends InvalidInputError {
  constructor(message: string) {
    super(message);
    this.name = 'TenantNotAllowedError';
  }
}

/** Stored state failed validation: it is treated as untrusted input, never repaired silently. */
export class CorruptStateError extends BatonError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, { ...options, retryable: false });
    this.name = 'CorruptStateError';
  }
}

/**
 * A journal entry in a format newer than this build reads (a newer worker wrote it during a
 * rolling deploy). Not corruption: the session is left to a worker that reads it.
 */
export class NewerJournalFormatError extends BatonError {
  constructor(
    readonly seq: number,
    readonly format: number,
    readonly understood: number,
  ) {
    super(`journal entry ${seq} is in format ${format}; this build reads formats up to ${understood}`);
    this.name = 'NewerJournalFormatError';
  }
}

/**
 * A session record holding an inbox item of a kind this build does not know (a newer API or
 * worker posted it during a rolling deploy: a stop of one turn, say). Not corruption: the kick is
 * left for a newer worker, as for a newer journal entry.
 */
export class NewerRecordFormatError extends BatonError {
  constructor(readonly what: string) {
    super(`${what} is of a kind this build does not know`);
    this.name = 'NewerRecordFormatError';
  }
}

/** Another owner holds the lease (or took it over): the caller must stop writing. */
export class LeaseLostError extends BatonError {
  constructor(
    message: string,
    readonly holder?: { owner?: string | undefined; until?: number | undefined; epoch: number },
  ) {
    super(message);
    this.name = 'LeaseLostError';
  }
}

/** A journal seq already holds an entry written by someone else: the writer is stale. */
export class SeqTakenError extends LeaseLostError {
  constructor(readonly seq: number) {
    super(`journal seq ${seq} is already written by another owner`);
    this.name = 'SeqTakenError';
  }
}

/** A payload over the hard cap: deterministic, never retried. */
export class PayloadTooLargeError extends InvalidInputError {
  constructor(what: string, bytes: number, capBytes: number) {
    super(`${what} is ${bytes} bytes, over the hard cap of ${capBytes} bytes`);
    this.name = 'PayloadTooLargeError';
  }
}

/** A blob larger than its reader allows: refused before its body is read, never retried. */
export class BlobTooLargeError extends BatonError {
  constructor(
    readonly key: string,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`blob ${key} is ${bytes} bytes, more than the ${maxBytes} allowed`, { retryable: false });
    this.name = 'BlobTooLargeError';
  }
}

/**
 * The journal could not be written for a reason outside the step (a throttle or a 5xx the SDK
 * gave up on). Never a turn's outcome: the leg stops and the next owner recovers the turn.
 */
export class InfrastructureError extends Error {
  constructor(what: string, cause: unknown) {
    super(`${what}: ${errorMessage(cause)}`, { cause });
    this.name = 'InfrastructureError';
  }
}

/**
 * Error names the AWS SDK gives a throttle (as smithy's service-error-classification lists them;
 * DynamoDB's own are ProvisionedThroughputExceededException, ThrottlingException and
 * RequestLimitExceeded).
 */
const THROTTLING_ERROR_NAMES: ReadonlySet<string> = new Set([
  'BandwidthLimitExceeded',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);

/** Error names of a request that timed out before any answer (smithy's transient error codes). */
const TIMEOUT_ERROR_NAMES: ReadonlySet<string> = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);

/** Node's codes for a connection that failed, was cut off or timed out. */
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** What an AWS SDK error carries besides its name. */
interface SdkErrorFields {
  readonly $retryable?: unknown;
  readonly $metadata?: { readonly httpStatusCode?: number | undefined } | undefined;
  readonly code?: unknown;
}

/**
 * Is `error` the infrastructure's trouble, not the step's: a store or queue request throttled,
 * answered with a 5xx, cut off by the network, or marked retryable by the SDK (`$retryable`), past
 * the SDK's own retries — or an InfrastructureError. Such an error is never a turn's outcome and
 * spends no retry budget: the leg stops and the session is taken up again (a recovery). Baton's
 * other errors keep their meaning: a model's StepError, a throttle of the model included, is the
 * step's, under its retry policy. The one rule for "whose fault is it" (lib/runtime/leg/retry.ts).
 */
export function isInfrastructureError(error: unknown): error is Error {
  if (error instanceof InfrastructureError) return true;
  if (error instanceof BatonError || !(error instanceof Error)) return false;
  // fetch wraps a network failure: `TypeError: fetch failed`, the socket's error as its cause.
  return isTransientRequestError(error) || isTransientRequestError(error.cause);
}

/** An AWS SDK or network error that a later attempt can cure. */
function isTransientRequestError(value: unknown): boolean {
  if (!(value instanceof Error)) return false;
  const sdk = value as Error & SdkErrorFields;
  const status = sdk.$metadata?.httpStatusCode ?? 0;
  return (
    sdk.$retryable !== undefined ||
    THROTTLING_ERROR_NAMES.has(value.name) ||
    TIMEOUT_ERROR_NAMES.has(value.name) ||
    status === 429 ||
    status >= 500 ||
    (typeof sdk.code === 'string' && NETWORK_ERROR_CODES.has(sdk.code))
  );
}

/** An error raised by a model or tool; `retryable` decides whether the retry policy applies. */
export class StepError extends BatonError {
  /** The provider's own "retry after" (e.g. a 429's Retry-After): the next attempt waits at least this long. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: ErrorOptions & { retryable?: boolean; retryAfterMs?: number | undefined }) {
    super(message, options);
    this.name = 'StepError';
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** How much of a thrown non-Error object's JSON goes into an error message. */
const MAX_THROWN_CHARS = 1_000;

/** What an error says, whatever was thrown: an Error's name and message, a string, or what a non-Error value holds. */
export const errorMessage = (error: unknown): string => {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  if (typeof error === 'string') return error;
  if (error === null || typeof error !== 'object') return `non-Error thrown: ${String(error)}`;
  // A thrown non-Error object: its JSON says what it holds, where String() says "[object Object]".
  let json: string | undefined;
  try {
    json = JSON.stringify(error);
  } catch {
    json = undefined;
  }
  const shown = json ?? `{${Object.keys(error).join(', ')}} (not serialisable)`;
  return `non-Error thrown: ${shown.length > MAX_THROWN_CHARS ? `${shown.slice(0, MAX_THROWN_CHARS)}…` : shown}`;
};

/**
 * An input or operation the session refuses: not found, finished, one-shot, a stale view, too many
 * pending, released, or (a release with `--no-cancel`) tasks still running.
 */
export class TurnRefusedError extends InvalidInputError {
  constructor(
    readonly reason: 'not-found' | 'finished' | 'one-shot' | 'stale' | 'full' | 'released' | 'tasks-running',
    message: string,
  ) {
    super(message);
  }
}

/** What a stream asked for does not exist: an unknown session, or a turn the session never had. */
export class NotFoundError extends InvalidInputError {}

/** What a stream asked for existed but is past the session's retention: expired, or a cursor behind the oldest kept entry. */
export class GoneError extends InvalidInputError {}

/** A caller without the role an operation needs (lib/core/roles.ts): refused before anything is read or written. */
export class RoleRequiredError extends InvalidInputError {
  constructor(
    readonly role: Role,
    message: string,
  ) {
    super(message);
    this.name = 'RoleRequiredError';
  }
}
