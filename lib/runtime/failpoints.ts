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

/** The variable naming the failpoints file of a local worker (never set on a deployed function). */
export const FAILPOINTS_FILE_ENV = 'BATON_FAILPOINTS_FILE';

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
 * Reads a failpoints file as the workers will (`{ "after-intent": { "action": "kill" } }`) and
 * returns the points it arms; throws naming the problem (not JSON, an unknown point, a bad
 * action). A file that does not exist yet arms nothing: it can be written while the stack runs.
 */
export function checkFailpointsFile(file: string): Failpoint[] {
  if (!existsSync(file)) return [];
  let arms: unknown;
  try {
    arms = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`crash points file ${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (arms === null || typeof arms !== 'object' || Array.isArray(arms))
    throw new Error(
      `crash points file ${file} must be an object of failpoint names, e.g. { "mid-step": { "action": "kill" } }`,
    );
  const names = Object.keys(arms);
  for (const name of names) {
    if (!(FAILPOINTS as readonly string[]).includes(name))
      throw new Error(`crash points file ${file}: unknown failpoint "${name}" (known: ${FAILPOINTS.join(', ')})`);
    const action = (arms as Record<string, { action?: unknown } | null>)[name]?.action;
    if (action !== 'kill' && action !== 'pause')
      throw new Error(`crash points file ${file}: "${name}" needs "action": "kill" or "pause"`);
  }
  return names as Failpoint[];
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
