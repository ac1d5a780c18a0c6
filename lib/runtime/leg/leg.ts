import type { AgentDefinition } from '../../agent/define-agent.ts';
import { CorruptStateError, errorMessage, LeaseLostError, NewerJournalFormatError } from '../../core/errors.ts';
import type { SessionKey } from '../../core/ids.ts';
import { decideNext, interruptedOnceOnly, isCrashLoop, recoveriesWithoutProgress } from '../../core/next-action.ts';
import { ceilingLimits } from '../../core/spend.ts';
import { childContext, type TraceContext } from '../../core/trace-context.ts';
import type { KickReason } from '../../core/vocabulary.ts';
import type { SessionRecord } from '../../ports/session-store.ts';
import type { LegSpan } from '../../telemetry/telemetry.ts';
import type { RuntimeDeps, RuntimeLogger } from '../deps.ts';
import { LegResources } from '../leg-resources.ts';
import { NOOP_LEG_SPAN, startLegSpan } from '../leg-tracing.ts';
import {
  failUnjournaled,
  finish,
  finishNow,
  waitForHuman,
  waitForRetry,
  waitForSlot,
  waitForTasks,
  waitUntil,
  yieldForBudget,
} from '../protocol/exits.ts';
import { leaveForNewerWorker } from '../protocol/newer-format.ts';
import { denyExpiredApproval } from './approval-step.ts';
import { budgetStep } from './budget-step.ts';
import { deliverInbox } from './inbox-step.ts';
import type { Invocation } from './invocation.ts';
import { refreshItemExpiry } from './item-expiry.ts';
import { JournalWriter } from './journal-writer.ts';
import type { KickOutcome, LegContext } from './leg-context.ts';
import { type LegExit, WAIT_RETRY, yieldLeg } from './leg-exit.ts';
import { LegAborted, LegSignals } from './leg-signals.ts';
import { modelStep } from './model-step.ts';
import { cancelTasks, releasePending, releaseStep } from './release-step.ts';
import { refuseOrphanTask } from './task-start-check.ts';
import { isTaskCall, taskStep } from './task-step.ts';
import { claimSlotStep, freeSlot, slotLimitOf } from './tenant-slot-step.ts';
import { wakeTimer } from './timer-step.ts';
import { parkInterrupted, reconcileStep, toolStep } from './tool-step.ts';
import { finalOutcome, startTurn } from './turn-step.ts';
import { agentForLeg, keepsVersions } from './version-step.ts';

/**
 * The actions that are a session's work and need its tenant's slot (fair sharing). A cancel, a
 * release, a finish or a publish of what is done, and the waits, need none: a session waiting in
 * line can always be cancelled.
 */
const SLOT_ACTIONS: ReadonlySet<string> = new Set(['start-turn', 'model', 'tools', 'reconcile', 'wake']);

/** How a leg ends that leaves its session not running: its tenant slot is freed. */
const LEAVES_RUNNING: ReadonlySet<KickOutcome> = new Set(['finished', 'waiting', 'parked']);

/**
 * One invocation's stretch of work on a session, from acquire to yield, wait, finish or death:
 * load and fold the journal, write the leg marker, then take the next action the fold decides
 * until one of them leaves.
 */
export class Leg implements LegContext {
  readonly trace: TraceContext;
  readonly log: RuntimeLogger;
  readonly signals: LegSignals;
  readonly journal: JournalWriter;
  readonly resources: LegResources;
  span: LegSpan = NOOP_LEG_SPAN;
  resultSent: string | undefined;
  /** Whether a step boundary has read the inbox yet; the first one uses the acquire's record. */
  #passedBoundary = false;
  /** The version of the agent the session runs on, once chosen (version-step.ts); until then the newest. */
  #agent: AgentDefinition | undefined;
  /** The session's tenant slot is confirmed for this leg (tenant-slot-step.ts); claimed once per leg. */
  #holdsSlot = false;
  /** The leg leaves the session in its tenant's line: its slot is not to be freed (it has none). */
  #waitsForSlot = false;

  constructor(
    readonly key: SessionKey,
    record: SessionRecord,
    readonly owner: string,
    readonly reason: KickReason,
    readonly invocation: Invocation,
    readonly deps: RuntimeDeps,
    log: RuntimeLogger,
  ) {
    this.trace = childContext(record.traceId);
    this.log = log.child({ epoch: record.epoch, traceId: record.traceId, turnId: record.activeTurnId });
    this.signals = new LegSignals(key, owner, record, deps, this.log, () => this.journal.progressed);
    this.journal = new JournalWriter(key, deps, this.log, this.signals, this.agent?.limits.maxPayloadBytes);
    this.resources = new LegResources((resource, error) =>
      this.log.warn('leg resource failed to close', { key: resource, error }),
    );
  }

  get agent(): AgentDefinition | undefined {
    return this.#agent ?? this.deps.agents.get(this.key.agent);
  }

  useAgent(agent: AgentDefinition): void {
    this.#agent = agent;
  }

  async run(): Promise<KickOutcome> {
    this.signals.start(this.invocation, this.deps.config.reserveMs);
    try {
      const outcome = await this.#runLoaded();
      // A session that no longer runs (idle, waiting, ended) gives its tenant slot to the next in line.
      if (LEAVES_RUNNING.has(outcome) && !this.#waitsForSlot) await freeSlot(this);
      this.span.end(outcome);
      return outcome;
    } catch (error) {
      if (error instanceof LeaseLostError || (error instanceof LegAborted && error.why === 'lease-lost')) {
        this.deps.telemetry.metrics.count('LeaseConflicts');
        this.log.warn('stale owner stopped', { error: errorMessage(error) });
        await this.signals.stopHeartbeat();
        this.span.end('lease-lost');
        return 'lease-lost';
      }
      this.span.end('crashed', error);
      throw error;
    } finally {
      await this.resources.closeAll();
      await this.signals.stop();
    }
  }

  async #runLoaded(): Promise<KickOutcome> {
    await refreshItemExpiry(this);
    try {
      await this.journal.load();
    } catch (error) {
      if (error instanceof NewerJournalFormatError) return leaveForNewerWorker(this, error);
      if (error instanceof CorruptStateError)
        return failUnjournaled(this, `stored state failed validation: ${error.message}`);
      throw error;
    }
    // A leg whose first action starts a turn carries its marker on the turn's input.
    const startsTurn = this.#startsTurn();
    if (startsTurn) this.journal.deferLegMarker(this.owner, this.reason, this.trace);
    else await this.journal.appendLegMarker(this.owner, this.reason, this.trace);
    const record = this.signals.record;
    const annotations = {
      session: this.key.id,
      turn: record.activeTurnId,
      tenant: this.key.tenant,
      agent: this.key.agent,
      traceId: this.trace.traceId,
      epoch: this.signals.epoch,
    };
    this.deps.telemetry.tracer.annotateLeg(annotations);
    const { spanId, sampled } = this.trace;
    this.span = startLegSpan(
      this.deps.telemetry.tracer,
      { ...annotations, spanId, sampled, reason: this.reason },
      this.journal.entries,
    );
    const view = this.journal.view;
    this.log.info('leg started', { reason: this.reason, seq: view.lastSeq, legs: view.legs });
    await this.deps.failpoint('after-marker');

    if (!this.agent) return finishNow(this, 'failed', `unknown agent "${this.key.agent}": not deployed here`);
    // The version it runs on: a turn's start chooses it (turn-step.ts); any other leg here.
    if (keepsVersions(this) && !startsTurn) {
      const chosen = await agentForLeg(this);
      if ('error' in chosen) return finishNow(this, 'failed', chosen.error);
      this.#agent = chosen.agent;
    }
    const agent = this.agent;
    const recoveries = recoveriesWithoutProgress(
      this.signals.record.recoveries,
      this.signals.epoch,
      this.journal.entries,
    );
    if (isCrashLoop(this.journal.view, this.reason === 'recovery', recoveries, agent.limits.maxRecoveries)) {
      const why = `crash loop: ${recoveries} consecutive recoveries without progress`;
      const interrupted = interruptedOnceOnly(this.journal.view);
      if (interrupted) await parkInterrupted(this, interrupted, why);
      else {
        // Journaled here, published by the loop: after a release or cancel this leg saw at its
        // acquire, which the loop carries out first (a finish from here left it unseen for good).
        this.log.error('turn failed', { error: why });
        await this.journal.append('outcome', { status: 'failed', error: why });
      }
    }
    const refused = await refuseOrphanTask(this);
    const left = refused && (await this.#leave(refused));
    return left || this.#loop(agent);
  }

  /**
   * Takes the next action until one leaves: a step returns how the leg should leave, and only
   * here is that carried out. An exit refused by an event that arrived meanwhile (every exit out
   * of `queued` is fenced on pendingVersion) goes on, to handle that event first.
   */
  async #loop(agent: AgentDefinition): Promise<KickOutcome> {
    for (;;) {
      let exit: LegExit | undefined;
      try {
        // A turn's start may have moved the session to another version of its agent.
        exit = await this.#next(this.#agent ?? agent);
      } catch (error) {
        if (!(error instanceof LegAborted) || error.why === 'lease-lost') throw error;
        // Cancel: the next pass writes the cancelled outcome. Budget: continue elsewhere.
        if (error.why !== 'budget') continue;
        await this.journal.markLeg();
        exit = yieldLeg('a step that ran past the budget');
      }
      const left = exit && (await this.#leave(exit));
      if (left) return left;
    }
  }

  /** Carries an exit out through the protocol; undefined when an event refused it and the leg goes on. */
  #leave(exit: LegExit): Promise<KickOutcome | undefined> {
    switch (exit.kind) {
      case 'yield':
        return yieldForBudget(this, exit.why);
      case 'finish':
        return finish(this, exit.status, exit.error);
      case 'wait-retry':
        return waitForRetry(this);
      case 'wait-timer':
        return waitUntil(this, exit.until);
      case 'wait-tasks':
        return waitForTasks(this, exit.until);
      case 'wait-human':
        return waitForHuman(this, exit.what, exit.until);
      case 'wait-slot':
        return waitForSlot(this, exit.until).then((left) => {
          this.#waitsForSlot = left !== undefined;
          return left;
        });
    }
  }

  /** Takes the next action; returns how the leg should leave, or undefined to go on. */
  async #next(agent: AgentDefinition): Promise<LegExit | undefined> {
    this.signals.throwIfLeaseLost();
    // A deferred marker waits only for a turn's input: anything else is marked first.
    if (this.#decide(agent).kind !== 'start-turn' || releasePending(this)) await this.journal.markLeg();
    // Nothing in the inbox lands before a turn's input (messages, decisions and verdicts are the
    // running turn's). The leg's first boundary takes the inbox from the record its acquire
    // returned (milliseconds old; a message sent since lands at the next boundary), so a new
    // turn reads the record once before its first model call: the acquire's read.
    if (this.#decide(agent).kind !== 'start-turn') {
      await deliverInbox(this, !this.#passedBoundary);
      this.#passedBoundary = true;
    }
    if (releasePending(this)) return releaseStep(this);
    const action = this.#decide(agent);
    if (!this.#holdsSlot && SLOT_ACTIONS.has(action.kind) && slotLimitOf(this) !== undefined) {
      const wait = await claimSlotStep(this);
      if (wait) return wait;
      this.#holdsSlot = true;
    }
    if (action.kind !== 'start-turn') await this.journal.markLeg();
    switch (action.kind) {
      case 'cancel':
        await cancelTasks(this);
        await this.journal.append('outcome', { status: 'cancelled', error: 'cancelled by request' });
        return undefined;
      case 'start-turn':
        // A turn starts under a record its acquire or its advance (turn-end.ts) just returned:
        // the turn's first boundary takes the inbox from it, as a leg's first boundary does.
        this.#passedBoundary = false;
        return startTurn(this);
      case 'step-limit':
        await this.journal.append('outcome', { status: 'failed', error: `step limit of ${action.maxSteps} reached` });
        return undefined;
      case 'budget':
        return budgetStep(this, action);
      case 'model':
        return modelStep(this, agent);
      case 'tools': {
        // The agent's own tools first; the built-in task tools (wait_tasks last) after them.
        const own = action.calls.filter((p) => !isTaskCall(agent, p));
        return own.length > 0 ? toolStep(this, agent, own) : taskStep(this, agent, action.calls);
      }
      case 'reconcile':
        await reconcileStep(this, agent, action.call);
        return undefined;
      case 'parked':
        this.log.warn('once-only call in an unknown state: parked for a human', { callId: action.callId });
        return { kind: 'wait-human', what: 'parked call' };
      case 'await-approval':
        return { kind: 'wait-human', what: 'approval', until: action.wakeAt };
      case 'approval-timeout':
        await denyExpiredApproval(this, action.callId);
        return undefined;
      case 'wake':
        await wakeTimer(this, action.call);
        return undefined;
      case 'wait-timer':
        return { kind: 'wait-timer', until: action.wakeAt };
      case 'wait-retry':
        return WAIT_RETRY;
      case 'finish':
        await this.journal.append('outcome', finalOutcome(agent, action.text));
        return undefined;
      // Publishing goes straight on to the release, which records that the result was sent.
      case 'publish':
      case 'done':
        return { kind: 'finish', status: this.journal.view.outcome!.status };
    }
  }

  /** Whether the leg's first action is to start the record's active turn (nothing journaled before it). */
  #startsTurn(): boolean {
    const agent = this.agent;
    return agent !== undefined && !releasePending(this) && this.#decide(agent).kind === 'start-turn';
  }

  /** The next action from the fold and the freshest record this leg has. */
  #decide(agent: AgentDefinition) {
    const record = this.signals.record;
    return decideNext(this.journal.view, {
      activeTurnId: record.activeTurnId,
      cancelRequested: record.cancelRequested,
      maxSteps: agent.limits.maxSteps,
      spendLimits: ceilingLimits(agent.limits, this.journal.view.ticketLimits),
      now: this.deps.clock.now(),
      publishedTurnId: this.resultSent ?? record.publishedTurnId,
    });
  }
}
