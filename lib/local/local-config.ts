import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Endpoints } from './emulators.ts';
import type { Resources } from './provision.ts';

/** What `baton dev` writes to `.baton/local.json` so other `baton` commands (and chaos tooling) find the stack. */
export interface LocalStackConfig {
  readonly version: 1;
  readonly region: string;
  readonly endpoints: Endpoints;
  readonly prefix: string;
  readonly resources: Resources;
  readonly functionTimeoutS: number;
  /** The `baton dev` process; it owns the emulators and the workers. */
  readonly supervisorPid: number;
  /** Live worker processes, rewritten whenever one is replaced. */
  readonly workers: ReadonlyArray<{ readonly slot: number; readonly pid: number }>;
  readonly functions: { readonly intake?: string; readonly step?: string; readonly sweeper?: string };
  /** The agents module the workers host (`baton dev --agents`); absent: the repository's examples. */
  readonly agents?: string | undefined;
  /** The simulated services' call ledger (BATON_LEDGER). */
  readonly ledger: string;
  /** The web console's address, when `baton dev` serves it. */
  readonly console?: string | undefined;
  /** The HTTP API's base address (`baton --api URL`), served next to the console. */
  readonly api?: string | undefined;
  /**
   * The developer's token for the API and the console (every tenant, every role), new each run:
   * the CLI sends it, the console's address carries it. Absent when the stack maps its callers.
   */
  readonly token?: string | undefined;
  /** With `baton dev --callers`: each mapped caller's token, by name. */
  readonly callers?: Readonly<Record<string, string>> | undefined;
  readonly startedAt: string;
}

export const LOCAL_CONFIG_FILE = 'local.json';

/** The console's address with a token, as `baton dev` prints it: opening it logs the browser in (the token becomes a cookie). */
export const consoleLoginUrl = (console: string, token: string): string =>
  `${console}?token=${encodeURIComponent(token)}`;

export const localConfigPath = (stateDir = '.baton'): string => join(resolve(stateDir), LOCAL_CONFIG_FILE);

/** Writes local.json atomically (a reader never sees half a file), readable by its owner only: it holds the tokens. */
export function writeLocalStackConfig(stateDir: string, config: LocalStackConfig): void {
  mkdirSync(stateDir, { recursive: true });
  const path = localConfigPath(stateDir);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

/** Reads the running stack's local.json; undefined when no `baton dev` wrote one. */
export function readLocalStackConfig(stateDir = '.baton'): LocalStackConfig | undefined {
  try {
    return JSON.parse(readFileSync(localConfigPath(stateDir), 'utf8')) as LocalStackConfig;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Removes local.json if the process `ownerPid` wrote it (another stack's file is left alone). */
export function removeLocalStackConfig(stateDir: string, ownerPid: number): void {
  try {
    if (readLocalStackConfig(stateDir)?.supervisorPid === ownerPid) rmSync(localConfigPath(stateDir));
  } catch {
    // A damaged or vanished file is nothing to clean up.
  }
}
