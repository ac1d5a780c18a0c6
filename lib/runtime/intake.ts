import type { AgentDefinition } from '../agent/define-agent.ts';
import { isKeyUnder, matchesDigest, ticketBlobPrefix } from '../core/content-digest.ts';
import {
  BlobTooLargeError,
  errorMessage,
  InvalidInputError,
  PayloadTooLargeError,
  TenantNotAllowedError,
  TicketConflictError,
} from '../core/errors.ts';
import { DEFAULT_TENANT, deriveSessionId, hashJson, NAME_PATTERN, type SessionKey } from '../core/ids.ts';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../core/json-depth.ts';
import { BlobRef, describeIssues, Ticket, TicketId } from '../core/messages.ts';
import { turnLimits } from '../core/spend.ts';
import { tenantRefusal } from '../core/tenancy.ts';
import { childContext, newTraceId, type TraceContext } from '../core/trace-context.ts';
import { admitInput } from './admission.ts';
import type { RuntimeDeps } from './deps.ts';
import { itemTtlSeconds, newSessionExpiry, newSessionVersions } from './deps.ts';
import { retentionSeconds } from './expiry.ts';
import { acceptTurn, inlineInput } from './turn-intake.ts';

export type IntakeDeps = Pick<
  RuntimeDeps,
  'store' | 'workQueue' | 'results' | 'blobs' | 'clock' | 'agents' | 'telemetry' | 'config'
>;

export interface Accepted {
  readonly key: SessionKey;
  readonly turnId: string;
  /** False when the ticket was seen before: it converged on the same session and turn. */
  readonly created: boolean;
}

/** Where a ticket came from, as the queue reports it. */
export interface TicketOrigin {
  /** The SQS record's `SenderId`: who sent it, as IAM authenticated it. */
  readonly senderId?: string | undefined;
  readonly messageId?: string | undefined;
  /** When the message was first sent (SQS `SentTimestamp`, ms): a redelivery keeps it, a new send does not. */
  readonly sentAt?: number | undefined;
}

/**
 * Accepts a ticket: validates it, persists its input as a turn (a resubmission converges on the
 * same session and turn), then kicks. The caller acknowledges the message only after this resolves.
 * Throws InvalidInputError for a ticket that can never succeed; other errors are transient.
 */
export async function acceptTicket(
  body: string,
  trace: TraceContext | undefined,
  deps: IntakeDeps,
  origin: TicketOrigin = {},
): Promise<Accepted> {
  const ticket = parseTicket(body);
  const tenant = ticket.tenant ?? DEFAULT_TENANT;
  // First, before its agent is named or its blob read: a sender acts only for its own tenants.
  const refusal = tenantRefusal(deps.config.producers, origin.senderId, tenant);
  if (refusal !== undefined) throw new TenantNotAllowedError(refusal);
  const agent = deps.agents.get(ticket.agent);
  if (!agent)
    throw new InvalidInputError(
      `unknown agent "${ticket.agent}" (deployed: ${[...deps.agents.keys()].join(', ') || 'none'})`,
    );
  const input = await resolveInput(ticket.input, tenant, agent, deps);
  admitInput(input, agent, `ticket ${ticket.ticketId} input`);
  // A limit above the agent's ceiling is refused here, before anything is stored.
  if (ticket.limits !== undefined) turnLimits(agent.limits, ticket.limits);

  const now = deps.clock.now();
  if (ticket.sessionId !== undefined) {
    const turn = await acceptTurn(
      {
        key: { tenant, agent: ticket.agent, id: ticket.sessionId },
        turnId: ticket.ticketId,
        ticketId: ticket.ticketId,
        input,
        maxPendingInputs: deps.config.maxPendingInputs,
        sweepGraceMs: deps.config.sweepGraceMs,
        limits: ticket.limits,
      },
      deps,
    );
    deps.telemetry.logger.info(turn.queued ? 'turn accepted' : 'turn resubmitted; converged', {
      tenant,
      agent: ticket.agent,
      sessionId: ticket.sessionId,
      turnId: ticket.ticketId,
    });
    return { key: turn.key, turnId: turn.turnId, created: turn.queued };
  }
  const key: SessionKey = { tenant, agent: ticket.agent, id: deriveSessionId(tenant, ticket.agent, ticket.ticketId) };
  await refuseRedeliveryPastRetention(key, ticket.ticketId, origin.sentAt, now, deps);
  const turnId = ticket.ticketId;
  const inputHash = hashJson(input);
  const turn = await deps.store.putTurn(
    key,
    {
      turnId,
      ticketId: ticket.ticketId,
      input,
      inputHash,
      createdAt: now,
      ...(ticket.limits === undefined ? {} : { limits: ticket.limits }),
    },
    itemTtlSeconds(deps.config, now),
  );
  if (!turn.created && turn.turn.inputHash !== inputHash) throw new TicketConflictError(ticket.ticketId);
  if (!turn.created) await refuseRunPastRetention(key, ticket.ticketId, turn.turn.createdAt, now, deps);

  const session = await deps.store.createSession({
    key,
    ticketId: ticket.ticketId,
    activeTurnId: turnId,
    // A turn with limits is read from its item, which carries them (the record carries the input alone).
    activeInput: ticket.limits === undefined ? inlineInput(turnId, input) : undefined,
    traceId: trace?.traceId ?? newTraceId(),
    now,
    sweepAt: now + deps.config.sweepGraceMs,
    ...newSessionExpiry(deps.config, now),
    ...newSessionVersions(deps.config, agent),
    conversation: agent.conversation === true,
  });
  // Kick even when the session existed: the first kick may be what was lost. A duplicate is dropped.
  await deps.workQueue.sendKick(
    { v: 1, session: key, reason: 'first', turnId },
    { trace: childContext(session.record.traceId) },
  );
  deps.telemetry.logger.info(turn.created ? 'ticket accepted' : 'ticket resubmitted; converged', {
    tenant,
    agent: key.agent,
    sessionId: key.id,
    turnId,
    traceId: session.record.traceId,
  });
  return { key, turnId, created: turn.created };
}

/**
 * A message first sent longer than a retention ago (a redrive from the DLQ, whose messages keep
 * their enqueue time for up to 14 days) may have run a session that has since expired: with no
 * record left to converge on, running it again would repeat its effects under the same ids. It is
 * refused instead. A session still on record converges as any resubmission does; a producer's new
 * send of an old ticket id carries a new timestamp and starts afresh (docs/RELIABILITY.md).
 */
async function refuseRedeliveryPastRetention(
  key: SessionKey,
  ticketId: string,
  sentAt: number | undefined,
  now: number,
  deps: IntakeDeps,
): Promise<void> {
  const retentionMs = retentionSeconds(deps.config.retentionDays) * 1000;
  if (sentAt === undefined || !(now - sentAt > retentionMs)) return;
  if (await deps.store.getSession(key)) return;
  const days = (ms: number) => {
    const n = Math.floor(ms / 86_400_000);
    return `${n} day${n === 1 ? '' : 's'}`;
  };
  throw new InvalidInputError(
    `ticket ${ticketId} was first sent ${days(now - sentAt)} ago, longer than the session retention ` +
      `(${days(retentionMs)}), and its session is not on record: it may have run and expired, so it is not run again`,
  );
}

/**
 * The ticket's turn is on record from longer than a retention ago, and its session record is gone:
 * the session ran and expired, and only items that outlive the record are left (they expire half
 * a retention after it). Creating a record now would resume over them; the ticket is refused.
 * (A younger turn without a record is an intake that died between the two writes: it goes on.)
 */
async function refuseRunPastRetention(
  key: SessionKey,
  ticketId: string,
  turnCreatedAt: number,
  now: number,
  deps: IntakeDeps,
): Promise<void> {
  if (!(now - turnCreatedAt > retentionSeconds(deps.config.retentionDays) * 1000)) return;
  if (await deps.store.getSession(key)) return;
  throw new InvalidInputError(
    `ticket ${ticketId} ran in a session that has expired (its turn was accepted ${new Date(turnCreatedAt).toISOString()}); it is not run again`,
  );
}

function parseTicket(body: string): Ticket {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (error) {
    throw new InvalidInputError(`ticket body is not valid JSON: ${errorMessage(error)}`);
  }
  // Before anything walks it recursively: a stack overflow would look transient and be retried.
  if (exceedsJsonDepth(json)) throw new InvalidInputError(`ticket is nested deeper than ${MAX_JSON_DEPTH} levels`);
  const parsed = Ticket.safeParse(json);
  if (!parsed.success) throw new InvalidInputError(`ticket is invalid: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * A ticket input over the SQS limit arrives as a reference to the payload bucket. The reference is
 * the producer's word: its key must lie under the ticket's own tenant and agent, its declared size
 * within the agent's cap (checked before reading, and no more than that is read), and the body
 * must match its hash.
 */
async function resolveInput(
  input: unknown,
  tenant: string,
  agent: AgentDefinition,
  deps: IntakeDeps,
): Promise<unknown> {
  if (!(input && typeof input === 'object' && Object.hasOwn(input, '$blob'))) return input;
  const parsed = BlobRef.safeParse(input);
  if (!parsed.success)
    throw new InvalidInputError(`ticket input is a blob reference but is invalid: ${describeIssues(parsed.error)}`);
  const ref = parsed.data;
  const prefix = ticketBlobPrefix(tenant, agent.name);
  if (!isKeyUnder(ref.$blob, prefix))
    throw new InvalidInputError(`ticket input blob ${ref.$blob} is not under ${prefix}/`);
  if (ref.bytes > agent.limits.maxPayloadBytes)
    throw new PayloadTooLargeError(`ticket input blob ${ref.$blob}`, ref.bytes, agent.limits.maxPayloadBytes);
  if (!deps.blobs) throw new InvalidInputError('ticket input is a blob reference but no payload bucket is configured');
  let text: string;
  try {
    text = await deps.blobs.get(ref.$blob, { maxBytes: ref.bytes });
  } catch (error) {
    if (!(error instanceof BlobTooLargeError)) throw error;
    throw new InvalidInputError(
      `ticket input blob ${ref.$blob} is larger than the ${ref.bytes} bytes its pointer declares`,
    );
  }
  if (!matchesDigest(text, ref))
    throw new InvalidInputError(`ticket input blob ${ref.$blob} does not match the content hash the ticket carries`);
  let resolved: unknown;
  try {
    resolved = JSON.parse(text);
  } catch (error) {
    throw new InvalidInputError(`ticket input blob ${ref.$blob} is not valid JSON: ${errorMessage(error)}`);
  }
  // What it holds is admitted as any input is (depth, Unicode, size, schema), by the caller.
  return resolved;
}

/** The ids an invalid ticket still yields, so its failure can be recorded where an operator looks. */
export function salvageIds(
  body: string,
): { ticketId: string; agent: string; tenant: string; sessionId?: string | undefined } | undefined {
  try {
    const json = JSON.parse(body) as Record<string, unknown>;
    const tenant = typeof json.tenant === 'string' ? json.tenant : DEFAULT_TENANT;
    if (typeof json.ticketId !== 'string' || typeof json.agent !== 'string') return undefined;
    // An id that is not itself (a lone surrogate hashes like U+FFFD) could record onto another ticket's session.
    if (!NAME_PATTERN.test(json.agent) || !NAME_PATTERN.test(tenant) || !TicketId.safeParse(json.ticketId).success)
      return undefined;
    const sessionId = typeof json.sessionId === 'string' && json.sessionId.length <= 64 ? json.sessionId : undefined;
    return { ticketId: json.ticketId, agent: json.agent, tenant, ...(sessionId ? { sessionId } : {}) };
  } catch {
    return undefined;
  }
}

/**
 * Records a refused ticket as a failed outcome an operator can read (status, results queue),
 * on the producer's trace when it sent one, when its ids can be salvaged. Returns false when they cannot: the caller dead-letters it.
 * A refusal never touches a turn or session another ticket with the same id wrote (accepted, or
 * between its writes), and its result then carries a turn id of its own, so a consumer that
 * de-duplicates on session and turn never confuses it with the accepted ticket's result.
 */
export async function recordRejectedTicket(
  body: string,
  reason: string,
  deps: IntakeDeps,
  origin: TicketOrigin = {},
  trace?: TraceContext,
): Promise<boolean> {
  const ids = salvageIds(body);
  if (!ids) return false;
  // A sender outside the tenant writes nothing there (it could squat the tenant's future ticket
  // id) and names nothing of it: the ticket id and session id it gave, or would derive, may be
  // the tenant's own, which its consumers dedupe and correlate on. Its refusal is published under
  // ids of its own, from the message, and says only why.
  const outsider = tenantRefusal(deps.config.producers, origin.senderId, ids.tenant);
  if (outsider !== undefined) {
    const own = `refused:${origin.messageId ?? newTraceId()}`;
    const key = { tenant: ids.tenant, agent: ids.agent, id: own };
    await deps.results.publish(rejection({ ticketId: own }, key, own, outsider), { unattributed: true });
    return true;
  }
  const now = deps.clock.now();
  if (ids.sessionId !== undefined) {
    // A refused further turn: the conversation is not touched; the result says why.
    const conversation = { tenant: ids.tenant, agent: ids.agent, id: ids.sessionId };
    await deps.results.publish(rejection(ids, conversation, refusalTurnId(ids.ticketId, body), reason), {});
    return true;
  }
  const key: SessionKey = {
    tenant: ids.tenant,
    agent: ids.agent,
    id: deriveSessionId(ids.tenant, ids.agent, ids.ticketId),
  };
  const refusalOnly = () => deps.results.publish(rejection(ids, key, refusalTurnId(ids.ticketId, body), reason), {});
  if (await deps.store.getSession(key)) {
    await refusalOnly();
    return true;
  }
  // Claim the ticket id's turn for the refusal. If a ticket with this id wrote it first, that
  // ticket owns the id (it may be between its turn and its session write): leave it alone.
  const rejectedId = `rejected:${ids.ticketId}`;
  const claimed = await deps.store.putTurn(
    key,
    { turnId: ids.ticketId, ticketId: ids.ticketId, input: null, inputHash: rejectedId, createdAt: now },
    itemTtlSeconds(deps.config, now),
  );
  if (!claimed.created && claimed.turn.inputHash !== rejectedId) {
    await refusalOnly();
    return true;
  }
  await deps.store.setTurnOutcome(key, ids.ticketId, { status: 'failed', error: reason, at: now });
  await deps.store.createSession({
    key,
    ticketId: ids.ticketId,
    activeTurnId: ids.ticketId,
    // The producer's trace, as an accepted ticket's: the id `submit` printed finds the refusal too.
    traceId: trace?.traceId ?? newTraceId(),
    now,
    sweepAt: now,
    ...newSessionExpiry(deps.config, now),
    rejected: true,
  });
  await deps.results.publish(rejection(ids, key, ids.ticketId, reason), {});
  return true;
}

/** The turn id a refusal's result carries when the ticket id belongs to another ticket: derived from the refused body. */
const refusalTurnId = (ticketId: string, body: string): string => `${ticketId}~rejected-${hashJson(body).slice(0, 16)}`;

const rejection = (ids: { ticketId: string }, key: SessionKey, turnId: string, reason: string) => ({
  v: 1 as const,
  ticketId: ids.ticketId,
  tenant: key.tenant,
  agent: key.agent,
  sessionId: key.id,
  turnId,
  status: 'failed' as const,
  error: reason,
  legs: 0,
  steps: 0,
  usage: { inputTokens: 0, outputTokens: 0 },
});
