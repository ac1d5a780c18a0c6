import { AsyncLocalStorage } from 'node:async_hooks';
import { ManualClock } from '../adapters/memory/manual-clock.ts';
import type { Kick } from '../core/messages.ts';
import type { CancelTimer } from '../ports/clock.ts';
import { FAILPOINTS, type Failpoint, type FailpointHook } from '../runtime/failpoints.ts';

/**
 * Which leg is running, and killing one. Every leg the harness starts runs inside an async
 * context; the ports, the crash points and the clock's timers ask it whose call they carry. A
 * killed leg behaves as a Lambda killed mid-invocation: its calls never return, its timers (the
 * lease heartbeat) never fire, and none of its catch or finally blocks run.
 */

/** Where an armed crash kills a leg: at one of the runtime's named crash points, or at its next call on a port. */
export type CrashPoint = Failpoint | 'next-port-call';

export interface RunningLeg {
  readonly kick: Kick;
  dead: boolean;
  /** Where it died: the port call (`store.append`) or the crash point. */
  diedAt?: string | undefined;
  /** Resolves when the leg dies. */
  readonly died: Promise<void>;
}

/** An armed crash: whether it fired, where, and in which session's leg. */
export interface CrashHandle {
  readonly at: CrashPoint;
  readonly fired: boolean;
  /** The session whose leg it killed. */
  readonly sessionId: string | undefined;
  /** The port call (`store.append`, `workQueue.sendKick` …) or the crash point where the leg died. */
  readonly diedAt: string | undefined;
}

interface ArmedCrash {
  readonly at: CrashPoint;
  readonly sessionId: string | undefined;
  fired: boolean;
  diedIn: string | undefined;
  diedAt: string | undefined;
}

/** A promise that never settles: what a dead leg's calls return. */
const NEVER = new Promise<never>(() => {});

export class LegTracker {
  readonly #context = new AsyncLocalStorage<RunningLeg>();
  readonly #deaths = new WeakMap<RunningLeg, () => void>();
  #armed: ArmedCrash[] = [];

  /** Runs a leg in its own context; `leg.died` resolves if an armed crash kills it. */
  run<T>(kick: Kick, body: () => Promise<T>): { leg: RunningLeg; result: Promise<T> } {
    let die = () => {};
    const leg: RunningLeg = { kick, dead: false, died: new Promise<void>((resolve) => (die = resolve)) };
    this.#deaths.set(leg, die);
    return { leg, result: this.#context.run(leg, body) };
  }

  /** The leg whose code is running now, if any (a mock can tell which session called it). */
  current(): RunningLeg | undefined {
    return this.#context.getStore();
  }

  /** Arms a crash: the next leg (of `sessionId`, when given) to reach `at` dies there. */
  arm(at: CrashPoint, sessionId?: string): CrashHandle {
    if (at !== 'next-port-call' && !(FAILPOINTS as readonly string[]).includes(at))
      throw new TypeError(`unknown crash point "${at}" (known: next-port-call, ${FAILPOINTS.join(', ')})`);
    const armed: ArmedCrash = { at, sessionId, fired: false, diedIn: undefined, diedAt: undefined };
    this.#armed.push(armed);
    return {
      at,
      get fired() {
        return armed.fired;
      },
      get sessionId() {
        return armed.diedIn;
      },
      get diedAt() {
        return armed.diedAt;
      },
    };
  }

  /** Crashes armed and not yet fired. */
  get armedCount(): number {
    return this.#armed.length;
  }

  /** A port whose calls from a leg may be where it dies; a dead leg's calls never return. */
  crashable<T extends object>(port: T, name: string): T {
    return new Proxy(port, {
      get: (target, property, receiver) => {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (this.#stops(`${name}.${String(property)}`, 'next-port-call')) return NEVER;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  }

  /** The runtime's failpoint hook: a leg reaching an armed crash point dies there. */
  readonly failpoint: FailpointHook = async (name) => {
    if (this.#stops(name, name)) return NEVER;
  };

  /** A ManualClock whose timers run in the context of the leg that set them, and never for a dead one. */
  clock(startMs?: number): ManualClock {
    const tracker = this;
    return new (class LegClock extends ManualClock {
      override setTimer(ms: number, fn: () => void): CancelTimer {
        const leg = tracker.current();
        if (leg === undefined) return super.setTimer(ms, fn);
        return super.setTimer(ms, () => {
          if (!leg.dead) tracker.#context.run(leg, fn);
        });
      }
    })(startMs);
  }

  /** True when the current leg must stop here: it is dead, or an armed crash kills it now. */
  #stops(where: string, point: CrashPoint): boolean {
    const leg = this.current();
    if (leg === undefined) return false;
    if (leg.dead) return true;
    const armed = this.#armed.find(
      (a) => a.at === point && (a.sessionId === undefined || a.sessionId === leg.kick.session.id),
    );
    if (armed === undefined) return false;
    this.#armed = this.#armed.filter((a) => a !== armed);
    armed.fired = true;
    armed.diedIn = leg.kick.session.id;
    armed.diedAt = where;
    leg.dead = true;
    leg.diedAt = where;
    this.#deaths.get(leg)?.();
    return true;
  }
}
