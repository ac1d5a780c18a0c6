import { errorMessage } from '../../core/errors.ts';
import { type JournalEntry, legMarkerOf } from '../../core/journal.ts';
import { alignSweepAt } from '../../core/lease.ts';
import { takeSnapshot } from '../../core/snapshot.ts';
import { type KickReason, type OutcomeStatus, type SessionState, terminalStateOf } from '../../core/vocabulary.ts';
import { itemTtlSeconds, ttlSeconds } from '../deps.ts';
import { STEP_KINDS } from '../leg/journal-writer.ts';
import type { KickOutcome, LegContext } from '../leg/leg-context.ts';
import {
  notifyParent,
  publish,
  resultMessage,
  resultPublished,
  resultTurnId,
  settleQueuedTurns,
  withinMessageLimit,
} from './publish.ts';
import { release, releaseToWait, releaseUnlessEvent } from './release.ts';
import { endConversationTurn } from './turn-end.ts';

/**
 * The exits of a leg — the protocol's verbs for leaving a session: `finish` (outcome, publish,
 * release or end of turn), `wait` (a time, a retry, tasks, a human) and `yield` (a continuation).
 * Only the leg (lib/runtime/leg/leg.ts) calls them, with the LegExit a step returned. Every way
 * out stops the heartbeat before the release, so no renewal races it, and every exit that leaves
 * the session not queued is fenced on pendingVersion (release.ts).
 */

/**
 * Consecutive legs that yield without a step before the turn fails as "cannot fit". The functions
 * refuse at cold start a step that cannot fit a whole invocation with LEG_OVERHEAD_MS to spare,
 * so an idle leg means acquiring and reading took longer than that allowance: a busy machine
 * (three in a row were seen on a loaded 2-core host), not a step too big. The cap is a backstop
 * for a deployment that skipped that check, not a verdict on a slow host.
 */
export const MAX_IDLE_LEGS = 10;

/**
 * Ends the turn with an outcome and runs the rest of the finish protocol: publish, then the
 * release that records the publish. Returns undefined when an event (a cancel, a release, a turn)
 * arrived under that release: the leg holds its lease still and handles it first — and when the
 * leg went on to the conversation's next queued turn under the same lease (turn-end.ts).
 */
export async function finish(
  leg: LegContext,
  status: OutcomeStatus,
  error: string | undefined,
): Promise<KickOutcome | undefined> {
  // A turn has one outcome: once it is journaled, a later leg only publishes and releases it.
  if (!leg.journal.view.outcome) {
    if (error) leg.log.error('turn failed', { error });
    await leg.journal.append('outcome', { status, ...(error ? { error } : {}) });
  }
  const turnId = resultTurnId(leg);
  if (!resultPublished(leg)) {
    if (!(await publish(leg))) return waitToPublishAgain(leg);
    leg.resultSent = turnId;
  }
  const final = leg.journal.view.outcome?.status ?? status;
  const record = leg.signals.record;
  // The release records that the result was sent: no `published` entry, one write less per turn.
  // A crash between the send and the release sends it again (same result id), as a crash before
  // the entry did. A conversation goes on after a turn, whatever its outcome; a cancel ends it,
  // as cancelled even when it finds the last turn ended (an idle conversation). A turn stopped
  // alone (a `stop`, `stopped` on its outcome) is no cancel of the session: the conversation
  // takes its next turn. A one-shot session ends as its turn.
  const stopped = leg.journal.view.outcome?.stopped === true;
  const endsSession = !record.conversation || record.cancelRequested || (final === 'cancelled' && !stopped);
  const state = record.conversation && record.cancelRequested ? 'cancelled' : terminalStateOf(final);
  const left = endsSession ? await endSession(leg, state, turnId) : await endConversationTurn(leg, turnId);
  if (!left) return undefined;
  leg.deps.telemetry.metrics.count('Outcomes', 1, { status: final });
  leg.log.info('turn finished', { status: final, legs: leg.journal.view.legs, steps: leg.journal.view.steps });
  // Gone on to the next queued turn under the same lease: the leg's loop starts it.
  return left === 'advanced' ? undefined : 'finished';
}

/**
 * Finishes where the leg cannot go on to handle an event (no agent to run it): the finish is
 * tried again with the fresher record until its release lands.
 */
export async function finishNow(
  leg: LegContext,
  status: OutcomeStatus,
  error: string | undefined,
): Promise<KickOutcome> {
  for (;;) {
    const left = await finish(leg, status, error);
    if (left) return left;
  }
}

/**
 * Moves the session to a terminal state, fenced on pendingVersion: every turn queued behind the
 * active one gets its outcome and its result first, so none is left queued for good, and a turn
 * accepted meanwhile refuses the release and is settled at the next try.
 */
async function endSession(leg: LegContext, state: SessionState, publishedTurnId: string): Promise<boolean> {
  // The queue settled and the release's fence must be one record: a renewal in between would
  // bring a turn accepted meanwhile into the fence unsettled, and the release would absorb it.
  await leg.signals.stopHeartbeat();
  await settleQueuedTurns(leg, state);
  return releaseUnlessEvent(leg, state, undefined, publishedTurnId);
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

/** The journal itself cannot be trusted: record the outcome on the turn and the record only. */
export async function failUnjournaled(leg: LegContext, error: string): Promise<KickOutcome> {
  leg.log.error('turn failed', { error });
  const turnId = leg.signals.record.activeTurnId ?? '';
  await leg.deps.store.setTurnOutcome(leg.key, turnId, { status: 'failed', error, at: leg.deps.clock.now() });
  await notifyParent(leg);
  const result = await withinMessageLimit(leg, resultMessage(leg, turnId, 'failed', undefined, error));
  await leg.deps.results.publish(result, { trace: leg.trace });
  await settleQueuedTurns(leg, 'failed');
  await release(leg, 'failed', undefined, turnId);
  leg.deps.telemetry.metrics.count('Outcomes', 1, { status: 'failed' });
  return 'finished';
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
  await leg.deps.workQueue.sendKick(
    { v: 1, session: leg.key, reason: 'retry' },
    { trace: leg.trace, notBefore: deadline },
  );
  if (!(await releaseToWait(leg, deadline))) return undefined;
  leg.log.info('waiting for tasks', { until: deadline });
  return 'waiting';
}

/** Hands the session to the next leg: a continuation first, then a release that may fail. */
export async function yieldForBudget(leg: LegContext, what: string): Promise<KickOutcome | undefined> {
  if (leg.journal.stepsThisLeg === 0 && idleLegsAtEnd(leg.journal.entries) >= MAX_IDLE_LEGS) {
    return finish(leg, 'failed', `step cannot fit in the budget: ${what}`);
  }
  await leg.signals.stopHeartbeat();
  await leg.resources.closeAll();
  // The nonce goes on the record (a renewal, so only the holder can write it) before the
  // continuation carries it: only that continuation can take the lease over while it is live.
  const handoff = leg.deps.ids.handoffNonce();
  const renewed = await leg.deps.store.renew(leg.key, {
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
      // The renewal's expiry when it is about a grace ahead: the sweep index is not moved again,
      // and the continuation's acquire keeps it too (lib/core/lease.ts).
      sweepAt: alignSweepAt(
        renewed.sweepAt,
        leg.deps.clock.now() + leg.deps.config.sweepGraceMs,
        leg.deps.config.leaseTtlMs,
      ),
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

/**
 * Durable timers. `waitUntil` is the one way a leg waits for a time (a timer, an approval
 * timeout, a retry backoff): it sends a kick due then (the work queue chains it past SQS's
 * 15-minute cap), and releases the lease into `waiting` with `sweepAt` = the time, so the sweeper
 * wakes the session too should the kick be lost. No lease and no compute are held meanwhile; an
 * event (a cancel, a message, a decision) wakes the session earlier, and the leg that handles it
 * decides again from the journal, so the timer itself must be journaled before the wait.
 */
export async function waitUntil(
  leg: LegContext,
  wakeAt: number,
  reason: Extract<KickReason, 'wake' | 'retry'> = 'wake',
): Promise<KickOutcome | undefined> {
  await leg.deps.workQueue.sendKick({ v: 1, session: leg.key, reason }, { trace: leg.trace, notBefore: wakeAt });
  // Due at wakeAt: the delayed kick (rounded up to whole seconds) finds it due, and the sweeper
  // wakes it at the same time should that kick be lost.
  if (!(await releaseToWait(leg, wakeAt))) return undefined;
  leg.log.info('waiting for a time', { wakeAt, reason });
  return 'waiting';
}

/**
 * Waits in the tenant's line for a slot (fair sharing, leg/tenant-slot-step.ts) holding no lease
 * and no compute: the leg that frees a slot posts to the session (a bump and a kick); `sweepAt` =
 * the recheck, so the sweeper runs it should that kick be lost. No kick of its own: a waiting
 * session costs nothing while it waits.
 */
export async function waitForSlot(leg: LegContext, recheckAt: number): Promise<KickOutcome | undefined> {
  if (!(await releaseToWait(leg, recheckAt))) return undefined;
  leg.log.info('waiting for a tenant slot', { recheckAt });
  return 'waiting';
}

/**
 * Waits for a human (an approval, or a verdict on a parked call) holding no lease and no compute:
 * the release is refused when something arrived since the record was read, and the leg goes on.
 * With `wakeAt` (an approval timeout) the wait is a durable timer as well.
 */
export async function waitForHuman(
  leg: LegContext,
  what: string,
  wakeAt?: number | undefined,
): Promise<KickOutcome | undefined> {
  if (wakeAt !== undefined) return waitUntil(leg, wakeAt);
  if (!(await releaseToWait(leg, undefined))) return undefined;
  leg.log.info('waiting for a human', { what });
  return what === 'approval' ? 'waiting' : 'parked';
}
