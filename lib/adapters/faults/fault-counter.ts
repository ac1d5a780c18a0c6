import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FaultKind } from './fault-config.ts';

/** Injected faults by kind. */
export type FaultCounts = Record<FaultKind, number>;

export const zeroFaultCounts = (): FaultCounts =>
  Object.fromEntries(Object.values(FaultKind).map((kind) => [kind, 0])) as FaultCounts;

const FILE_PREFIX = 'faults-';
const FILE_SUFFIX = '.log';

/**
 * Counts injected faults. With a folder, each fault is also appended (synchronously, one line)
 * to this process's own file there, so a process killed with SIGKILL has already reported
 * every fault it injected.
 */
export class FaultCounter {
  readonly #counts = zeroFaultCounts();
  readonly #file: string | undefined;

  constructor(dir?: string | undefined, pid = process.pid) {
    if (dir !== undefined) {
      mkdirSync(dir, { recursive: true });
      this.#file = join(dir, `${FILE_PREFIX}${pid}${FILE_SUFFIX}`);
    }
  }

  record(kind: FaultKind): void {
    this.#counts[kind]++;
    if (this.#file !== undefined) appendFileSync(this.#file, `${kind}\n`);
  }

  get counts(): Readonly<FaultCounts> {
    return this.#counts;
  }
}

/** Sums what every process reported in `dir`. */
export function readFaultCounts(dir: string): FaultCounts {
  const counts = zeroFaultCounts();
  if (!existsSync(dir)) return counts;
  const kinds = new Set<string>(Object.values(FaultKind));
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(FILE_PREFIX) || !name.endsWith(FILE_SUFFIX)) continue;
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (kinds.has(line)) counts[line as FaultKind]++;
    }
  }
  return counts;
}
