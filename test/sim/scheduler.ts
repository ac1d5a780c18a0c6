import { AsyncLocalStorage } from 'node:async_hooks';
import type { Rng } from './rng.ts';
import type { Trace } from './trace.ts';

/**
 * The heart of the simulator: every call the simulated world makes on a port first waits at a
 * gate, and the seed decides which waiting call goes on next. Between two decisions the world
 * runs until nothing moves (every actor waits at a gate, sleeps on the clock, or has ended).
 */

/** Who runs: one Lambda invocation (worker, intake, sweeper), one client command, the operator. */
export type ActorKind = 'worker' | 'intake' | 'sweeper' | 'client' | 'operator';

export type ActorState = 'live' | 'done' | 'crashed';

export class Actor {
  state: ActorState = 'live';
  /** While the clock is before this, the actor is frozen (SIGSTOP): its gates wait. */
  pausedUntil = 0;
  /** PCT-style priority: the waiting gate of the highest one goes first, most of the time. */
  priority: number;
  /** Gates and clock timers it waits on: an actor live with neither is hung. */
  gates = 0;
  timers = 0;
  /** Called once when the actor is crashed (its message returns to its queue, …). */
  onCrash: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly kind: ActorKind,
    readonly name: string,
    priority: number,
  ) {
    this.priority = priority;
  }

  get live(): boolean {
    return this.state === 'live';
  }
}

/** How a port call behaves once its gate opens; the port applies it. */
export type GateFault = 'throttle' | 'lost-response' | 'retried' | 'drop' | 'duplicate' | 'delay';

/** What kind of call waits: decides which faults may hit it. */
export type OpKind = 'read' | 'write' | 'send' | 'publish' | 'service';

export interface Gate {
  readonly actor: Actor;
  readonly op: string;
  readonly kind: OpKind;
  readonly open: (fault: GateFault | undefined) => void;
}

/** A promise that never settles: what a crashed actor's calls and sleeps become. */
const NEVER = new Promise<never>(() => undefined);

export class Scheduler {
  readonly #als = new AsyncLocalStorage<Actor>();
  readonly #gates: Gate[] = [];
  readonly actors: Actor[] = [];
  /** Calls without an actor are the simulator's own reads (invariant checks): they pass straight through. */
  #outside = false;

  constructor(
    private readonly rng: Rng,
    readonly trace: Trace,
  ) {}

  /** The actor whose code is running now, if any. */
  current(): Actor | undefined {
    return this.#als.getStore();
  }

  /** Runs `fn` as `actor`: every port call and timer it makes is that actor's. */
  runAs<T>(actor: Actor, fn: () => T): T {
    return this.#als.run(actor, fn);
  }

  /** Runs the simulator's own reads of the world (no gates, no faults). */
  async outside<T>(fn: () => Promise<T>): Promise<T> {
    this.#outside = true;
    try {
      return await this.#als.exit(fn);
    } finally {
      this.#outside = false;
    }
  }

  /** Starts an actor running `body`; `settled` hears how it ended, unless it was crashed first. */
  spawn<T>(
    kind: ActorKind,
    name: string,
    body: () => Promise<T>,
    settled: (result: { ok: true; value: T } | { ok: false; error: unknown }) => void,
    priority = this.rng.float(),
  ): Actor {
    const actor = new Actor(this.actors.length + 1, kind, name, priority);
    this.actors.push(actor);
    this.trace.event(actor.name, 'start');
    const run = this.runAs(actor, () => Promise.resolve().then(body));
    run.then(
      (value) => {
        if (!actor.live) return;
        actor.state = 'done';
        this.trace.event(actor.name, 'end');
        settled({ ok: true, value });
      },
      (error: unknown) => {
        if (!actor.live) return;
        actor.state = 'done';
        this.trace.event(actor.name, 'end', 'threw');
        settled({ ok: false, error });
      },
    );
    return actor;
  }

  /**
   * Waits until the seed lets this call go on, then says which fault (if any) it meets. A crashed
   * actor's call never returns: a killed process runs nothing more, not even its catch blocks.
   */
  gate(op: string, kind: OpKind): Promise<GateFault | undefined> {
    const actor = this.current();
    if (actor === undefined) {
      if (this.#outside) return Promise.resolve(undefined);
      // A port call that lost its actor would run outside the seed's control: a simulator bug.
      throw new Error(`simulator: port call ${op} outside any actor`);
    }
    if (!actor.live) return NEVER;
    actor.gates++;
    return new Promise((resolve) => {
      this.#gates.push({
        actor,
        op,
        kind,
        open: (fault) => {
          actor.gates--;
          resolve(fault);
        },
      });
    });
  }

  /** Gates whose actor may go on now (not paused, not crashed). */
  enabledGates(now: number): Gate[] {
    return this.#gates.filter((g) => g.actor.live && g.actor.pausedUntil <= now);
  }

  get waitingGates(): number {
    return this.#gates.length;
  }

  /**
   * The gate to open next: the highest-priority actor's (oldest gate first), or now and then
   * any gate at random, so both long runs of one actor and fine interleavings occur.
   */
  chooseGate(now: number): Gate | undefined {
    const enabled = this.enabledGates(now);
    if (enabled.length === 0) return undefined;
    if (this.rng.chance(0.15)) return this.rng.pick(enabled);
    let best = enabled[0]!;
    for (const gate of enabled) if (gate.actor.priority > best.actor.priority) best = gate;
    return best;
  }

  /** Opens `gate` with `fault`; sometimes the actor gets a new priority (a PCT change point). */
  open(gate: Gate, fault: GateFault | undefined): void {
    this.#remove(gate);
    this.trace.event(gate.actor.name, gate.op, fault);
    if (this.rng.chance(0.05)) gate.actor.priority = this.rng.float();
    gate.open(fault);
  }

  /** Kills an actor where it stands: its waiting calls never return, its timers never fire. */
  crash(actor: Actor, why: string): void {
    if (!actor.live) return;
    actor.state = 'crashed';
    this.trace.event(actor.name, 'CRASH', why);
    for (const gate of this.#gates.filter((g) => g.actor === actor)) this.#remove(gate);
    actor.gates = 0;
    actor.onCrash?.();
  }

  pause(actor: Actor, until: number, now: number): void {
    actor.pausedUntil = until;
    this.trace.event(actor.name, 'PAUSE', `${until - now}ms`);
  }

  /** Actors still live: running, waiting at a gate or on the clock. */
  liveActors(kind?: ActorKind): Actor[] {
    return this.actors.filter((a) => a.live && (kind === undefined || a.kind === kind));
  }

  /**
   * Lets the world run until nothing moves. Nothing in it uses real timers or I/O (the ports are
   * in memory, the clock is the simulator's), so one macrotask turn drains every microtask chain.
   */
  async settle(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  #remove(gate: Gate): void {
    const at = this.#gates.indexOf(gate);
    if (at >= 0) this.#gates.splice(at, 1);
  }
}
