import type { WorkerInfo } from '../local/supervisor.ts';

export interface ChaosMonkeyOptions {
  /** The supervisor's live workers (the processes this demo started). */
  readonly workers: () => WorkerInfo[];
  readonly everyMs: number;
  readonly onKill: (worker: WorkerInfo) => void;
  /** In [0, 1): which worker dies. */
  readonly random?: () => number;
  /** Sends the signal; `process.kill` by default. */
  readonly kill?: (pid: number, signal: NodeJS.Signals) => void;
}

export interface ChaosMonkey {
  readonly kills: number;
  stop(): void;
}

/**
 * Kills one worker process with SIGKILL every `everyMs` — no goodbye, no release: the lease
 * expires, the sweeper kicks the session and another worker resumes it from its journal. A tick
 * is skipped while any worker is still starting, so the chaos is steady rather than a wipe-out.
 */
export function startChaosMonkey(options: ChaosMonkeyOptions): ChaosMonkey {
  const random = options.random ?? Math.random;
  const kill = options.kill ?? ((pid, signal) => process.kill(pid, signal));
  let kills = 0;
  const timer = setInterval(() => {
    const workers = options.workers();
    // One death at a time: while a replacement is still loading, the others carry the load.
    if (workers.some((w) => !w.ready)) return;
    const victim = workers[Math.floor(random() * workers.length)];
    if (victim === undefined || victim.pid <= 0) return;
    try {
      kill(victim.pid, 'SIGKILL');
      kills++;
      options.onKill(victim);
    } catch {
      // It died on its own between the listing and the kill: nothing to do.
    }
  }, options.everyMs);
  return {
    get kills() {
      return kills;
    },
    stop: () => clearInterval(timer),
  };
}
