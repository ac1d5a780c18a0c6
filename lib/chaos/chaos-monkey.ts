import { closeSync, existsSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readJsonLines } from '../local/json-lines.ts';
import type { WorkerInfo } from '../local/supervisor.ts';
import { type CancelTimer, type Clock, systemClock } from '../ports/clock.ts';
import { FAILPOINTS, type Failpoint, type FailpointArm } from '../runtime/failpoints.ts';

/** What the chaos runner uses; the demo uses a subset (kills only). */
export interface ChaosMonkeyOptions {
  /** The supervisor's live workers (the processes this run started). */
  readonly workers: () => WorkerInfo[];
  /** Mean gap between SIGKILLs (±50%); never shorter than the workers need to start and serve. */
  readonly killEveryMs: number;
  /** Mean gap between SIGSTOPs; 0 or absent: no pauses. */
  readonly pauseEveryMs?: number | undefined;
  /** How long a paused worker stays stopped (longer than the lease TTL). */
  readonly pauseForMs?: number | undefined;
  /** Mean gap between arming the next crash point (one armed at a time); needs `failpointsFile`. */
  readonly failpointEveryMs?: number | undefined;
  /** The BATON_FAILPOINTS_FILE the workers read; absent: no crash points. */
  readonly failpointsFile?: string | undefined;
  /** In [0, 1). */
  readonly random?: (() => number) | undefined;
  readonly log?: ((line: string) => void) | undefined;
  /** Called after each SIGKILL the monkey sent. */
  readonly onKill?: ((worker: WorkerInfo) => void) | undefined;
  /** Sends a signal; false when the process is already gone. `process.kill` by default. */
  readonly signal?: ((pid: number, name: NodeJS.Signals) => boolean) | undefined;
  readonly clock?: Clock | undefined;
}

export interface ChaosMonkeyStats {
  /** SIGKILLs sent from outside. */
  readonly kills: number;
  /** SIGSTOP … SIGCONT pairs. */
  readonly pauses: number;
  /** Crash points armed. */
  readonly rearmed: number;
}

export interface ChaosMonkey {
  stats(): ChaosMonkeyStats;
  /** Stops the timers and resumes every paused worker. */
  stop(): void;
}

/**
 * The crash points the monkey keeps armed: a kill at each named failpoint, and a pause (the
 * process blocked longer than the lease) at one. Each fires once, then waits to be armed again.
 */
export function crashPointArms(pauseForMs: number): Partial<Record<Failpoint, FailpointArm>> {
  const arms: Partial<Record<Failpoint, FailpointArm>> = {};
  for (const name of FAILPOINTS) arms[name] = { action: 'kill' };
  arms['before-acquire'] = { action: 'pause', ms: pauseForMs };
  return arms;
}

/** One line of the failpoint log (lib/runtime/failpoints.ts writes them before firing). */
export interface FailpointFiring {
  readonly failpoint: Failpoint;
  readonly action: 'kill' | 'pause';
  readonly pid: number;
  readonly at: number;
}

export function readFailpointLog(failpointsFile: string): FailpointFiring[] {
  return readJsonLines<FailpointFiring>(`${failpointsFile}.log`);
}

/**
 * Whether a worker may be killed: it is up (it said it was ready), has finished an invocation
 * since it started, and has served at least as long as it took to start. On a loaded machine a
 * batch can take longer than a restart: without the first condition every batch could die.
 */
export function servedLongEnough(worker: WorkerInfo, now: number): boolean {
  return (
    worker.ready &&
    worker.served > 0 &&
    worker.readyAtMs !== undefined &&
    now - worker.readyAtMs >= worker.readyAtMs - worker.startedAtMs
  );
}

/** The longest a ready worker took to start: kills never come faster than that. */
export function startupMs(workers: readonly WorkerInfo[]): number {
  return Math.max(0, ...workers.map((w) => (w.readyAtMs === undefined ? 0 : w.readyAtMs - w.startedAtMs)));
}

/**
 * Whether the fleet may take a blow: at least two workers running (not paused), each up, having
 * finished an invocation, and serving for as long as it took to start. Every kind of blow waits for it, the monkey's own
 * kills and pauses and the crash points it arms, so on a slow machine, where restarts and
 * deadline kills take longer, the chaos slows down with them instead of killing workers before
 * they serve anything.
 */
export function fleetServing(workers: readonly WorkerInfo[], now: number, paused: ReadonlySet<number>): boolean {
  const running = workers.filter((w) => !paused.has(w.pid));
  return running.length >= 2 && running.every((w) => w.pid > 0 && servedLongEnough(w, now));
}

/** How soon a blow that is due, but found the fleet not serving, looks again. */
const DUE_RETRY_MS = 250;

/** Ticks a crash point other than mid-step stays armed without firing before the next one's turn. */
const ARMED_TICKS = 3;

/** The order crash points are armed in: mid-step first, the one every run must see fire. */
const ARMING_ORDER: readonly Failpoint[] = ['mid-step', ...FAILPOINTS.filter((name) => name !== 'mid-step')];

/**
 * Kills random worker processes (SIGKILL), pauses others (SIGSTOP, then SIGCONT after longer
 * than the lease TTL) and arms the named crash points one at a time, until stopped. Each blow
 * waits until the fleet is up and serving (`fleetServing`): a kill takes a worker that has
 * served as long as it took to start and never comes sooner after the previous one than a worker
 * takes to start, and another worker always stays up and serving; pauses leave one running too.
 */
export function startChaosMonkey(options: ChaosMonkeyOptions): ChaosMonkey {
  const random = options.random ?? Math.random;
  const log = options.log ?? (() => {});
  const clock = options.clock ?? systemClock;
  const send = options.signal ?? signal;
  const paused = new Map<number, CancelTimer>();
  const timers = new Set<CancelTimer>();
  let kills = 0;
  let pauses = 0;
  let rearmed = 0;

  const pausedPids = () => new Set(paused.keys());
  const serving = (now: number) => fleetServing(options.workers(), now, pausedPids());
  const candidates = () => options.workers().filter((w) => w.ready && w.pid > 0 && !paused.has(w.pid));
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
  /** A period with ±50% jitter, so kills do not fall into step with the legs. */
  const jittered = (ms: number) => Math.max(50, Math.round(ms * (0.5 + random())));
  /**
   * Runs `act` about every `ms`. A rarer blow (a pause, arming a crash point) that is due but finds
   * the fleet not serving (`act` returns false) is tried again shortly, not a whole period later:
   * on a slow machine a short run would otherwise miss every chance of it and prove nothing.
   */
  const every = (ms: number | undefined, act: () => boolean) => {
    if (ms === undefined || ms <= 0) return;
    const schedule = (delayMs: number) => {
      const cancel = clock.setTimer(delayMs, () => {
        timers.delete(cancel);
        schedule(act() ? jittered(ms) : Math.min(ms, DUE_RETRY_MS));
      });
      timers.add(cancel);
    };
    schedule(jittered(ms));
  };

  const resume = (pid: number) => {
    paused.get(pid)?.();
    paused.delete(pid);
    send(pid, 'SIGCONT');
  };

  let lastKillAt = Number.NEGATIVE_INFINITY;
  every(options.killEveryMs, () => {
    const now = clock.now();
    // Kills, the most frequent blow, keep their period when the fleet is not serving: retrying
    // them would take every window the rarer blows wait for.
    if (now - lastKillAt < startupMs(options.workers()) || !serving(now)) return true;
    const victim = pick(candidates());
    if (!victim || !send(victim.pid, 'SIGKILL')) return true;
    kills++;
    lastKillAt = now;
    log(`SIGKILL worker ${victim.slot} (pid ${victim.pid})`);
    options.onKill?.(victim);
    return true;
  });
  const pauseForMs = options.pauseForMs ?? 0;
  every(pauseForMs > 0 ? options.pauseEveryMs : 0, () => {
    if (!serving(clock.now())) return false;
    const victim = pick(candidates());
    if (!victim || !send(victim.pid, 'SIGSTOP')) return false;
    pauses++;
    log(`SIGSTOP worker ${victim.slot} (pid ${victim.pid}) for ${pauseForMs} ms`);
    paused.set(
      victim.pid,
      clock.setTimer(pauseForMs, () => resume(victim.pid)),
    );
    return true;
  });

  const failpointsFile = options.failpointsFile;
  if (failpointsFile !== undefined) {
    // A crash point fires once, when a worker wins its claim file: every point starts claimed
    // (disarmed) and one at a time is armed, while the fleet is serving. It stays armed until it
    // fires (mid-step, which every run must see, waits as long as that takes; another gives way
    // after a few ticks, so a point that is rarely reached does not hold up the rest).
    const claim = (name: Failpoint) => `${failpointsFile}.${name}.fired`;
    for (const name of FAILPOINTS) closeSync(openSync(claim(name), 'w'));
    writeAtomically(failpointsFile, JSON.stringify(crashPointArms(pauseForMs)));
    let next = 0;
    let armed: Failpoint | undefined;
    let armedTicks = 0;
    // A point waits armed in ticks (true: the next look is a period later); arming that finds the
    // fleet not serving looks again shortly (false).
    every(options.failpointEveryMs, () => {
      if (armed !== undefined && !existsSync(claim(armed))) {
        armedTicks++;
        if (armed === 'mid-step' || armedTicks < ARMED_TICKS) return true;
        closeSync(openSync(claim(armed), 'a'));
      }
      if (!serving(clock.now())) {
        armed = undefined;
        return false;
      }
      armed = ARMING_ORDER[next++ % ARMING_ORDER.length] as Failpoint;
      armedTicks = 0;
      rmSync(claim(armed), { force: true });
      rearmed++;
      return true;
    });
  }

  return {
    stats: () => ({ kills, pauses, rearmed }),
    stop() {
      for (const cancel of timers) cancel();
      timers.clear();
      for (const pid of [...paused.keys()]) resume(pid);
      // Disarm: nothing fires after the chaos phase.
      if (failpointsFile !== undefined) writeAtomically(failpointsFile, '{}');
    },
  };
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false; // already gone (the supervisor is restarting it)
  }
}

/**
 * Replaces a file that running workers read at every failpoint: a rename is atomic, so a reader
 * never sees it half-written (a SyntaxError inside a step would fail the turn as a tool error).
 */
function writeAtomically(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, path);
}
