import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { readJsonLines } from '../local/json-lines.ts';
import type { WorkerInfo } from '../local/supervisor.ts';
import { FAILPOINTS, type Failpoint, type FailpointArm } from '../runtime/failpoints.ts';

export interface ChaosMonkeyOptions {
  readonly killEveryMs: number;
  readonly pauseEveryMs: number;
  /** How long a paused worker stays stopped (longer than the lease TTL). */
  readonly pauseForMs: number;
  readonly failpointEveryMs: number;
  /** The BATON_FAILPOINTS_FILE the workers read. */
  readonly failpointsFile: string;
  /** In [0, 1). */
  readonly random?: (() => number) | undefined;
  readonly log?: ((line: string) => void) | undefined;
}

export interface ChaosMonkeyStats {
  /** SIGKILLs sent from outside. */
  readonly kills: number;
  /** SIGSTOP … SIGCONT pairs. */
  readonly pauses: number;
  /** Crash points re-armed. */
  readonly rearmed: number;
}

export interface ChaosMonkey {
  stats(): ChaosMonkeyStats;
  /** Stops the timers and resumes every paused worker. */
  stop(): void;
}

/**
 * The crash points the monkey keeps armed: a kill at each named failpoint, and a pause (the
 * process blocked longer than the lease) at one. Each fires once, then waits to be re-armed.
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
 * Kills random worker processes (SIGKILL), pauses others (SIGSTOP, then SIGCONT after longer
 * than the lease TTL) and keeps the named crash points re-armed, until stopped. One worker is
 * always left running, so the run makes progress.
 */
export function startChaosMonkey(workers: () => WorkerInfo[], options: ChaosMonkeyOptions): ChaosMonkey {
  const random = options.random ?? Math.random;
  const log = options.log ?? (() => {});
  const paused = new Map<number, NodeJS.Timeout>();
  const timers = new Set<NodeJS.Timeout>();
  let kills = 0;
  let pauses = 0;
  let rearmed = 0;

  const candidates = () => workers().filter((w) => w.ready && w.pid > 0 && !paused.has(w.pid));
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(random() * items.length)];
  /** A period with ±50% jitter, so kills do not fall into step with the legs. */
  const jittered = (ms: number) => Math.max(50, Math.round(ms * (0.5 + random())));
  const every = (ms: number, act: () => void) => {
    if (ms <= 0) return;
    const schedule = () => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        act();
        schedule();
      }, jittered(ms));
      timers.add(timer);
    };
    schedule();
  };

  const resume = (pid: number) => {
    clearTimeout(paused.get(pid));
    paused.delete(pid);
    signal(pid, 'SIGCONT');
  };

  every(options.killEveryMs, () => {
    const victim = pick(candidates());
    if (victim && signal(victim.pid, 'SIGKILL')) {
      kills++;
      log(`SIGKILL worker ${victim.slot} (pid ${victim.pid})`);
    }
  });
  every(options.pauseEveryMs, () => {
    const running = candidates();
    if (running.length < 2) return;
    const victim = pick(running);
    if (!victim || !signal(victim.pid, 'SIGSTOP')) return;
    pauses++;
    log(`SIGSTOP worker ${victim.slot} (pid ${victim.pid}) for ${options.pauseForMs} ms`);
    paused.set(
      victim.pid,
      setTimeout(() => resume(victim.pid), options.pauseForMs),
    );
  });

  writeFileSync(options.failpointsFile, JSON.stringify(crashPointArms(options.pauseForMs)));
  let next = 0;
  every(options.failpointEveryMs, () => {
    const name = FAILPOINTS[next++ % FAILPOINTS.length] as Failpoint;
    const claim = `${options.failpointsFile}.${name}.fired`;
    if (existsSync(claim)) {
      rmSync(claim, { force: true });
      rearmed++;
    }
  });

  return {
    stats: () => ({ kills, pauses, rearmed }),
    stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const pid of [...paused.keys()]) resume(pid);
      // Disarm: nothing fires after the chaos phase.
      writeFileSync(options.failpointsFile, '{}');
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
