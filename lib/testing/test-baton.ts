import type { ManualClock } from '../adapters/memory/manual-clock.ts';
import { MemoryBlobStore } from '../adapters/memory/memory-blob-store.ts';
import {
  MemoryResultPublisher,
  MemoryTicketQueue,
  MemoryWorkQueue,
  type SentMessage,
} from '../adapters/memory/memory-queues.ts';
import { MemorySessionStore } from '../adapters/memory/memory-session-store.ts';
import { type AgentDefinition, type AgentRegistry, assertFitsBudget } from '../agent/define-agent.ts';
import type { ToolContext } from '../agent/define-tool.ts';
import { buildTranscript } from '../agent/transcript.ts';
import {
  BatonClient,
  type SendMode,
  type SessionEvent,
  type SessionStatus,
  type StopTurnResult,
} from '../client/baton-client.ts';
import type { CallIdentity } from '../core/call-identity.ts';
import { InvalidInputError } from '../core/errors.ts';
import { DEFAULT_TENANT, sequentialIds } from '../core/ids.ts';
import type { JournalEntry } from '../core/journal.ts';
import type { Kick, Result, Ticket } from '../core/messages.ts';
import { RUNTIME_DEFAULTS } from '../core/resources.ts';
import type { ChatMessage } from '../ports/model-client.ts';
import { type SessionRecord, SWEEP_SHARDS, type TurnOutcome } from '../ports/session-store.ts';
import type { RuntimeDeps } from '../runtime/deps.ts';
import { acceptTicket, recordRejectedTicket } from '../runtime/intake.ts';
import { runKick } from '../runtime/step-runner.ts';
import { sweep } from '../runtime/sweeper.ts';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.ts';
import { AgentDoubles, type ToolMock, type ToolMockImpl } from './agent-doubles.ts';
import { type Duration, durationMs } from './duration.ts';
import { type CrashHandle, type CrashPoint, LegTracker, type RunningLeg } from './leg-tracker.ts';
import type { ModelMock, ModelScript } from './model-mock.ts';
import { RanTwiceError, StepLedger } from './step-ledger.ts';
import { TestRun } from './test-run.ts';

export interface TestBatonOptions {
  /** The agents under test (an array, or the registry your handlers load). */
  readonly agents: readonly AgentDefinition[] | AgentRegistry;
  /** The tenant sessions start under (default `default`). */
  readonly tenant?: string | undefined;
  /** One leg's invocation: a leg yields to a continuation near its end (default 5 minutes, as deployed). */
  readonly functionTimeout?: Duration | undefined;
  /** The lease's TTL: how long a crashed leg holds its session before the sweeper recovers it (default 30 s). */
  readonly leaseTtl?: Duration | undefined;
  /** Days a finished session is kept; `advance` past it and DynamoDB's TTL removes it (default 30). */
  readonly retentionDays?: number | undefined;
  /** Where the runtime logs and counts (default: nowhere). */
  readonly telemetry?: Telemetry | undefined;
}

export interface StartOptions {
  /** The ticket's id (default `ticket-1`, `ticket-2` … in this baton): the same id converges on the same session. */
  readonly ticketId?: string | undefined;
  readonly tenant?: string | undefined;
}

export interface SendToOptions {
  /** The turn's (or message's) id (default `turn-1`, `turn-2` …). */
  readonly id?: string | undefined;
  /** `queue` (default): a further turn; `inject`: a message into the running turn; `steer`: a turn that supersedes it. */
  readonly mode?: SendMode | undefined;
}

/** A leg threw out of the step runner: a bug the deployed handler would report and SQS retry. */
export class LegThrewError extends Error {
  constructor(
    readonly sessionId: string,
    cause: unknown,
  ) {
    super(`a leg of session ${sessionId} threw: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'LegThrewError';
  }
}

/** A message delivered this many times within one action means a session that never comes to rest. */
const MAX_DELIVERIES_PER_ACTION = 10_000;
/** Event-loop turns without progress before a leg's wait on the clock counts as a wait for time. */
const IDLE_TURNS = 20;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs agents through the real runtime (intake, step runner, protocol, sweeper) on the in-memory
 * twins of the ports, with a manual clock. Every action (start, send, approve, deny, cancel, stopTurn,
 * advance) delivers what it causes until the system is at rest, then returns: a session is then
 * finished, idle or waiting for time or a human. Time moves only with `advance` — except what
 * nobody waits for in a test: a retry's backoff, and the lease TTL after a crash.
 * @example
 * const baton = createTestBaton({ agents: [greeter] });
 * const run = await baton.start('greeter', { who: 'Ada' });
 * expect(await run.output()).toBe('Hello, Ada!');
 */
export class TestBaton {
  /** The manual clock every port and leg reads. */
  readonly clock: ManualClock;
  /** The in-memory session store (journal, turns, records). */
  readonly store: MemorySessionStore;
  /** The client a test would use against a deployed stack, on the same twins. */
  readonly client: BatonClient;
  /** Every crash armed so far. */
  readonly crashes: CrashHandle[] = [];
  readonly #tracker = new LegTracker();
  readonly #doubles: AgentDoubles;
  readonly #ledger: StepLedger;
  readonly #work: MemoryWorkQueue;
  readonly #tickets: MemoryTicketQueue;
  readonly #results: MemoryResultPublisher;
  readonly #deps: RuntimeDeps;
  readonly #tenant: string;
  readonly #functionTimeoutMs: number;
  /** Kicks sent and not yet delivered (delayed ones: retries, timers, approval timeouts). */
  readonly #pendingKicks = new Set<SentMessage<Kick>>();
  /** Tickets intake refused, by ticket id: `start` throws the refusal. */
  readonly #refusals = new Map<string, Error>();
  #deadLegs: RunningLeg[] = [];
  #legErrors: LegThrewError[] = [];
  #inFlight = 0;
  #driving = false;
  #invocations = 0;
  #ids = { ticket: 0, turn: 0 };

  constructor(options: TestBatonOptions) {
    const agents = isRegistry(options.agents) ? [...options.agents.values()] : [...options.agents];
    if (agents.length === 0) throw new InvalidInputError('createTestBaton needs at least one agent');
    this.#tenant = options.tenant ?? DEFAULT_TENANT;
    this.#functionTimeoutMs = durationMs(options.functionTimeout ?? RUNTIME_DEFAULTS.functionTimeoutMs);
    const leaseTtlMs = durationMs(options.leaseTtl ?? RUNTIME_DEFAULTS.leaseTtlMs);
    const reserveMs = Math.min(RUNTIME_DEFAULTS.reserveMs, Math.floor(this.#functionTimeoutMs / 10));
    // As a deployed function does at cold start: a step that can never fit is refused here.
    for (const agent of agents)
      assertFitsBudget(agent, { functionTimeoutMs: this.#functionTimeoutMs, reserveMs, leaseTtlMs });

    this.clock = this.#tracker.clock();
    const clock = this.clock;
    const blobs = new MemoryBlobStore();
    this.store = new MemorySessionStore({ blobs, offloadThresholdBytes: 350_000, clock });
    this.#work = new MemoryWorkQueue({ clock });
    this.#tickets = new MemoryTicketQueue({ clock });
    this.#results = new MemoryResultPublisher({ clock });
    this.#work.onSend((message) => this.#pendingKicks.add(message));
    this.#ledger = new StepLedger(this.store);
    this.#doubles = new AgentDoubles(agents, {
      beforeTool: (tool, ctx: ToolContext) => {
        const leg = this.#tracker.current();
        return leg ? this.#ledger.record(leg.kick.session, tool, ctx.idempotencyKey) : Promise.resolve();
      },
      during: async (call) => {
        this.#inFlight++;
        try {
          return await call();
        } finally {
          this.#inFlight--;
        }
      },
    });
    const crashable = <T extends object>(port: T, name: string) => this.#tracker.crashable(port, name);
    this.#deps = {
      store: crashable(this.store, 'store'),
      workQueue: crashable(this.#work, 'workQueue'),
      results: crashable(this.#results, 'results'),
      blobs: crashable(blobs, 'blobs'),
      clock,
      agents: this.#doubles.registry,
      telemetry: options.telemetry ?? noopTelemetry,
      failpoint: this.#tracker.failpoint,
      config: {
        leaseTtlMs,
        reserveMs,
        retentionDays: options.retentionDays ?? RUNTIME_DEFAULTS.retentionDays,
        sweepGraceMs: leaseTtlMs,
        // Time stands still between a test's steps: a message is seen at the next step boundary,
        // not after a deployment's look interval, so a test's transcript does not depend on it.
        inboxLookMs: 0,
      },
      random: () => 0.5,
      ids: sequentialIds(),
    };
    this.client = new BatonClient({
      store: this.store,
      tickets: this.#tickets,
      workQueue: this.#work,
      blobs,
      clock,
      agents: this.#doubles.registry,
      sweepGraceMs: leaseTtlMs,
    });
  }

  /** Starts a session: a ticket through intake, then its legs until it is at rest. */
  async start(agent: string, input: unknown, options: StartOptions = {}): Promise<TestRun> {
    const ticketId = options.ticketId ?? `ticket-${++this.#ids.ticket}`;
    const submitted = await this.client.submit({ agent, input, ticketId, tenant: options.tenant ?? this.#tenant });
    await this.#settle();
    const refusal = this.#refusals.get(ticketId);
    if (refusal) throw refusal;
    return new TestRun(this, { tenant: submitted.tenant, agent, id: submitted.sessionId }, ticketId);
  }

  /** Sends a further turn (or a message, with `mode: 'inject'`) to a conversation, and runs it to rest. */
  async send(sessionId: string, input: unknown, options: SendToOptions = {}): Promise<TestRun> {
    const id = options.id ?? `turn-${++this.#ids.turn}`;
    const sent = await this.client.send(sessionId, input, { id, mode: options.mode });
    await this.#settle();
    return new TestRun(this, (await this.#record(sessionId)).key, sent.turnId);
  }

  /** Approves the call waiting for approval (the only one, unless `callId` names it), and runs on. */
  approve(sessionId: string, callId?: string, reason?: string): Promise<CallIdentity> {
    return this.#decide(sessionId, true, callId, reason);
  }

  /** Denies the call waiting for approval (the only one, unless `callId` names it); the denial is the call's result. */
  deny(sessionId: string, callId?: string, reason?: string): Promise<CallIdentity> {
    return this.#decide(sessionId, false, callId, reason);
  }

  /** An operator's verdict on a once-only call parked because nobody could tell whether it ran. */
  async resolve(
    sessionId: string,
    verdict: { done: boolean; output?: unknown },
    callId?: string,
  ): Promise<CallIdentity> {
    const status = await this.status(sessionId);
    const call = callId ?? status.parked?.callId;
    if (call === undefined) throw new InvalidInputError(`session ${sessionId} has no parked call to resolve`);
    const identity = await this.client.resolve(sessionId, call, verdict);
    await this.#settle();
    return identity;
  }

  /** Cancels a session and runs it to rest. */
  async cancel(sessionId: string): Promise<'requested' | 'already-finished' | 'not-found'> {
    const result = await this.client.cancel(sessionId);
    await this.#settle();
    return result;
  }

  /** Stops one turn (the conversation goes on) and runs the session to rest. */
  async stopTurn(sessionId: string, turnId: string): Promise<StopTurnResult> {
    const result = await this.client.stopTurn(sessionId, turnId);
    await this.#settle();
    return result;
  }

  /**
   * Moves the clock forward by `duration` (`'2h'`, `'30s'`, `'31d'`, or milliseconds): durable
   * timers, approval timeouts, delayed kicks and the sweeper fire at their times on the way, and
   * DynamoDB's TTL removes what the retention lets go.
   */
  async advance(duration: Duration): Promise<void> {
    const ms = durationMs(duration);
    if (this.#driving)
      throw new InvalidInputError(
        'advance runs legs, so a mocked model or tool cannot call it: move time inside a call with baton.clock.advance(ms)',
      );
    const target = this.clock.now() + ms;
    await this.#settle();
    for (let steps = 0; ; steps++) {
      const next = await this.#nextDueAt();
      if (next === undefined || next > target) break;
      if (steps > MAX_DELIVERIES_PER_ACTION)
        throw new Error(`advance: sessions stay due at ${new Date(next).toISOString()} however often they are kicked`);
      this.clock.set(Math.max(this.clock.now(), next));
      await this.#tick();
    }
    this.clock.set(target);
    await this.#tick();
  }

  /**
   * Arms a crash: the next leg (of `sessionId`, if given) to reach `at` dies there, as a killed
   * Lambda would: its call never returns and nothing after it runs. `next-port-call` (the
   * default) is the next call it makes on the store or a queue — called from inside a mocked
   * tool, the write of that tool's result. The action in progress lets the lease expire, the
   * sweeper recovers the session and the turn goes on; a completed step that runs again throws
   * RanTwiceError from that action.
   */
  crash(at: CrashPoint = 'next-port-call', options: { sessionId?: string | undefined } = {}): CrashHandle {
    const handle = this.#tracker.arm(at, options.sessionId);
    this.crashes.push(handle);
    return handle;
  }

  /** Replaces an agent's model: a list of replies (the nth model call of a session gets the nth) or a function of the transcript. */
  mockModel(agent: string, script: ModelScript): ModelMock {
    return this.#doubles.mockModel(agent, script);
  }

  /** Replaces a tool's implementation for one agent (its schema, effect and approval rules stay). */
  mockTool<I = unknown>(agent: string, tool: string, impl: ToolMockImpl<I>): ToolMock<I> {
    return this.#doubles.mockTool(agent, tool, impl);
  }

  /** The outcome of a turn (the session's latest by default); undefined while it has none. */
  async outcome(sessionId: string, turnId?: string): Promise<TurnOutcome | undefined> {
    const record = await this.#record(sessionId);
    const turn = turnId ?? record.lastTurnId ?? record.activeTurnId ?? record.ticketId;
    return (await this.store.getTurn(record.key, turn))?.outcome;
  }

  /** The session's status, as `baton status` shows it. */
  async status(sessionId: string): Promise<SessionStatus> {
    const status = await this.client.status(sessionId);
    if (status === undefined) throw new InvalidInputError(`session ${sessionId} not found (expired, or never started)`);
    return status;
  }

  /** The conversation as the model sees it, rebuilt from the journal. */
  async transcript(sessionId: string): Promise<ChatMessage[]> {
    return buildTranscript(await this.journal(sessionId));
  }

  /** The session's journal entries, in seq order. */
  async journal(sessionId: string): Promise<JournalEntry[]> {
    return this.store.readJournal((await this.#record(sessionId)).key);
  }

  /** The session's events as a client reads them (one turn's, with `turnId`). */
  async events(sessionId: string, options: { turnId?: string | undefined } = {}): Promise<SessionEvent[]> {
    const events: SessionEvent[] = [];
    for await (const event of this.client.events(sessionId, { turnId: options.turnId })) events.push(event);
    return events;
  }

  /** Every result published to the results queue, in order. */
  get results(): readonly Result[] {
    return this.#results.bodies;
  }

  async #record(sessionId: string): Promise<SessionRecord> {
    const record = await this.store.findSession(sessionId);
    if (record === undefined) throw new InvalidInputError(`session ${sessionId} not found (expired, or never started)`);
    return record;
  }

  async #decide(sessionId: string, approved: boolean, callId: string | undefined, reason: string | undefined) {
    let call = callId;
    if (call === undefined) {
      const pending = (await this.status(sessionId)).pendingApprovals ?? [];
      if (pending.length !== 1)
        throw new InvalidInputError(
          pending.length === 0
            ? `session ${sessionId} has no call waiting for approval`
            : `session ${sessionId} has ${pending.length} calls waiting for approval (${pending.map((p) => p.callId).join(', ')}): name one`,
        );
      call = pending[0]!.callId;
    }
    const identity = await this.client.approve(sessionId, call, {
      approved,
      ...(reason === undefined ? {} : { reason }),
    });
    await this.#settle();
    return identity;
  }

  /** One moment of time passing: the TTL's deletions, a sweeper poll, and what they cause. */
  async #tick(): Promise<void> {
    this.store.expireItems(Math.floor(this.clock.now() / 1000));
    await this.#sweep();
    await this.#settle();
  }

  /** One poll of the sweeper over every shard. */
  async #sweep(): Promise<void> {
    await sweep(
      {
        windowMs: 0,
        intervalMs: 1,
        stalledAfterMs: 2 * this.#deps.config.leaseTtlMs,
        remainingMs: () => Number.MAX_SAFE_INTEGER,
      },
      this.#deps,
    );
  }

  /** When something next happens by itself: a delayed kick or a session due for the sweeper. */
  async #nextDueAt(): Promise<number | undefined> {
    const times = [...this.#pendingKicks].map((m) => m.visibleAt);
    const ticketAt = this.#tickets.nextVisibleAt;
    if (ticketAt !== undefined) times.push(ticketAt);
    for (let shard = 0; shard < SWEEP_SHARDS; shard++) {
      const [first] = await this.store.findDue(shard, Number.MAX_SAFE_INTEGER, 1);
      // The sweeper kicks a session once its sweepAt has passed.
      if (first !== undefined) times.push(first.sweepAt + 1);
    }
    return times.length === 0 ? undefined : Math.min(...times);
  }

  /**
   * Delivers tickets and kicks until nothing is left to deliver now. A leg killed by a crash is
   * recovered as deployed (its lease expires, the sweeper kicks); a retry's backoff is waited
   * out. An action called from inside a mock only records what it sent: the delivery in progress
   * takes it.
   */
  async #settle(): Promise<void> {
    if (this.#driving) return;
    this.#driving = true;
    try {
      for (let deliveries = 0; ; deliveries++) {
        if (deliveries > MAX_DELIVERIES_PER_ACTION)
          throw new Error(`the test baton delivered ${MAX_DELIVERIES_PER_ACTION} messages and found no rest`);
        const tickets = this.#tickets.receive();
        if (tickets.length > 0) {
          for (const ticket of tickets) await this.#intake(ticket);
          continue;
        }
        const kicks = this.#work.receive();
        if (kicks.length > 0) {
          for (const kick of kicks) {
            this.#pendingKicks.delete(kick);
            await this.#runLeg(kick.body);
          }
          continue;
        }
        if (await this.#recoverDeadLegs()) continue;
        const retryAt = this.#nextRetryAt();
        if (retryAt !== undefined) {
          this.clock.set(Math.max(this.clock.now(), retryAt));
          continue;
        }
        break;
      }
    } finally {
      this.#driving = false;
    }
    const ranTwice = this.#ledger.take();
    if (ranTwice.length > 0) throw new RanTwiceError(ranTwice);
    const [threw] = this.#legErrors.splice(0);
    if (threw) throw threw;
  }

  /** The intake function on one ticket: accepted, or refused and recorded (the refusal is published). */
  async #intake(message: SentMessage<Ticket>): Promise<void> {
    const body = JSON.stringify(message.body);
    try {
      await acceptTicket(body, message.trace, this.#deps);
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      this.#refusals.set(message.body.ticketId, error);
      await recordRejectedTicket(body, error.message, this.#deps, {}, message.trace);
    }
  }

  /**
   * One invocation of the step function on a kick. A leg that waits on the clock (a poll, a
   * streaming delay) gets time moved to its next wake-up once nothing else moves; a model or
   * tool call in flight is real work, so the harness waits for it instead.
   */
  async #runLeg(kick: Kick): Promise<void> {
    const deadline = this.clock.now() + this.#functionTimeoutMs;
    const invocation = { requestId: `req-${++this.#invocations}`, remainingMs: () => deadline - this.clock.now() };
    const { leg, result } = this.#tracker.run(kick, async () => {
      const outcome = await runKick(kick, invocation, this.#deps);
      // Where the step handler reaches it: the batch is done, its messages not yet deleted.
      await this.#deps.failpoint('after-release');
      return outcome;
    });
    let done = false;
    const finished = result.then(
      () => {
        done = true;
      },
      (error: unknown) => {
        done = true;
        this.#legErrors.push(new LegThrewError(kick.session.id, error));
      },
    );
    for (let idle = 0; !done && !leg.dead; ) {
      await Promise.race([finished, leg.died, nextTurn()]);
      if (done || leg.dead || ++idle < IDLE_TURNS) continue;
      idle = 0;
      if (this.#inFlight > 0 || !this.clock.advanceToNextSleep())
        await new Promise((resolve) => setTimeout(resolve, 1));
    }
    if (!leg.dead) return;
    this.#deadLegs.push(leg);
    // A killed invocation's message comes back: SQS after the visibility timeout, the harness at
    // once. While the dead lease is live it is dropped; before the first acquire it runs the turn.
    await this.#work.sendKick(kick);
  }

  /**
   * A killed leg's session, stuck (running under the dead owner's lease, or queued with no kick
   * on its way): the clock moves to when the sweeper finds it (the lease's expiry) and it polls.
   */
  async #recoverDeadLegs(): Promise<boolean> {
    const leg = this.#deadLegs.shift();
    if (leg === undefined) return false;
    const record = await this.store.getSession(leg.kick.session);
    const kickOnItsWay = [...this.#pendingKicks].some((m) => m.body.session.id === leg.kick.session.id);
    if (record?.sweepAt !== undefined && (record.state === 'running' || record.state === 'queued') && !kickOnItsWay) {
      this.clock.set(Math.max(this.clock.now(), record.sweepAt + 1));
      await this.#sweep();
    }
    return true;
  }

  /** When the earliest retry backoff ends (a retry kick, or a wait for tasks' deadline). */
  #nextRetryAt(): number | undefined {
    let at: number | undefined;
    for (const message of this.#pendingKicks)
      if (message.body.reason === 'retry' && (at === undefined || message.visibleAt < at)) at = message.visibleAt;
    return at;
  }
}

const isRegistry = (agents: TestBatonOptions['agents']): agents is AgentRegistry => agents instanceof Map;

/**
 * A Baton for tests: the real runtime on in-memory twins with a manual clock.
 * @example const baton = createTestBaton({ agents: [supportDesk] });
 */
export function createTestBaton(options: TestBatonOptions): TestBaton {
  return new TestBaton(options);
}
