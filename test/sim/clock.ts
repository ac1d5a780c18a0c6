import type { CancelTimer, Clock } from '../../lib/ports/clock.ts';
import type { Actor, Scheduler } from './scheduler.ts';

interface Timer {
  readonly at: number;
  readonly seq: number;
  /** The actor that set it (undefined: the simulator's own, e.g. an invocation's deadline). */
  readonly actor: Actor | undefined;
  readonly fire: () => void;
}

/** The virtual time a run starts at (the ManualClock's: 2023-11-14T22:13:20Z). */
export const SIM_START_MS = 1_700_000_000_000;

/**
 * The simulated world's clock: ManualClock's semantics (time moves only when the simulator says;
 * sleepers and timers wake in deadline order, each at its own time), plus what the scheduler
 * needs and ManualClock cannot tell: whose each timer is. A timer runs as the actor that set it
 * (a leg's heartbeat renewals are that leg's), a crashed actor's sleeps and timers never fire, and
 * the scheduler can ask when the next timer of interest is due.
 */
export class SimClock implements Clock {
  #now = SIM_START_MS;
  #timers: Timer[] = [];
  #seq = 0;

  constructor(private readonly scheduler: Scheduler) {}

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = this.#add(ms, this.scheduler.current(), () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      const onAbort = () => {
        if (this.#drop(timer)) reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(ms: number, fn: () => void): CancelTimer {
    const actor = this.scheduler.current();
    const timer = this.#add(Math.max(0, ms), actor, actor ? () => this.scheduler.runAs(actor, fn) : fn);
    return () => {
      this.#drop(timer);
    };
  }

  /** Moves time to `timeMs`, firing what falls due on the way, earliest first, each at its time. */
  set(timeMs: number): void {
    if (timeMs < this.#now) throw new RangeError(`the clock cannot go back from ${this.#now} to ${timeMs}`);
    for (;;) {
      let next: Timer | undefined;
      for (const timer of this.#timers)
        if (
          timer.at <= timeMs &&
          (next === undefined || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))
        )
          next = timer;
      if (next === undefined) break;
      this.#drop(next);
      this.#now = Math.max(this.#now, next.at);
      // A crashed actor's timers and sleeps die with it.
      if (next.actor === undefined || next.actor.live) next.fire();
    }
    this.#now = timeMs;
  }

  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /** The earliest deadline among timers of live actors that `include` accepts (the simulator's own always count). */
  nextDue(include: (actor: Actor) => boolean): number | undefined {
    let at: number | undefined;
    for (const timer of this.#timers) {
      if (timer.actor !== undefined && (!timer.actor.live || !include(timer.actor))) continue;
      if (at === undefined || timer.at < at) at = timer.at;
    }
    return at;
  }

  /** Forgets the timers of actors that are gone. */
  prune(): void {
    this.#timers = this.#timers.filter((t) => {
      if (t.actor === undefined || t.actor.live) return true;
      t.actor.timers--;
      return false;
    });
  }

  #add(ms: number, actor: Actor | undefined, fire: () => void): Timer {
    const timer: Timer = { at: this.#now + ms, seq: this.#seq++, actor, fire };
    this.#timers.push(timer);
    if (actor) actor.timers++;
    return timer;
  }

  #drop(timer: Timer): boolean {
    const at = this.#timers.indexOf(timer);
    if (at < 0) return false;
    this.#timers.splice(at, 1);
    if (timer.actor) timer.actor.timers--;
    return true;
  }
}
