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
 * Kills one ready worker process with SIGKILL every `everyMs` — no goodbye, no release: the
 * lease expires, the sweeper kicks the session and another worker resumes it from its journal.
 */
export function startChaosMonkey(options: ChaosMonkeyOptions): ChaosMonkey {
  const random = options.random ?? Math.random;
  const kill = options.kill ?? ((pid, signal) => process.kill(pid, signal));
  let kills = 0;
  const timer = setInterval(() => {
    const ready = options.workers().filter((w) => w.ready && w.pid > 0);
    const victim = ready[Math.floor(random() * ready.length)];
    if (victim === undefined) return;
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
