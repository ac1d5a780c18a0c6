import type { AgentDefinition } from '../agent/define-agent.ts';
import { toolInputSchema } from '../agent/define-tool.ts';
import { resolvePolicy, retryDelayMs } from '../agent/retry-policy.ts';
import { buildTranscript } from '../agent/transcript.ts';
import { onceOnlyFitsLease, stepFits } from '../core/budget.ts';
import {
  BatonError,
  CorruptStateError,
  errorMessage,
  LeaseLostError,
  PayloadTooLargeError,
  SeqTakenError,
} from '../core/errors.ts';
import { applyEntry, EMPTY_VIEW, foldJournal, nextAction, type PendingCall, type SessionView } from '../core/fold.ts';
import { idempotencyKey, newOwnerId, newWriteId, type SessionKey } from '../core/ids.ts';
import type { EntryDataOf, JournalEntry } from '../core/journal.ts';
import { planAcquire } from '../core/lease.ts';
import type { Kick, Result } from '../core/messages.ts';
import { restoreView, takeSnapshot } from '../core/snapshot.ts';
import { childContext, formatTraceparent, type TraceContext } from '../core/trace-context.ts';
import type { EntryKind, KickReason, OutcomeStatus, SessionState } from '../core/vocabulary.ts';
import type { ModelResponse } from '../ports/model-client.ts';
import type { SessionRecord } from '../ports/session-store.ts';
import { type RuntimeDeps, type RuntimeLogger, ttlSeconds } from './deps.ts';
import { FailpointCrash } from './failpoints.ts';
import { Heartbeat } from './heartbeat.ts';

/** SQS caps a message delay at 15 minutes; longer waits are chained through `notBefore`. */
const MAX_DELAY_SECONDS = 900;
/**
 * Consecutive legs that yield without a step before the turn fails as "cannot fit". One such leg
 * can be a busy machine or a leg started late in a batch; three in a row, each a fresh
 * invocation, mean the step does not fit.
 */
const MAX_IDLE_LEGS = 3;
/** How many times a kick plans its acquire again when the record moved under the write. */
const ACQUIRE_ATTEMPTS = 3;
/** How many times a new owner re-reads and retries its leg marker when a stale write won the seq. */
const MARKER_ATTEMPTS = 5;

/** The invocation a kick runs in: its id and a real deadline. */
export interface Invocation {
  readonly requestId: string;
  remainingMs(): number;
}

export type KickOutcome = 'dropped' | 'delayed' | 'finished' | 'yielded' | 'waiting' | 'parked' | 'lease-lost';

/** Why the leg's work was interrupted. */
type AbortWhy = 'lease-lost' | 'cancel' | 'budget';

class LegAborted extends Error {
  constructor(readonly why: AbortWhy) {
    super(`leg aborted: ${why}`);
  }
}

/**
 * Handles one kick: acquire the session's lease, load and fold the journal, run the agent loop
 * step by step, and leave by finishing, waiting or yielding to a continuation.
 */
export async function runKick(kick: Kick, invocation: Invocation, deps: RuntimeDeps): Promise<KickOutcome> {
  const key: SessionKey = kick.session;
  const log = deps.telemetry.logger.child({
    tenant: key.tenant,
    agent: key.agent,
    sessionId: key.id,
    kick: kick.reason,
  });
  const now = deps.clock.now();

  if (kick.notBefore !== undefined && kick.notBefore > now) {
    await deps.workQueue.sendKick(kick, {
      delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.ceil((kick.notBefore - now) / 1000)),
    });
    return 'delayed';
  }

  await deps.failpoint('before-acquire');
  let record = await deps.store.getSession(key);
  const owner = newOwnerId(invocation.requestId);
  for (let attempt = 1; ; attempt++) {
    if (!record) {
      log.warn('kick for a session that does not exist; dropped');
      deps.telemetry.metrics.count('DuplicateKicksDropped');
      return 'dropped';
    }
    const now = deps.clock.now();
    const plan = planAcquire(record, kick, now);
    if (plan.kind === 'drop') {
      log.debug('kick dropped', { why: plan.why, epoch: record.epoch });
      deps.telemetry.metrics.count('DuplicateKicksDropped');
      return 'dropped';
    }
    const acquired = await deps.store.acquire(key, {
      owner,
      until: now + deps.config.leaseTtlMs,
      now,
      expectEpoch: record.epoch,
      expectOwner: plan.expectOwner,
      recovery: plan.recovery,
    });
    if (acquired.ok) return startLeg(kick, record, acquired.record, plan.recovery, owner, invocation, deps, log);
    // The record moved under the write — most often a predecessor releasing just as its
    // continuation arrived. Plan again from what the write found, a bounded number of times.
    if (attempt >= ACQUIRE_ATTEMPTS) {
      log.debug('lost the acquire race; dropped', { epoch: record.epoch });
      deps.telemetry.metrics.count('LeaseConflicts');
      return 'dropped';
    }
    record = acquired.current;
  }
}

function startLeg(
  kick: Kick,
  before: SessionRecord,
  record: SessionRecord,
  recovery: boolean,
  owner: string,
  invocation: Invocation,
  deps: RuntimeDeps,
  log: RuntimeLogger,
): Promise<KickOutcome> {
  if (recovery) deps.telemetry.metrics.count('Recoveries');
  deps.telemetry.metrics.count('Legs');
  // The leg marker says why this leg really started: only a taken-over expired lease is a
  // recovery; a sweeper kick or a late first kick that finds a free lease is a wake-up.
  const reason: KickReason = recovery
    ? 'recovery'
    : kick.reason === 'recovery' || (kick.reason === 'first' && before.legs > 0)
      ? 'wake'
      : kick.reason;
  return new Leg(kick.session, record, owner, reason, invocation, deps, log).run();
}

/** One invocation's stretch of work on a session, from acquire to yield, wait, finish or death. */
class Leg {
  readonly #trace: TraceContext;
  readonly #controller = new AbortController();
  readonly #heartbeat: Heartbeat;
  #log: RuntimeLogger;
  #record: SessionRecord;
  #entries: JournalEntry[] = [];
  #view: SessionView = EMPTY_VIEW;
  #stepsThisLeg = 0;
  #progressed = false;
  /** Model tokens of this leg, added to the session's count when it releases. */
  #tokensThisLeg = 0;
  #onceOnlyInFlight = 0;
  #budgetTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly key: SessionKey,
    record: SessionRecord,
    readonly owner: string,
    readonly reason: KickReason,
    readonly invocation: Invocation,
    readonly deps: RuntimeDeps,
    log: RuntimeLogger,
  ) {
    this.#record = record;
    this.#trace = childContext(record.traceId);
    this.#log = log.child({ epoch: record.epoch, traceId: record.traceId, turnId: record.activeTurnId });
    this.#heartbeat = new Heartbeat(
      {
        ttlMs: deps.config.leaseTtlMs,
        clock: deps.clock,
        renew: (until) => deps.store.renew(key, { owner, epoch: this.epoch, until, progressed: this.#progressed }),
        onRenewed: (fresh) => {
          this.#record = fresh;
          if (fresh.cancelRequested && this.#onceOnlyInFlight === 0) this.#abort('cancel');
        },
        onLost: (error) => {
          this.#log.warn('lease lost; stopping without another write', { error: errorMessage(error) });
          this.#abort('lease-lost');
        },
      },
      record.until ?? deps.clock.now() + deps.config.leaseTtlMs,
    );
  }

  get epoch(): number {
    return this.#record.epoch;
  }

  get #agent(): AgentDefinition | undefined {
    return this.deps.agents.get(this.key.agent);
  }

  async run(): Promise<KickOutcome> {
    this.#heartbeat.start();
    // Past the budget the step in flight is abandoned, leaving half the reserve to hand off.
    this.#budgetTimer = setTimeout(
      () => this.#abort('budget'),
      Math.max(0, this.invocation.remainingMs() - this.deps.config.reserveMs / 2),
    );
    this.#budgetTimer.unref?.();
    try {
      return await this.#runLoaded();
    } catch (error) {
      if (error instanceof LeaseLostError || (error instanceof LegAborted && error.why === 'lease-lost')) {
        this.deps.telemetry.metrics.count('LeaseConflicts');
        this.#log.warn('stale owner stopped', { error: errorMessage(error) });
        await this.#heartbeat.stop();
        return 'lease-lost';
      }
      throw error;
    } finally {
      clearTimeout(this.#budgetTimer);
      await this.#heartbeat.stop();
    }
  }

  async #runLoaded(): Promise<KickOutcome> {
    try {
      // One pass over the journal (the transcript needs it) and the latest snapshot, in parallel.
      const [entries, snapshot] = await Promise.all([
        this.deps.store.readJournal(this.key),
        this.deps.store.getLatestSnapshot(this.key),
      ]);
      this.#entries = entries;
      const restored = restoreView(snapshot, entries);
      this.#view = restored.view;
      if (restored.fromSnapshot) this.#log.debug('resumed from a snapshot', { snapshotSeq: snapshot?.seq });
    } catch (error) {
      if (error instanceof CorruptStateError)
        return this.#failUnjournaled(`stored state failed validation: ${error.message}`);
      throw error;
    }
    await this.#appendLegMarker();
    this.deps.telemetry.tracer.annotateLeg({
      session: this.key.id,
      turn: this.#record.activeTurnId,
      tenant: this.key.tenant,
      agent: this.key.agent,
      traceId: this.#trace.traceId,
      epoch: this.epoch,
    });
    this.#log.info('leg started', { reason: this.reason, seq: this.#view.lastSeq, legs: this.#view.legs });
    await this.deps.failpoint('after-marker');

    const agent = this.#agent;
    if (!agent) return this.#finish('failed', undefined, `unknown agent "${this.key.agent}": not deployed here`);
    // Once the outcome is journaled the turn is over: a recovery only finishes publishing it.
    if (this.reason === 'recovery' && !this.#view.outcome && this.#record.recoveries > agent.limits.maxRecoveries) {
      return this.#finish(
        'failed',
        undefined,
        `crash loop: ${this.#record.recoveries} consecutive recoveries without progress`,
      );
    }
    return this.#loop(agent);
  }

  async #loop(agent: AgentDefinition): Promise<KickOutcome> {
    for (;;) {
      try {
        const left = await this.#next(agent);
        if (left) return left;
      } catch (error) {
        if (!(error instanceof LegAborted) || error.why === 'lease-lost') throw error;
        // Cancel: the next pass writes the cancelled outcome. Budget: continue elsewhere.
        if (error.why === 'budget') return this.#yieldForBudget('a step that ran past the budget');
      }
    }
  }

  /** Takes the next action; returns how the leg ends, or undefined to go on. */
  async #next(agent: AgentDefinition): Promise<KickOutcome | undefined> {
    this.#throwIfLeaseLost();
    const now = this.deps.clock.now();
    if (this.#record.cancelRequested && !this.#view.outcome) {
      await this.#append('outcome', { status: 'cancelled', error: 'cancelled by request' });
      return undefined;
    }
    const action = nextAction(this.#view, this.#record.activeTurnId, now);
    switch (action.kind) {
      case 'start-turn': {
        const turnId = this.#record.activeTurnId!;
        const turn = await this.deps.store.getTurn(this.key, turnId);
        if (!turn) return this.#finish('failed', undefined, `turn ${turnId} not found`);
        await this.#append('input', { input: turn.input }, turnId);
        break;
      }
      case 'model': {
        if (this.#view.steps >= agent.limits.maxSteps) {
          await this.#append('outcome', {
            status: 'failed',
            error: `step limit of ${agent.limits.maxSteps} reached`,
          });
          break;
        }
        if (!this.#fits(agent.model.maxDurationMs)) return this.#yieldForBudget(`model ${agent.model.id}`);
        const outcome = await this.#step(`model`, agent, () => this.#callModel(agent));
        if (outcome === 'waiting') return this.#wait();
        break;
      }
      case 'tools': {
        const tools = action.calls.map((p) => agent.tools.find((t) => t.name === p.call.name));
        const longest = Math.max(0, ...tools.map((t) => t?.maxDurationMs ?? 0));
        if (!this.#fits(longest))
          return this.#yieldForBudget(`tools ${action.calls.map((p) => p.call.name).join(', ')}`);
        if (tools.some((t) => t?.effect === 'once')) {
          const fresh = await this.#heartbeat.renewNow();
          if (fresh.cancelRequested) return undefined;
          if (!onceOnlyFitsLease(this.#heartbeat.until, this.deps.clock.now(), longest)) {
            return this.#yieldForBudget('a once-only call that the lease would not outlive');
          }
        }
        const outcome = await this.#step('tools', agent, () => this.#runTools(agent, action.calls));
        if (outcome === 'waiting') return this.#wait();
        break;
      }
      case 'reconcile':
        await this.#reconcile(agent, action.call);
        break;
      case 'parked':
        this.#log.warn('once-only call in an unknown state: parked for a human', { callId: action.callId });
        await this.#release('waiting', undefined);
        return 'parked';
      case 'wait-retry':
        return this.#wait();
      case 'finish':
        await this.#append('outcome', finalOutcome(agent, action.text));
        break;
      case 'publish':
        await this.#publish();
        break;
      case 'done':
        return this.#finish(this.#view.outcome!.status, undefined, undefined);
    }
    return undefined;
  }

  /** Runs a model or tools step; turns its errors into journal entries per the retry policy. */
  async #step(source: string, agent: AgentDefinition, run: () => Promise<void>): Promise<'ok' | 'waiting'> {
    try {
      await run();
      return 'ok';
    } catch (error) {
      if (error instanceof LegAborted || error instanceof LeaseLostError || error instanceof FailpointCrash)
        throw error;
      if (this.#controller.signal.aborted) throw new LegAborted(this.#controller.signal.reason as AbortWhy);
      if (error instanceof PayloadTooLargeError || !(error instanceof BatonError) || !error.retryable) {
        await this.#append('outcome', { status: 'failed', error: `${source}: ${errorMessage(error)}` });
        return 'ok';
      }
      return this.#recordRetryableError(error instanceof StepSourceError ? error.source : source, error, agent);
    }
  }

  async #recordRetryableError(source: string, error: Error, agent: AgentDefinition): Promise<'ok' | 'waiting'> {
    const tool = agent.tools.find((t) => `tool:${t.name}` === source);
    const policy = resolvePolicy(agent.retry, tool?.retry);
    const attempt = this.#view.failedAttempts + 1;
    if (attempt >= policy.attempts) {
      await this.#append('error', { source, message: errorMessage(error), attempt });
      await this.#append('outcome', {
        status: 'failed',
        error: `${source} failed ${attempt} times; last error: ${errorMessage(error)}`,
      });
      return 'ok';
    }
    const retryAt = this.deps.clock.now() + retryDelayMs(policy, attempt, this.deps.random());
    await this.#append('error', { source, message: errorMessage(error), attempt, retryAt });
    this.#log.warn('step failed; retrying after backoff', { source, attempt, retryAt });
    return 'waiting';
  }

  async #callModel(agent: AgentDefinition): Promise<void> {
    const started = this.deps.clock.now();
    const request = {
      system: agent.instructions,
      messages: buildTranscript(this.#entries),
      tools: agent.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: toolInputSchema(t) })),
    };
    const pending = agent.model.converse(request, this.#controller.signal);
    await this.deps.failpoint('mid-step');
    const response: ModelResponse = await pending;
    this.#throwIfAborted();
    this.deps.telemetry.metrics.duration('StepDuration', this.deps.clock.now() - started);
    this.deps.telemetry.metrics.count('InputTokens', response.usage.inputTokens);
    this.deps.telemetry.metrics.count('OutputTokens', response.usage.outputTokens);
    this.#tokensThisLeg += response.usage.inputTokens + response.usage.outputTokens;
    await this.#append('model', {
      text: response.text,
      toolCalls: [...response.toolCalls],
      stopReason: response.stopReason,
      usage: response.usage,
    });
  }

  /**
   * Runs the pending tool calls in parallel and journals their results one at a time, in call
   * order. A once-only call gets its watermark before it starts.
   */
  async #runTools(agent: AgentDefinition, calls: readonly PendingCall[]): Promise<void> {
    const started = this.deps.clock.now();
    const prepared = calls.map((pending) => {
      const tool = agent.tools.find((t) => t.name === pending.call.name);
      if (!tool) return { pending, error: `unknown tool "${pending.call.name}"` } as const;
      const parsed = tool.input.safeParse(pending.call.input);
      if (!parsed.success)
        return {
          pending,
          error: `invalid input for ${tool.name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
        } as const;
      return { pending, tool, input: parsed.data } as const;
    });
    for (const p of prepared) {
      if ('tool' in p && p.tool?.effect === 'once') {
        await this.#append('intent', {
          callId: p.pending.call.id,
          tool: p.tool.name,
          idempotencyKey: idempotencyKey(this.key, p.pending.modelSeq, p.pending.call.id),
        });
        await this.deps.failpoint('after-intent');
      }
    }
    const settled = await Promise.allSettled(
      prepared.map(async (p) => {
        if (!('tool' in p) || !p.tool) return;
        const once = p.tool.effect === 'once';
        if (once) this.#onceOnlyInFlight++;
        try {
          return await p.tool.run(p.input, {
            // Cancel never aborts a once-only call in flight; losing the lease still does.
            signal: once ? this.#leaseSignal() : this.#controller.signal,
            idempotencyKey: idempotencyKey(this.key, p.pending.modelSeq, p.pending.call.id),
            sessionId: this.key.id,
            log: (message, fields) => this.#log.info(message, { tool: p.tool.name, ...fields }),
            progress: (note) => this.#log.debug('tool progress', { tool: p.tool.name, note }),
          });
        } finally {
          if (once) this.#onceOnlyInFlight--;
        }
      }),
    );
    await this.deps.failpoint('mid-step');
    this.#throwIfLeaseLost();
    let retryable: { source: string; error: Error } | undefined;
    for (const [i, p] of prepared.entries()) {
      const result = settled[i]!;
      const base = { callId: p.pending.call.id, tool: p.pending.call.name };
      if (!('tool' in p) || !p.tool) {
        await this.#append('tool', { ...base, ok: false, error: p.error });
      } else if (result.status === 'fulfilled') {
        await this.#append('tool', { ...base, ok: true, output: result.value });
      } else if (this.#controller.signal.aborted && p.tool.effect !== 'once') {
        // Aborted by cancel or budget: journal nothing; the call runs again or the turn ends.
      } else if (result.reason instanceof BatonError && result.reason.retryable) {
        retryable ??= { source: `tool:${p.tool.name}`, error: result.reason };
      } else {
        await this.#append('tool', { ...base, ok: false, error: errorMessage(result.reason) });
      }
    }
    this.deps.telemetry.metrics.duration('StepDuration', this.deps.clock.now() - started);
    this.#throwIfAborted();
    if (retryable) throw new StepSourceError(retryable.source, retryable.error);
  }

  async #reconcile(agent: AgentDefinition, pending: PendingCall): Promise<void> {
    const tool = agent.tools.find((t) => t.name === pending.call.name);
    const key = idempotencyKey(this.key, pending.modelSeq, pending.call.id);
    const verdict = tool?.reconcile ? await tool.reconcile(key, pending.call.input) : ({ verdict: 'unknown' } as const);
    this.#log.warn('once-only call found interrupted; reconciled', {
      callId: pending.call.id,
      verdict: verdict.verdict,
    });
    await this.#append('reconciled', {
      callId: pending.call.id,
      verdict: verdict.verdict,
      ...(verdict.verdict === 'done' ? { output: verdict.output } : {}),
    });
  }

  async #publish(): Promise<void> {
    await this.deps.failpoint('between-outcome-and-publish');
    const outcome = this.#view.outcome!;
    const turnId = this.#view.turnId ?? this.#record.activeTurnId ?? '';
    await this.deps.store.setTurnOutcome(this.key, turnId, { ...outcome, at: this.deps.clock.now() });
    await this.deps.results.publish(this.#result(turnId, outcome.status, outcome.output, outcome.error), {
      trace: this.#trace,
    });
    await this.#append('published', {});
  }

  #result(turnId: string, status: OutcomeStatus, output: unknown, error: string | undefined): Result {
    return {
      v: 1,
      ticketId: this.#record.ticketId,
      tenant: this.key.tenant,
      agent: this.key.agent,
      sessionId: this.key.id,
      turnId,
      status,
      ...(output !== undefined ? { output } : {}),
      ...(error !== undefined ? { error } : {}),
      legs: this.#view.legs,
      steps: this.#view.steps,
      usage: this.#view.usage,
    };
  }

  /** Ends the turn with an outcome and runs the rest of the finish protocol. */
  async #finish(status: OutcomeStatus, output: unknown, error: string | undefined): Promise<KickOutcome> {
    // A turn has one outcome: once it is journaled, a later leg only publishes and releases it.
    if (!this.#view.outcome) {
      if (error) this.#log.error('turn failed', { error });
      await this.#append('outcome', {
        status,
        ...(output !== undefined ? { output } : {}),
        ...(error ? { error } : {}),
      });
    }
    if (!this.#view.published) await this.#publish();
    const final = this.#view.outcome?.status ?? status;
    await this.#release(final === 'superseded' ? 'completed' : final, undefined);
    this.deps.telemetry.metrics.count('Outcomes', 1, { status: final });
    this.#log.info('turn finished', { status: final, legs: this.#view.legs, steps: this.#view.steps });
    return 'finished';
  }

  /** The journal itself cannot be trusted: record the outcome on the turn and the record only. */
  async #failUnjournaled(error: string): Promise<KickOutcome> {
    this.#log.error('turn failed', { error });
    const turnId = this.#record.activeTurnId ?? '';
    await this.deps.store.setTurnOutcome(this.key, turnId, { status: 'failed', error, at: this.deps.clock.now() });
    await this.deps.results.publish(this.#result(turnId, 'failed', undefined, error), { trace: this.#trace });
    await this.#release('failed', undefined);
    this.deps.telemetry.metrics.count('Outcomes', 1, { status: 'failed' });
    return 'finished';
  }

  /** Waits for a retry timer: a delayed kick wakes the session; the sweeper is the backstop. */
  /** Leaves derived state for the next leg. Not a journal write: any owner may write the same one. */
  async #snapshot(): Promise<void> {
    const snapshot = takeSnapshot(this.#view, this.#entries);
    if (snapshot)
      await this.deps.store.putSnapshot(this.key, snapshot, ttlSeconds(this.deps.config, this.deps.clock.now()));
  }

  async #wait(): Promise<KickOutcome> {
    const retryAt = this.#view.retryAt ?? this.deps.clock.now();
    const delayMs = Math.max(0, retryAt - this.deps.clock.now());
    await this.deps.workQueue.sendKick(
      {
        v: 1,
        session: this.key,
        reason: 'retry',
        ...(delayMs > MAX_DELAY_SECONDS * 1000 ? { notBefore: retryAt } : {}),
      },
      { trace: this.#trace, delaySeconds: Math.min(MAX_DELAY_SECONDS, Math.ceil(delayMs / 1000)) },
    );
    // Due at retryAt: the delayed kick (rounded up to whole seconds) finds it due, and the sweeper
    // wakes it at the same time should that kick be lost.
    await this.#release('waiting', retryAt);
    return 'waiting';
  }

  #fits(maxDurationMs: number): boolean {
    return stepFits(maxDurationMs, this.invocation.remainingMs(), this.deps.config.reserveMs);
  }

  /** Hands the session to the next leg: a continuation first, then a release that may fail. */
  async #yieldForBudget(what: string): Promise<KickOutcome> {
    if (this.#stepsThisLeg === 0 && idleLegsAtEnd(this.#entries) >= MAX_IDLE_LEGS) {
      return this.#finish('failed', undefined, `step cannot fit in the budget: ${what}`);
    }
    await this.#heartbeat.stop();
    await this.#snapshot();
    await this.deps.workQueue.sendKick(
      { v: 1, session: this.key, reason: 'continuation', fromEpoch: this.epoch, turnId: this.#record.activeTurnId },
      { trace: this.#trace },
    );
    await this.deps.failpoint('after-continuation');
    // After the continuation is sent the predecessor writes nothing but its release, whose
    // failure is expected when the continuation already took over.
    const released = await this.deps.store
      .release(this.key, {
        owner: this.owner,
        epoch: this.epoch,
        state: 'queued',
        seenVersion: this.#record.pendingVersion,
        sweepAt: this.deps.clock.now() + this.deps.config.sweepGraceMs,
        progressed: this.#progressed,
        tokens: this.#tokensThisLeg,
      })
      .catch(() => undefined);
    this.deps.telemetry.metrics.count('Yields');
    this.#log.info('yielded to a continuation', {
      seq: this.#view.lastSeq,
      steps: this.#stepsThisLeg,
      released: released?.ok,
    });
    return 'yielded';
  }

  async #release(state: SessionState, sweepAt: number | undefined): Promise<void> {
    await this.#heartbeat.stop();
    const result = await this.deps.store.release(this.key, {
      owner: this.owner,
      epoch: this.epoch,
      state,
      seenVersion: this.#record.pendingVersion,
      sweepAt,
      progressed: this.#progressed,
      ttlSeconds: ttlSeconds(this.deps.config, this.deps.clock.now()),
      tokens: this.#tokensThisLeg,
    });
    if (!result.ok) throw new LeaseLostError(`release of epoch ${this.epoch} refused`, result.current);
  }

  /** The first write of a new owner: once it lands, a stale owner's next append collides. */
  async #appendLegMarker(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#append('leg', {
          owner: this.owner,
          reason: this.reason,
          traceparent: formatTraceparent(this.#trace),
        });
        return;
      } catch (error) {
        if (!(error instanceof SeqTakenError) || attempt >= MARKER_ATTEMPTS) throw error;
        // A stale owner's last write won this seq: read what it wrote and go after it.
        const newer = await this.deps.store.readJournal(this.key, this.#view.lastSeq);
        this.#entries.push(...newer);
        this.#view = foldJournal(newer, this.#view);
      }
    }
  }

  /** Appends at the next seq. One journal write in flight at a time: the loop awaits each. */
  async #append<K extends EntryKind>(kind: K, data: EntryDataOf<K>, turnId = this.#view.turnId): Promise<void> {
    const entry = {
      seq: this.#view.lastSeq + 1,
      kind,
      epoch: this.epoch,
      writeId: newWriteId(),
      at: this.deps.clock.now(),
      ...(turnId !== undefined ? { turnId } : {}),
      data,
    } as JournalEntry;
    const bytes = Buffer.byteLength(JSON.stringify(data));
    const limit = this.#agent?.limits.maxPayloadBytes;
    if (limit !== undefined && bytes > limit && kind !== 'outcome') {
      throw new PayloadTooLargeError(`${kind} payload at seq ${entry.seq}`, bytes, limit);
    }
    const next = applyEntry(this.#view, entry);
    await this.deps.store.append(this.key, entry, ttlSeconds(this.deps.config, this.deps.clock.now()));
    this.#entries.push(entry);
    this.#view = next;
    this.deps.telemetry.metrics.bytes('BytesJournaled', bytes);
    if (kind === 'model' || kind === 'tool' || kind === 'reconciled') {
      this.#stepsThisLeg++;
      this.deps.telemetry.metrics.count('Steps');
    }
    if (kind !== 'leg' && !this.#progressed) {
      this.#progressed = true;
      // A recovered leg clears the crash-loop counter as soon as it progresses: one killed
      // before its first renewal would otherwise count as a recovery without progress.
      if (this.#record.recoveries > 0) {
        await this.#heartbeat.renewNow().catch((error: unknown) => {
          if (error instanceof LeaseLostError) throw error;
        });
      }
    }
    this.#log.debug('journaled', { seq: entry.seq, kind, bytes });
    await this.deps.failpoint('after-append');
  }

  #abort(why: AbortWhy): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(why);
    if (why === 'lease-lost') this.#leaseController.abort(why);
  }

  readonly #leaseController = new AbortController();
  #leaseSignal(): AbortSignal {
    return this.#leaseController.signal;
  }

  #throwIfLeaseLost(): void {
    if (this.#leaseController.signal.aborted) throw new LegAborted('lease-lost');
  }

  #throwIfAborted(): void {
    if (this.#controller.signal.aborted) throw new LegAborted(this.#controller.signal.reason as AbortWhy);
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
    const entry = entries[i];
    if (entry?.kind === 'model' || entry?.kind === 'tool' || entry?.kind === 'reconciled') break;
    if (entry?.kind === 'leg') {
      if (entry.data.reason !== 'continuation') break;
      legs++;
    }
  }
  return legs;
}

/** The turn's outcome from the final answer: structured when the agent declares an output schema. */
function finalOutcome(agent: AgentDefinition, text: string): EntryDataOf<'outcome'> {
  if (!agent.output) return { status: 'completed', output: text };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return {
      status: 'failed',
      error: `final answer is not the JSON that agent ${agent.name} declares: ${text.slice(0, 200)}`,
    };
  }
  const parsed = agent.output.safeParse(json);
  return parsed.success
    ? { status: 'completed', output: parsed.data }
    : {
        status: 'failed',
        error: `final answer does not match the output schema of ${agent.name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      };
}

/** A retryable tool error, tagged with the tool it came from for the retry policy. */
class StepSourceError extends BatonError {
  constructor(
    readonly source: string,
    cause: Error,
  ) {
    super(cause.message, { cause, retryable: true });
    this.name = cause.name;
  }
}
