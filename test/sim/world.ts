import { MemoryBlobStore } from '../../lib/adapters/memory/memory-blob-store.ts';
import { MemoryFairShare } from '../../lib/adapters/memory/memory-fair-share.ts';
import { MemorySessionStore } from '../../lib/adapters/memory/memory-session-store.ts';
import { agentRegistry } from '../../lib/agent/define-agent.ts';
import { BatonClient } from '../../lib/client/baton-client.ts';
import { errorMessage, InvalidInputError } from '../../lib/core/errors.ts';
import { type SessionKey, sequentialIds } from '../../lib/core/ids.ts';
import { TURN_STOPPED } from '../../lib/core/inbox.ts';
import type { Kick, Ticket } from '../../lib/core/messages.ts';
import type { TenantLimits } from '../../lib/core/tenant-limits.ts';
import { SWEEP_SHARDS } from '../../lib/ports/session-store.ts';
import type { RuntimeConfig, RuntimeDeps } from '../../lib/runtime/deps.ts';
import { noFailpoints } from '../../lib/runtime/failpoints.ts';
import { acceptTicket, recordRejectedTicket } from '../../lib/runtime/intake.ts';
import { runKick } from '../../lib/runtime/step-runner.ts';
import { sweep } from '../../lib/runtime/sweeper.ts';
import { createMemoryTelemetry } from '../../lib/telemetry/memory-telemetry.ts';
import { noopTelemetry } from '../../lib/telemetry/telemetry.ts';
import { simAgents } from './agents.ts';
import { SIM_START_MS, SimClock } from './clock.ts';
import { type ClientContext, runCommand } from './commands.ts';
import { Facts } from './facts.ts';
import { drawTenantLimits, gatedFairShare, watchSteps } from './fair-share.ts';
import { drawProfile, type FaultProfile, gateVerdict, isInjected } from './faults.ts';
import { checkpoint, retireExpired } from './invariants.ts';
import { addStops, type Command, drawTheme, makePlan, type Plan } from './plan.ts';
import { gatedStore } from './ports.ts';
import { type Message, SimResults, SimTicketQueue, SimWorkQueue } from './queues.ts';
import { Rng } from './rng.ts';
import { type Actor, Scheduler } from './scheduler.ts';
import { Downstream } from './services.ts';
import { Trace } from './trace.ts';

/**
 * One simulated deployment: the real runtime (intake, legs, sweeper) and the real client on the
 * in-memory store and the simulator's queues, clock and downstream services, every port behind
 * a gate. `World.run` plays a seed's plan through it, then drains it without faults.
 */

/** Short durations, so a run covers many leases, sweeps and hand-offs in little virtual time. */
export const SIM_CONFIG: RuntimeConfig = {
  // 3 s rather than 2: a once-only call of 1 s starts only under a lease that outlives it by the
  // 1 s of clock skew allowed, and a renewal's round trip must still leave that.
  leaseTtlMs: 3_000,
  reserveMs: 1_000,
  retentionDays: 1,
  sweepGraceMs: 3_000,
  // Small, so further turns are refused as full now and then.
  maxPendingInputs: 2,
};
export const FUNCTION_TIMEOUT_MS = 10_000;
const SWEEP_WINDOW_MS = 60_000;
const SWEEP_INTERVAL_MS = 1_000;
const RETENTION_MS = SIM_CONFIG.retentionDays * 24 * 3600 * 1000;

export interface WorldOptions {
  readonly seed: number;
  /** Keep every trace event, not only the last ones. */
  readonly traceAll?: boolean | undefined;
  /** Scheduler steps of the fault phase, at most; the drain has its own bound. */
  readonly chaosSteps?: number;
  /** Add stops of one turn to the plan (default true; see RunOptions.stops). */
  readonly stops?: boolean | undefined;
}

export interface RunStats {
  readonly steps: number;
  readonly events: number;
  readonly virtualMs: number;
  readonly legs: number;
  readonly sessions: number;
  readonly results: number;
  readonly crashes: number;
  /** Stops of one turn the clients asked for, and the turns that ended stopped (by their result). */
  readonly stopsAsked: number;
  /** Stops answered `requested` (a turn running or queued) and `already-ended` (a no-op). */
  readonly stopsRequested: number;
  readonly stopsAlreadyEnded: number;
  readonly turnsStopped: number;
}

export class World {
  readonly rng: Rng;
  readonly sim: Scheduler;
  readonly clock: SimClock;
  readonly trace: Trace;
  readonly memory: MemorySessionStore;
  readonly store: ReturnType<typeof gatedStore>;
  /** Tenant slots and model-call buckets (fair sharing), read without gates by the invariants. */
  readonly fairMemory = new MemoryFairShare();
  /** The seed's tenant limits; undefined: none, as before fair sharing. */
  readonly tenantLimits: TenantLimits | undefined;
  readonly work: SimWorkQueue;
  readonly tickets: SimTicketQueue;
  readonly results: SimResults;
  readonly services: Downstream;
  readonly deps: RuntimeDeps;
  readonly client: BatonClient;
  readonly facts = new Facts();
  readonly plan: Plan;
  readonly chaosProfile: FaultProfile;
  profile: FaultProfile;
  #faultRng: Rng;
  #commandRng: Rng;
  #next = 0;
  #invocations = 0;
  #nextSweepAt = SIM_START_MS;
  #playing = true;
  steps = 0;
  crashes = 0;
  /** What an idle gap's checkpoint saw of each session, to tell afterwards which ones expired. */
  pendingRetirement: { key: SessionKey; terminal: boolean; items: number }[] = [];
  /** Questions the operator is answering now. */
  readonly operatorBusy = new Set<string>();
  /** What the operator found waiting for a human, by the record's version when it looked. */
  readonly operatorLooks = new Map<string, { key: SessionKey; question: string; kind: 'approval' | 'parked' }[]>();

  constructor(readonly options: WorldOptions) {
    const root = new Rng(options.seed);
    this.rng = root.fork();
    this.#faultRng = root.fork();
    this.#commandRng = root.fork();
    const planRng = root.fork();
    const serviceRng = root.fork();
    const theme = drawTheme(root.fork());
    this.chaosProfile = drawProfile(root.fork(), theme);
    this.profile = this.chaosProfile;
    // Drawn after every older draw, so seeds without limits replay as they did.
    this.tenantLimits = drawTenantLimits(root.fork());
    // Likewise stops of one turn: a seed without them replays as before they existed.
    const stopRng = root.fork();
    let clock: SimClock | undefined;
    this.trace = new Trace(() => clock?.now() ?? SIM_START_MS, SIM_START_MS, { everything: options.traceAll === true });
    this.sim = new Scheduler(this.rng, this.trace);
    clock = new SimClock(this.sim);
    this.clock = clock;
    this.memory = new MemorySessionStore({ blobs: new MemoryBlobStore(), offloadThresholdBytes: 350_000, clock });
    watchSteps(this.memory, this.fairMemory, this.tenantLimits, this.facts);
    this.store = gatedStore(this.memory, this.sim);
    this.work = new SimWorkQueue(this.sim, clock, this.#faultRng.fork());
    this.tickets = new SimTicketQueue(this.sim, clock, this.#faultRng.fork());
    this.results = new SimResults(this.sim, clock);
    this.services = new Downstream(this.sim, clock, serviceRng, () => this.profile);
    const ids = sequentialIds();
    this.deps = {
      store: this.store,
      workQueue: this.work,
      results: this.results,
      clock,
      agents: agentRegistry(simAgents(this.services, clock)),
      // Log lines only when someone will read them (--verbose): kept for every seed, they cost GC time.
      telemetry: options.traceAll ? createMemoryTelemetry() : noopTelemetry,
      failpoint: noFailpoints,
      fairShare: gatedFairShare(this.fairMemory, this.sim),
      config: this.tenantLimits ? { ...SIM_CONFIG, tenantLimits: this.tenantLimits } : SIM_CONFIG,
      random: () => this.rng.float(),
      ids,
    };
    this.client = new BatonClient({
      store: this.store,
      tickets: this.tickets,
      workQueue: this.work,
      clock,
      maxPendingInputs: SIM_CONFIG.maxPendingInputs,
      sweepGraceMs: SIM_CONFIG.sweepGraceMs,
    });
    const plan = makePlan(planRng, theme);
    this.plan = options.stops === false ? plan : addStops(plan, stopRng);
  }

  get clientContext(): ClientContext {
    return {
      client: this.client,
      tickets: this.tickets,
      store: this.store,
      facts: this.facts,
      services: this.services,
      rng: this.#commandRng,
    };
  }

  get commandsLeft(): number {
    return this.plan.commands.length - this.#next;
  }

  /** Nothing can run right now: no gate may open and no message is visible (time must move first). */
  idleNow(): boolean {
    const now = this.clock.now();
    return (
      this.sim.enabledGates(now).length === 0 &&
      this.work.queue.visible(now).length === 0 &&
      this.tickets.queue.visible(now).length === 0
    );
  }

  /** One scheduler decision; false when nothing can happen now or later (the world is settled). */
  async step(phase: 'chaos' | 'drain'): Promise<boolean> {
    await this.sim.settle();
    this.steps++;
    this.#startSweeperIfDue();
    const now = this.clock.now();
    const gates = this.sim.enabledGates(now).length;
    const kicks = this.work.queue.visible(now);
    const tickets = this.tickets.queue.visible(now);
    const command = phase === 'chaos' ? await this.#issuableCommand() : undefined;
    if (gates + kicks.length + tickets.length === 0 && command === undefined) {
      const next = await this.#nextEventAt();
      if (next === undefined) return false;
      this.clock.set(next);
      return true;
    }
    const choice = this.rng.weighted<'gate' | 'kick' | 'ticket' | 'command' | 'tick' | 'jump'>([
      ['gate', gates ? 12 : 0],
      ['kick', kicks.length ? 3 : 0],
      ['ticket', tickets.length ? 3 : 0],
      ['command', command ? 1.5 : 0],
      ['tick', 1],
      ['jump', phase === 'chaos' && this.profile.timeJump > 0 ? this.profile.timeJump * 20 : 0],
    ]);
    switch (choice) {
      case 'gate':
        this.#openGate();
        break;
      case 'kick':
        this.#deliverKick(this.rng.pick(kicks));
        break;
      case 'ticket':
        this.#deliverTicket(this.rng.pick(tickets));
        break;
      case 'command':
        await this.#issue(command!);
        break;
      case 'tick':
        this.clock.advance(this.rng.int(1, 300));
        break;
      case 'jump': {
        const ms = this.rng.chance(0.8)
          ? SIM_CONFIG.leaseTtlMs + this.rng.int(0, 3 * SIM_CONFIG.leaseTtlMs)
          : this.rng.int(30_000, 150_000);
        this.trace.event('clock', 'JUMP', `${ms}ms`);
        this.clock.advance(ms);
        break;
      }
    }
    return true;
  }

  #openGate(): void {
    const now = this.clock.now();
    const gate = this.sim.chooseGate(now)!;
    const verdict = gateVerdict(this.#faultRng, this.profile, gate.actor.kind, gate.kind, gate.op);
    if (verdict.kind === 'crash') {
      this.crashes++;
      this.sim.crash(gate.actor, `at ${gate.op}`);
    } else if (verdict.kind === 'pause') {
      const ms = SIM_CONFIG.leaseTtlMs + this.#faultRng.int(1, 2 * SIM_CONFIG.leaseTtlMs);
      this.sim.pause(gate.actor, now + ms, now);
    } else {
      this.sim.open(gate, verdict.fault);
      this.#pounce(gate.actor.name, gate.op);
    }
  }

  /** When a pouncing command stops waiting for its moment. */
  #pounceGivesUpAt(): number {
    return SIM_START_MS + (this.plan.at[this.#next] ?? 0) + 20_000;
  }

  /**
   * Issues the next command now if it waits for this moment: a worker of its session has just
   * been let through the call that marks it. The command's client gets the highest priority, so
   * it goes on before that worker's next calls: into the window it was aimed at.
   */
  #pounce(actor: string, op: string): void {
    const command = this.plan.commands[this.#next];
    const pounce = this.plan.pounce[this.#next];
    if (!pounce || !command || !('session' in command) || !this.#playing) return;
    if (this.clock.now() < SIM_START_MS + this.plan.at[this.#next]!) return;
    const sid = command.session.key.id.slice(0, 6);
    if (!actor.startsWith('w') || !actor.includes(sid)) return;
    const hit =
      pounce === 'turn-end'
        ? op.startsWith(`results.publish(${sid}`)
        : pounce === 'effect'
          ? op.startsWith(`svc.refund(${sid}`) || op.startsWith(`svc.reconcile(${sid}`)
          : op.startsWith('store.getTurn(') && op.includes(' task-');
    if (!hit) return;
    this.trace.event('sim', 'POUNCE', `${command.kind} ${command.session.name} at ${pounce}`);
    void this.#issue(command, 2);
  }

  /** A Lambda invocation of the step function for one kick, with a deadline on the simulated clock. */
  #deliverKick(message: Message<Kick>): void {
    this.work.queue.receive(message);
    const kick = message.body;
    const n = ++this.#invocations;
    const deadline = this.clock.now() + FUNCTION_TIMEOUT_MS;
    const invocation = { requestId: `req-${n}`, remainingMs: () => deadline - this.clock.now() };
    let cancelDeadline: (() => void) | undefined;
    const actor = this.sim.spawn(
      'worker',
      `w${n}(${kick.reason} ${kick.session.id.slice(0, 6)})`,
      () => runKick(kick, invocation, this.deps),
      (result) => {
        cancelDeadline?.();
        if (result.ok) return;
        // The handler reports the record failed: SQS brings it back after the visibility timeout.
        this.work.queue.returnLater(message);
        if (!isInjected(result.error))
          this.facts.violate('leg-completes', `${kick.session.id}: a leg threw ${errorMessage(result.error)}`);
      },
    );
    actor.onCrash = () => {
      cancelDeadline?.();
      this.work.queue.returnLater(message);
    };
    // Lambda ends an invocation at its timeout, whatever it was doing.
    cancelDeadline = this.clock.setTimer(FUNCTION_TIMEOUT_MS, () => this.sim.crash(actor, 'function timeout'));
  }

  /** An invocation of the intake function for one ticket: accepted, refused and recorded, or retried. */
  #deliverTicket(message: Message<Ticket>): void {
    this.tickets.queue.receive(message);
    const ticket = message.body;
    const body = JSON.stringify(ticket);
    const origin = { sentAt: message.sentAt };
    const n = ++this.#invocations;
    const actor = this.sim.spawn(
      'intake',
      `i${n}(${ticket.ticketId})`,
      async () => {
        try {
          const accepted = await acceptTicket(body, message.trace, this.deps, origin);
          // Acknowledged: from here the ticket is the system's promise.
          this.facts.acceptTurn(accepted.key, accepted.turnId, 'intake');
          return true;
        } catch (error) {
          if (!(error instanceof InvalidInputError)) throw error;
          return recordRejectedTicket(body, error.message, this.deps, origin, message.trace).catch(() => false);
        }
      },
      (result) => {
        if (result.ok && result.value) return;
        this.tickets.queue.returnLater(message);
        if (!result.ok && !isInjected(result.error))
          this.facts.violate('intake-completes', `${ticket.ticketId}: intake threw ${errorMessage(result.error)}`);
      },
    );
    actor.onCrash = () => this.tickets.queue.returnLater(message);
  }

  /**
   * The next command, when one may start now: a few clients at a time; an idle gap only when all
   * is still. A gap that cannot come (the world is idle but a session waits for a human, which no
   * command behind the gap will answer) is given up.
   */
  async #issuableCommand(): Promise<Command | undefined> {
    const command = this.plan.commands[this.#next];
    if (command === undefined) return undefined;
    if (this.clock.now() < SIM_START_MS + this.plan.at[this.#next]!) return undefined;
    // A pouncing command waits for its moment (#pounce), for a while; then it goes anyway.
    if (this.plan.pounce[this.#next] && this.clock.now() < this.#pounceGivesUpAt()) return undefined;
    if (command.kind !== 'idle-gap') return this.sim.liveActors('client').length < 3 ? command : undefined;
    if (await this.#stillForRetention()) return command;
    if (
      this.idleNow() &&
      this.sim.liveActors().every((a) => a.kind === 'sweeper') &&
      (await this.#nextEventAt()) === undefined
    ) {
      this.trace.event('sim', 'gap given up');
      this.#next++;
    }
    return undefined;
  }

  async #issue(command: Command, priority?: number): Promise<void> {
    this.#next++;
    if (command.kind === 'idle-gap') {
      await this.idleGap(command.fraction);
      return;
    }
    const n = ++this.#invocations;
    const name = `${command.kind} ${command.session.name}`;
    this.sim.spawn(
      'client',
      `c${n}(${name})`,
      () => runCommand(this.clientContext, command),
      (result) => {
        if (!result.ok && !isInjected(result.error))
          this.facts.violate('client-completes', `${name}: the client threw ${errorMessage(result.error)}`);
      },
      priority,
    );
  }

  /** Skips the commands that can no longer run (an idle gap that never found a quiet moment). */
  skipRemainingCommands(): void {
    this.#next = this.plan.commands.length;
    this.#playing = false;
  }

  /**
   * Nobody uses anything for `fraction` of the retention: the clock jumps and DynamoDB's TTL
   * deletes what expired. Before the jump, the checks see every session settled (so a finished
   * session whose items then go is known to have ended well).
   */
  async idleGap(fraction: number): Promise<void> {
    await checkpoint(this);
    const ms = Math.round(RETENTION_MS * fraction);
    this.trace.event('clock', 'IDLE-GAP', `${ms}ms`);
    this.clock.advance(ms);
    const removed = this.memory.expireItems(Math.floor(this.clock.now() / 1000));
    this.trace.event('store', 'TTL', `${removed} items expired`);
    retireExpired(this);
  }

  /**
   * Quiet enough to skip most of a retention: nothing running, nothing queued, no session due
   * (a timer, a retry) and none waiting for a human — a day passing over any of those would be a
   * stall no deployment sees, not an idle conversation.
   */
  async #stillForRetention(): Promise<boolean> {
    if (this.sim.waitingGates > 0) return false;
    if (this.sim.liveActors().some((a) => a.kind !== 'sweeper')) return false;
    if (this.work.queue.pending.length > 0 || this.tickets.queue.pending.length > 0) return false;
    const records = await this.sim.outside(() => this.memory.listSessions({ limit: 10_000 }));
    return records.every(
      (r) => r.sweepAt === undefined && (r.state === 'idle' || ['completed', 'failed', 'cancelled'].includes(r.state)),
    );
  }

  /** The sweeper's schedule: an invocation every minute, each polling for a minute. */
  #startSweeperIfDue(): void {
    const now = this.clock.now();
    if (now < this.#nextSweepAt || this.sim.liveActors('sweeper').length > 0) return;
    this.#nextSweepAt = now + SWEEP_WINDOW_MS;
    const n = ++this.#invocations;
    // Its own window ends it; no deadline timer, which would keep a settled world ticking.
    const deadline = now + SWEEP_WINDOW_MS + 5_000;
    this.sim.spawn(
      'sweeper',
      `sw${n}`,
      () =>
        sweep(
          {
            windowMs: SWEEP_WINDOW_MS,
            intervalMs: SWEEP_INTERVAL_MS,
            stalledAfterMs: 2 * SIM_CONFIG.leaseTtlMs,
            remainingMs: () => deadline - this.clock.now(),
          },
          this.deps,
        ),
      (result) => {
        if (!result.ok && !isInjected(result.error))
          this.facts.violate('sweeper-completes', `the sweeper threw ${errorMessage(result.error)}`);
      },
    );
  }

  /**
   * When something next happens by itself: an actor's timer (not the sweeper's polls: a poll
   * finds nothing unless a session is due), a delayed or returning message, a paused actor
   * thawing, or a session falling due for the sweeper. Undefined: nothing ever will.
   */
  async #nextEventAt(): Promise<number | undefined> {
    const now = this.clock.now();
    const times: number[] = [];
    const timer = this.clock.nextDue((actor: Actor) => actor.kind !== 'sweeper');
    if (timer !== undefined) times.push(timer);
    for (const queue of [this.work.queue, this.tickets.queue] as const) {
      const at = queue.nextVisibleAt(now);
      if (at !== undefined) times.push(at);
    }
    for (const actor of this.sim.liveActors())
      if (actor.pausedUntil > now && actor.gates > 0) times.push(actor.pausedUntil);
    // The next command's time, while the fault phase plays them.
    const commandAt = this.plan.pounce[this.#next]
      ? this.#pounceGivesUpAt()
      : SIM_START_MS + (this.plan.at[this.#next] ?? 0);
    if (this.#playing && this.#next < this.plan.commands.length && commandAt > now) times.push(commandAt);
    const due = await this.#earliestSweepAt();
    if (due !== undefined) {
      // The sweeper kicks a session once its sweepAt has passed, at its next poll.
      const poll = this.clock.nextDue((actor) => actor.kind === 'sweeper');
      times.push(Math.max(due + 1, poll ?? this.#nextSweepAt, now + 1));
    }
    if (times.length === 0) return undefined;
    return Math.max(now + 1, Math.min(...times));
  }

  /** The earliest sweepAt of any session, read from the sweep index (the simulator's read: no gate). */
  async #earliestSweepAt(): Promise<number | undefined> {
    let at: number | undefined;
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      const [first] = await this.memory.findDue(shard, Number.MAX_SAFE_INTEGER, 1);
      if (first !== undefined && (at === undefined || first.sweepAt < at)) at = first.sweepAt;
    }
    return at;
  }

  #stopAnswers(answer: string): number {
    return [...this.facts.stops.values()].reduce((n, stop) => n + stop.answers.filter((a) => a === answer).length, 0);
  }

  stats(): RunStats {
    return {
      steps: this.steps,
      events: this.trace.events,
      virtualMs: this.clock.now() - SIM_START_MS,
      legs: this.#invocations,
      sessions: this.plan.sessions.length,
      results: this.results.published.length,
      crashes: this.crashes,
      stopsAsked: [...this.facts.stops.values()].reduce((n, stop) => n + stop.asked, 0),
      stopsRequested: this.#stopAnswers('requested'),
      stopsAlreadyEnded: this.#stopAnswers('already-ended'),
      turnsStopped: new Set(this.results.published.filter((r) => r.result.error === TURN_STOPPED).map((r) => r.id))
        .size,
    };
  }
}
