import { existsSync, readFileSync } from 'node:fs';

/**
 * Reads a JSON-lines file the tooling appends to (the ledger, the failpoint log): one value per
 * line, a missing file is empty, and a last line cut short by a SIGKILL mid-write is skipped.
 */
export function readJsonLines<T>(path: string | undefined): T[] {
  if (path === undefined || !existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as T];
      } catch {
        return [];
      }
    });
}
