import { type RetryPolicy, retryDelayAfter } from '../../agent/retry-policy.ts';
import { contentDigest } from '../../core/content-digest.ts';
import { errorMessage } from '../../core/errors.ts';
import { INLINE_PAYLOAD_LIMIT_BYTES, type Result } from '../../core/messages.ts';
import { isPublished } from '../../core/next-action.ts';
import { type OutcomeStatus, type SessionState, TERMINAL_SESSION_STATES } from '../../core/vocabulary.ts';
import type { LegContext } from '../leg/leg-context.ts';
import { isInterruption } from '../leg/leg-signals.ts';
import { post, postDepsOf } from './post.ts';

/**
 * Publishing a turn's result: its outcome on the turn item, its parent woken, the result message
 * on the results queue (a pointer to the payload bucket when it is too large), with backoff when
 * the queue refuses it. The exit that follows (exits.ts) records that it was sent.
 */

/** SQS caps a message delay at 15 minutes: a publish retry waits no longer. */
const MAX_PUBLISH_DELAY_MS = 15 * 60_000;

/**
 * The turns waiting behind the active one of a session that ends now: each gets the session's
 * end as its outcome (write-once: a retry finds the first) and a result, sent again by a retry
 * (same result id) so a crash between the two loses none.
 */
export async function settleQueuedTurns(leg: LegContext, state: SessionState): Promise<void> {
  const queued = leg.signals.record.turnQueue;
  if (queued.length === 0) return;
  const status: OutcomeStatus = state === 'failed' ? 'failed' : 'cancelled';
  const error = `session ${leg.key.id} ended (${state}) before this turn ran`;
  for (const turnId of queued) {
    const outcome = await leg.deps.store.setTurnOutcome(leg.key, turnId, { status, error, at: leg.deps.clock.now() });
    const result = resultMessage(leg, turnId, outcome.status, outcome.output, outcome.error);
    await leg.deps.results.publish(
      { ...result, legs: 0, steps: 0, usage: { inputTokens: 0, outputTokens: 0 } },
      {
        trace: leg.trace,
      },
    );
  }
  leg.log.info('queued turns settled as the session ended', { state, turns: queued.length });
}

/** The turn the journaled outcome belongs to: the journal's, or the active one when no input came before it. */
export function resultTurnId(leg: LegContext): string {
  return leg.journal.view.turnId ?? leg.signals.record.activeTurnId ?? '';
}

/** Was the journaled outcome's result sent: an undelivered `published` entry, or the record says so. */
export function resultPublished(leg: LegContext): boolean {
  const { view } = leg.journal;
  const record = leg.signals.record;
  return view.published || isPublished(view, record.activeTurnId, leg.resultSent ?? record.publishedTurnId);
}

/**
 * How often a result is sent before it is given up: 8 attempts over about 50 minutes, so a queue
 * that is down for a while still gets it, and one that can never take it ends the session.
 */
export const PUBLISH_RETRY_POLICY: RetryPolicy = {
  attempts: 8,
  initialDelayMs: 5_000,
  multiplier: 4,
  maxDelayMs: MAX_PUBLISH_DELAY_MS,
  jitter: 0.25,
};

/**
 * Records the journaled outcome on the turn and sends the result message; the caller's release
 * records that it did (`publishedTurnId`). A send that fails is journaled as an error with its backoff (false: the caller waits for the
 * retry); past the policy's attempts the result is given up, so a result the queue can never take
 * ends the session instead of looping for ever: `published` says it is undelivered, the turn
 * keeps the outcome (status shows it) and an error log and the ResultsUndelivered metric say so.
 */
export async function publish(leg: LegContext): Promise<boolean> {
  await leg.deps.failpoint('between-outcome-and-publish');
  const view = leg.journal.view;
  // A stopped turn's outcome is `cancelled` on the turn as in its result; only the journal says
  // it was stopped alone (what the session's exit reads).
  const { stopped: _stopped, ...outcome } = view.outcome!;
  const turnId = resultTurnId(leg);
  await leg.deps.store.setTurnOutcome(leg.key, turnId, { ...outcome, at: leg.deps.clock.now() });
  await notifyParent(leg);
  try {
    const result = await withinMessageLimit(
      leg,
      resultMessage(leg, turnId, outcome.status, outcome.output, outcome.error),
    );
    await leg.deps.results.publish(result, { trace: leg.trace });
  } catch (error) {
    if (isInterruption(error)) throw error;
    const attempt = view.failedAttempts + 1;
    const message = errorMessage(error);
    if (attempt < PUBLISH_RETRY_POLICY.attempts) {
      const retryAt = leg.deps.clock.now() + retryDelayAfter(PUBLISH_RETRY_POLICY, attempt, leg.deps.random(), error);
      await leg.journal.append('error', { source: 'publish', message, attempt, retryAt });
      leg.log.warn('result not published; retrying after backoff', { turnId, attempt, retryAt, error: message });
      return false;
    }
    const undelivered = `result not published after ${attempt} attempts; last error: ${message}`;
    leg.log.error('result given up; the turn keeps its outcome', { turnId, error: undelivered });
    leg.deps.telemetry.metrics.count('ResultsUndelivered');
    await leg.journal.append('published', { undelivered });
    return true;
  }
  return true;
}

/**
 * A task's outcome wakes its parent: one bump (pendingVersion + 1) and a kick, whatever the
 * number of its siblings. A parent idle between turns, or finished, has nothing waiting for it
 * (its next turn reads every task's status from the store), so it is left alone. A retried
 * publish bumps again, which the parent absorbs as one more look.
 */
export async function notifyParent(leg: LegContext): Promise<void> {
  const parentKey = leg.signals.record.parent;
  if (parentKey === undefined) return;
  const parent = await leg.deps.store.getSession(parentKey);
  if (!parent || parent.state === 'idle' || TERMINAL_SESSION_STATES.includes(parent.state)) return;
  await post(postDepsOf(leg.deps), parentKey, { kind: 'child-outcome' });
}

/** Longest error text a result message carries; the turn record keeps the whole of it. */
const MAX_RESULT_ERROR_CHARS = 8 * 1024;

/**
 * A result whose output would pass the queue's message limit carries a pointer into the payload
 * bucket instead (`{"$blob": key, sha256, bytes}`, as tickets do); with no bucket it carries no output and says
 * why. The key is the turn's, so a republish rewrites the same object.
 */
export async function withinMessageLimit(leg: LegContext, result: Result): Promise<Result> {
  const bounded =
    result.error !== undefined && result.error.length > MAX_RESULT_ERROR_CHARS
      ? { ...result, error: `${result.error.slice(0, MAX_RESULT_ERROR_CHARS)}… (truncated)` }
      : result;
  if (Buffer.byteLength(JSON.stringify(bounded)) <= INLINE_PAYLOAD_LIMIT_BYTES) return bounded;
  const { output, ...rest } = bounded;
  const bytes = Buffer.byteLength(JSON.stringify(output));
  const blobs = leg.deps.blobs;
  if (!blobs) {
    const why = `output of ${bytes} bytes is over the results queue message limit and no payload bucket is configured; read it with baton status`;
    leg.log.error('result output left out of the message', { bytes });
    return { ...rest, error: rest.error ? `${rest.error}; ${why}` : why };
  }
  const key = `results/${encodeURIComponent(leg.key.tenant)}/${encodeURIComponent(leg.key.agent)}/${encodeURIComponent(leg.key.id)}/${encodeURIComponent(result.turnId)}.json`;
  const text = JSON.stringify(output);
  await blobs.put(key, text);
  // The same pointer shape as a ticket's: the reader can check what it reads.
  return { ...rest, output: { $blob: key, ...contentDigest(text) } };
}

export function resultMessage(
  leg: LegContext,
  turnId: string,
  status: OutcomeStatus,
  output: unknown,
  error: string | undefined,
): Result {
  const view = leg.journal.view;
  return {
    v: 1,
    // A conversation's later turns are tickets of their own: the turn id is the ticket id.
    ticketId: turnId || leg.signals.record.ticketId,
    tenant: leg.key.tenant,
    agent: leg.key.agent,
    sessionId: leg.key.id,
    turnId,
    status,
    ...(output !== undefined ? { output } : {}),
    ...(error !== undefined ? { error } : {}),
    legs: view.legs,
    steps: view.steps,
    usage: view.usage,
  };
}
