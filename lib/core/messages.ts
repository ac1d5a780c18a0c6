import * as z from 'zod';
import { HANDOFF_PATTERN, NAME_PATTERN, SESSION_ID_PATTERN } from './ids.ts';
import { isCleanText } from './json-depth.ts';
import { TENANT_PATTERN } from './resources.ts';
import { SpendLimitsSchema } from './spend.ts';
import { KickReason, OutcomeStatus } from './vocabulary.ts';

/** Queue message contracts. Each carries `v`; a consumer refuses versions it does not know. */

const name = (what: string) => z.string().regex(NAME_PATTERN, `${what} must match ${NAME_PATTERN}`);

/**
 * The message size Baton keeps every queue message within: SQS's 256 KiB (body and attributes),
 * the limit of queues created before SQS raised its maximum to 1 MiB. The adapters refuse larger.
 */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** A ticket input or a result output above this travels through the payload bucket (room left for the rest). */
export const INLINE_PAYLOAD_LIMIT_BYTES = 200 * 1024;

/**
 * A large ticket input lives in the payload bucket; the ticket carries its key, under
 * `tickets/{tenant}/{agent}/`, and the size and SHA-256 (hex) of its UTF-8 text, checked on read.
 */
export const BlobRef = z
  .object({
    $blob: z.string().min(1).max(1024),
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lowercase hex digits'),
    bytes: z.number().int().positive(),
  })
  .strict();
export type BlobRef = z.infer<typeof BlobRef>;

/**
 * A ticket id names a session (hashed as UTF-8): a lone surrogate would be replaced in the hash,
 * so distinct ids could share one session. Ids are checked as strictly as inputs.
 */
export const TicketId = z
  .string()
  .min(1)
  .max(128)
  .refine(isCleanText, 'ticket id must be well-formed Unicode without control characters');

export const Ticket = z
  .object({
    v: z.literal(1).default(1),
    ticketId: TicketId,
    agent: name('agent'),
    /** Not `tickets` or `results`: the payload bucket's own prefixes (lib/core/resources.ts). */
    tenant: z
      .string()
      .regex(TENANT_PATTERN, `tenant must match ${NAME_PATTERN} and not be "tickets" or "results"`)
      .optional(),
    /** A further turn of this conversation (the ticketId is the turn's id); absent, a new session. */
    sessionId: z.string().min(1).max(64).optional(),
    input: z.unknown().refine((value) => value !== undefined, 'input is required'),
    /**
     * Spend limits for this ticket's turn, within the agent's ceiling (a limit above the agent's is
     * refused): maxTokensPerTurn, maxCostPerSession, maxModelCallsPerTurn, onBudget.
     */
    limits: SpendLimitsSchema.optional(),
  })
  .strict();
export type Ticket = z.infer<typeof Ticket>;

export const SessionRef = z.object({
  tenant: name('tenant'),
  agent: name('agent'),
  id: z.string().regex(SESSION_ID_PATTERN, 'session id must be 26 base32 characters'),
});

export const Kick = z
  .object({
    v: z.literal(1),
    session: SessionRef,
    reason: z.enum(Object.values(KickReason) as [KickReason, ...KickReason[]]),
    fromEpoch: z.number().int().nonnegative().optional(),
    /**
     * A continuation's proof that it comes from the leg that yielded: the nonce that leg stored on
     * the session record. The epoch alone is a small counter anyone could guess.
     */
    handoff: z.string().regex(HANDOFF_PATTERN).optional(),
    turnId: z.string().optional(),
    /** Delays past SQS's 15-minute cap are chained: a kick early for its time is re-sent. */
    notBefore: z.number().int().optional(),
  })
  .strict();
export type Kick = z.infer<typeof Kick>;

export const Usage = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;

export const Result = z
  .object({
    v: z.literal(1),
    ticketId: z.string(),
    tenant: z.string(),
    agent: z.string(),
    sessionId: z.string(),
    turnId: z.string(),
    status: z.enum(Object.values(OutcomeStatus) as [OutcomeStatus, ...OutcomeStatus[]]),
    output: z.unknown().optional(),
    error: z.string().optional(),
    legs: z.number().int().nonnegative(),
    steps: z.number().int().nonnegative(),
    usage: Usage,
  })
  .strict();
export type Result = z.infer<typeof Result>;

/** Message attribute names Baton uses (SQS allows 10; Baton keeps to three). */
export const ATTR_TRACEPARENT = 'traceparent';
export const ATTR_RESULT_ID = 'baton-result-id';

/** Formats zod issues as one line that names each offending field. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}
