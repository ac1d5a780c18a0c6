import { type RetryPolicy, retryDelayAfter } from '../../agent/retry-policy.ts';
import { stepFits } from '../../core/budget.ts';
import { contentDigest } from '../../core/content-digest.ts';
import { errorMessage, LeaseLostError } from '../../core/errors.ts';
import { type JournalEntry, legMarkerOf } from '../../core/journal.ts';
import { INLINE_PAYLOAD_LIMIT_BYTES, type Result } from '../../core/messages.ts';
import { isPublished } from '../../core/next-action.ts';
import { takeSnapshot } from '../../core/snapshot.ts';
import { childContext } from '../../core/trace-context.ts';
import { type OutcomeStatus, type SessionState, TERMINAL_SESSION_STATES } from '../../core/vocabulary.ts';
import { itemTtlSeconds, ttlSeconds } from '../deps.ts';
import { STEP_KINDS } from './journal-writer.ts';
import type { KickOutcome, LegContext } from './leg-context.ts';
import { isInterruption } from './leg-signals.ts';
import { waitUntil } from './timer-step.ts';
import { endConversationTurn } from './turn-end.ts';

/**
 * How a leg leaves: finish (outcome, publish, release), wait for a timer, park, or yield to a
 * continuation. Every way out stops the heartbeat before the release, so no renewal races it.
 */

/** SQS caps a message delay at 15 minutes; longer waits are chained through `notBefore`. */
export const MAX_DELAY_SECONDS = 900;
/**
 * Consecutive legs that yield without a step before the turn fails as "cannot fit". The functions
 * refuse at cold start a step that cannot fit a whole invocation with LEG_OVERHEAD_MS to spare,
 * so an idle leg means acquiring and reading took longer than that allowance: a busy machine
 * (three in a row were seen on a loaded 2-core host), not a step too big. The cap is a backstop
 * for a deployment that skipped that check, not a verdict on a slow host.
 */
export const MAX_IDLE_LEGS = 10;

/** Does a step of this declared maximum fit in what is left of the invocation? */
export function fitsInBudget(leg: LegContext, maxDurationMs: number): boolean {
  return stepFits(maxDurationMs, leg.invocation.remainingMs(), leg.deps.config.reserveMs);
}

/** Ends the turn with an outcome and runs the rest of the finish protocol. */
export async function finish(
  leg: LegContext,
  status: OutcomeStatus,
  output: unknown,
  error: string | undefined,
): Promise<KickOutcome> {
  // A turn has one outcome: once it is journaled, a later leg only publishes and releases it.
  if (!leg.journal.view.outcome) {
    if (error) leg.log.error('turn failed', { error });
    await leg.journal.append('outcome', {
      status,
      ...(output !== undefined ? { output } : {}),
      ...(error ? { error } : {}),
    });
  }
  if (!resultPublished(leg) && !(await publish(leg))) return waitToPublishAgain(leg);
  const final = leg.journal.view.outcome?.status ?? status;
  const record = leg.signals.record;
  // The release records that the result was sent: no `published` entry, one write less per turn.
  // A crash between the send and the release sends it again (same result id), as a crash before
  // the entry did.
  const turnId = resultTurnId(leg);
  // A conversation goes on after a turn, whatever its outcome; a cancel ends it, as cancelled
  // even when it finds the last turn ended (an idle conversation). A one-shot session ends as its turn.
  if (record.conversation && final !== 'cancelled' && !record.cancelRequested) await endConversationTurn(leg, turnId);
  else if (record.conversation && record.cancelRequested) await release(leg, 'cancelled', undefined, turnId);
  else await release(leg, final === 'superseded' ? 'completed' : final, undefined, turnId);
  leg.deps.telemetry.metrics.count('Outcomes', 1, { status: final });
  leg.log.info('turn finished', { status: final, legs: leg.journal.view.legs, steps: leg.journal.view.steps });
  return 'finished';
}

/** The turn the journaled outcome belongs to: the journal's, or the active one when no input came before it. */
function resultTurnId(leg: LegContext): string {
  return leg.journal.view.turnId ?? leg.signals.record.activeTurnId ?? '';
}

/** Was the journaled outcome's result sent: an undelivered `published` entry, or the record says so. */
function resultPublished(leg: LegContext): boolean {
  const { view } = leg.journal;
  const record = leg.signals.record;
  return view.published || isPublished(view, record.activeTurnId, record.publishedTurnId);
}

/**
 * How often a result is sent before it is given up: 8 attempts over about 50 minutes, so a queue
 * that is down for a while still gets it, and one that can never take it ends the session.
 */
export const PUBLISH_RETRY_POLICY: RetryPolicy = {
  attempts: 8,
  initialDelayMs: 5_000,
  multiplier: 4,
  maxDelayMs: MAX_DELAY_SECONDS * 1000,
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
  const outcome = view.outcome!;
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

/** How many times the wait for a result's next send is tried when an event lands under its release. */
const PUBLISH_WAIT_ATTEMPTS = 3;

/**
 * Waits for the result's next send. An event that lands under the release (a message, a cancel)
 * changes nothing for a turn that has its outcome, so the release is tried again; past the
 * attempts the lease is left to expire and a recovery sends the result.
 */
async function waitToPublishAgain(leg: LegContext): Promise<KickOutcome> {
  for (let attempt = 1; attempt < PUBLISH_WAIT_ATTEMPTS; attempt++) {
    const left = await waitForRetry(leg);
    if (left) return left;
  }
  return (await waitForRetry(leg)) ?? 'waiting';
}

/**
 * A task's outcome wakes its parent: one bump (pendingVersion + 1) and a kick, whatever the
 * number of its siblings. A parent idle between turns, or finished, has nothing waiting for it
 * (its next turn reads every task's status from the store), so it is left alone. A retried
 * publish bumps again, which the parent absorbs as one more look.
 */
async function notifyParent(leg: LegContext): Promise<void> {
  const parentKey = leg.signals.record.parent;
  if (parentKey === undefined) return;
  const { deps } = leg;
  const parent = await deps.store.getSession(parentKey);
  if (!parent || parent.state === 'idle' || TERMINAL_SESSION_STATES.includes(parent.state)) return;
  const now = deps.clock.now();
  // A parent waiting on its tasks has its wait's deadline as sweepAt: bring it forward, so a
  // lost wake-up kick costs a sweep, not the rest of the wait.
  const bumped = await deps.store.bump(parentKey, {
    now,
    sweepAt: now + deps.config.sweepGraceMs,
    sweepSoon: parent.state === 'waiting',
  });
  if (bumped.ok)
    await deps.workQueue.sendKick(
      { v: 1, session: parentKey, reason: 'wake' },
      { trace: childContext(parent.traceId) },
    );
}

/** Longest error text a result message carries; the turn record keeps the whole of it. */
const MAX_RESULT_ERROR_CHARS = 8 * 1024;

/**
 * A result whose output would pass the queue's message limit carries a pointer into the payload
 * bucket instead (`{"$blob": key, sha256, bytes}`, as tickets do); with no bucket it carries no output and says
 * why. The key is the turn's, so a republish rewrites the same object.
 */
async function withinMessageLimit(leg: LegContext, result: Result): Promise<Result> {
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

/** The journal itself cannot be trusted: record the outcome on the turn and the record only. */
export async function failUnjournaled(leg: LegContext, error: string): Promise<KickOutcome> {
  leg.log.error('turn failed', { error });
  const turnId = leg.signals.record.activeTurnId ?? '';
  await leg.deps.store.setTurnOutcome(leg.key, turnId, { status: 'failed', error, at: leg.deps.clock.now() });
  await notifyParent(leg);
  const result = await withinMessageLimit(leg, resultMessage(leg, turnId, 'failed', undefined, error));
  await leg.deps.results.publish(result, { trace: leg.trace });
  await release(leg, 'failed', undefined, turnId);
  leg.deps.telemetry.metrics.count('Outcomes', 1, { status: 'failed' });
  return 'finished';
}

function resultMessage(
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

/** Waits for a retry timer: a delayed kick wakes the session; the sweeper is the backstop. */
export async function waitForRetry(leg: LegContext): Promise<KickOutcome | undefined> {
  return waitUntil(leg, leg.journal.view.retryAt ?? leg.deps.clock.now(), 'retry');
}

/**
 * Waits for background tasks holding no lease: a child's outcome bumps this session and kicks
 * it; a delayed kick at the wait's deadline (the sweeper as backstop) ends the wait otherwise.
 */
export async function waitForTasks(leg: LegContext, deadline: number): Promise<KickOutcome | undefined> {
  const delayMs = Math.max(0, deadline - leg.deps.clock.now());
  await leg.deps.workQueue.sendKick(
    {
      v: 1,
      session: leg.key,
      reason: 'retry',
      ...(delayMs > MAX_DELAY_SECONDS * 1000 ? { notBefore: deadline } : {}),
    },
    { trace: leg.trace, delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.ceil(delayMs / 1000)) },
  );
  if (!(await releaseToWait(leg, deadline))) return undefined;
  leg.log.info('waiting for tasks', { until: deadline });
  return 'waiting';
}

/** Hands the session to the next leg: a continuation first, then a release that may fail. */
export async function yieldForBudget(leg: LegContext, what: string): Promise<KickOutcome> {
  if (leg.journal.stepsThisLeg === 0 && idleLegsAtEnd(leg.journal.entries) >= MAX_IDLE_LEGS) {
    return finish(leg, 'failed', undefined, `step cannot fit in the budget: ${what}`);
  }
  await leg.signals.stopHeartbeat();
  await leg.resources.closeAll();
  // The nonce goes on the record (a renewal, so only the holder can write it) before the
  // continuation carries it: only that continuation can take the lease over while it is live.
  const handoff = leg.deps.ids.handoffNonce();
  await leg.deps.store.renew(leg.key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    until: leg.deps.clock.now() + leg.deps.config.leaseTtlMs,
    progressed: leg.journal.progressed,
    handoff,
  });
  await snapshot(leg);
  await leg.deps.workQueue.sendKick(
    {
      v: 1,
      session: leg.key,
      reason: 'continuation',
      fromEpoch: leg.signals.epoch,
      handoff,
      turnId: leg.signals.record.activeTurnId,
    },
    { trace: leg.trace },
  );
  await leg.deps.failpoint('after-continuation');
  // After the continuation is sent the predecessor writes nothing but its release, whose
  // failure is expected when the continuation already took over.
  const released = await leg.deps.store
    .release(leg.key, {
      owner: leg.owner,
      epoch: leg.signals.epoch,
      state: 'queued',
      seenVersion: leg.signals.record.pendingVersion,
      sweepAt: leg.deps.clock.now() + leg.deps.config.sweepGraceMs,
      progressed: leg.journal.progressed,
      ttlSeconds: ttlSeconds(leg.deps.config, leg.deps.clock.now()),
      tokens: leg.journal.tokensThisLeg,
    })
    .catch(() => undefined);
  leg.deps.telemetry.metrics.count('Yields');
  leg.log.info('yielded to a continuation', {
    seq: leg.journal.view.lastSeq,
    steps: leg.journal.stepsThisLeg,
    released: released?.ok,
  });
  return 'yielded';
}

/**
 * Gives the lease back in a state, recording `publishedTurnId` when it follows that turn's
 * published result; a refused release means another owner holds it.
 */
export async function release(
  leg: LegContext,
  state: SessionState,
  sweepAt: number | undefined,
  publishedTurnId?: string,
): Promise<void> {
  await leg.resources.closeAll();
  await leg.signals.stopHeartbeat();
  const result = await leg.deps.store.release(leg.key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    state,
    seenVersion: leg.signals.record.pendingVersion,
    sweepAt,
    progressed: leg.journal.progressed,
    ttlSeconds: ttlSeconds(leg.deps.config, leg.deps.clock.now()),
    tokens: leg.journal.tokensThisLeg,
    ...(publishedTurnId === undefined ? {} : { publishedTurnId }),
  });
  if (!result.ok) throw new LeaseLostError(`release of epoch ${leg.signals.epoch} refused`, result.current);
}

/**
 * Releases into `waiting` only if no event (a cancel, a new input) arrived since the leg last
 * looked: otherwise nothing would wake the session for it. Returns false when one did; the leg
 * then holds its lease still, renews again and goes on to handle the event.
 */
export async function releaseToWait(leg: LegContext, sweepAt: number | undefined): Promise<boolean> {
  await leg.resources.closeAll();
  await leg.signals.stopHeartbeat();
  const seen = leg.signals.record.pendingVersion;
  const result = await leg.deps.store.release(leg.key, {
    owner: leg.owner,
    epoch: leg.signals.epoch,
    state: 'waiting',
    expectPendingVersion: seen,
    seenVersion: seen,
    sweepAt,
    progressed: leg.journal.progressed,
    ttlSeconds: ttlSeconds(leg.deps.config, leg.deps.clock.now()),
    tokens: leg.journal.tokensThisLeg,
  });
  if (result.ok) return true;
  const current = result.current;
  if (current?.owner !== leg.owner || current.epoch !== leg.signals.epoch)
    throw new LeaseLostError(`release of epoch ${leg.signals.epoch} refused`, current);
  leg.log.info('an event arrived before the release; handling it first', {
    seen,
    pendingVersion: current.pendingVersion,
  });
  leg.signals.resume(current);
  return false;
}

/**
 * Leaves derived state for the next leg. Not a journal write: any owner may write the same one.
 * Best-effort: snapshots are optional, so a failed write never stands in the way of the hand-off.
 */
async function snapshot(leg: LegContext): Promise<void> {
  const taken = takeSnapshot(leg.journal.view, leg.journal.entries);
  if (!taken) return;
  try {
    await leg.deps.store.putSnapshot(leg.key, taken, itemTtlSeconds(leg.deps.config, leg.deps.clock.now()));
  } catch (error) {
    leg.log.warn('snapshot not written; the next leg folds the journal', {
      seq: taken.seq,
      error: errorMessage(error),
    });
  }
}

/**
 * Idle yields in a row, this leg's included: legs since the last step that yielded before their
 * first one. A leg yielded when the next marker is a continuation's; a leg that died (the next is
 * a recovery) says nothing about whether the step fits.
 */
function idleLegsAtEnd(entries: readonly JournalEntry[]): number {
  let legs = 1;
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i] as JournalEntry;
    if (STEP_KINDS.has(entry.kind)) break;
    const marker = legMarkerOf(entry);
    if (marker) {
      if (marker.reason !== 'continuation') break;
      legs++;
    }
  }
  return legs;
}
