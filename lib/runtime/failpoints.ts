import { appendFileSync, closeSync, existsSync, openSync, readFileSync } from 'node:fs';

/**
 * Named crash points. A test arms one to kill or pause the worker exactly there, then asserts
 * the worker died at that point and that another worker finishes the turn.
 */
export const FAILPOINTS = [
  'before-acquire',
  'after-marker',
  'mid-step',
  'after-append',
  'after-intent',
  'after-continuation',
  'after-release',
  'between-outcome-and-publish',
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/** What an in-process test throws from a failpoint to crash the leg right there. */
export class FailpointCrash extends Error {
  constructor(readonly failpoint: Failpoint) {
    super(`simulated crash at ${failpoint}`);
    this.name = 'FailpointCrash';
  }
}

export type FailpointHook = (name: Failpoint) => Promise<void>;

export const noFailpoints: FailpointHook = async () => {};

export interface FailpointArm {
  readonly action: 'kill' | 'pause';
  /** For pause: how long the process stops (SIGSTOP-like: the event loop is blocked). */
  readonly ms?: number;
  /** Fire only on the nth hit across all workers (default 1). */
  readonly hit?: number;
}

/**
 * Failpoints armed through a JSON file (`{ "after-marker": { "action": "kill" } }`), shared by
 * every worker process. Each arm fires once across all workers: the first to create its claim
 * file wins. Every firing is logged to `<file>.log` before it happens.
 */
export function fileFailpoints(
  file: string,
  onKill: () => never = () => process.kill(process.pid, 'SIGKILL') as never,
): FailpointHook {
  const hits = new Map<string, number>();
  return async (name) => {
    if (!existsSync(file)) return;
    const arms = JSON.parse(readFileSync(file, 'utf8')) as Partial<Record<Failpoint, FailpointArm>>;
    const arm = arms[name];
    if (!arm) return;
    const count = (hits.get(name) ?? 0) + 1;
    hits.set(name, count);
    if (count < (arm.hit ?? 1)) return;
    try {
      closeSync(openSync(`${file}.${name}.fired`, 'wx'));
    } catch {
      return; // another worker already fired it
    }
    appendFileSync(
      `${file}.log`,
      `${JSON.stringify({ failpoint: name, action: arm.action, pid: process.pid, at: Date.now() })}\n`,
    );
    if (arm.action === 'kill') onKill();
    // A pause blocks the whole process, timers and heartbeat included, as SIGSTOP would.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, arm.ms ?? 5_000);
  };
}
