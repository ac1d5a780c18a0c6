import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ToolEffect } from '@baton-run/baton';

/** One call a simulated downstream service received. */
export interface LedgerLine {
  readonly service: string;
  readonly operation: string;
  /** The calling tool's declared effect kind. */
  readonly effect: ToolEffect;
  readonly idempotencyKey: string;
  readonly sessionId: string;
  readonly at: number;
}

/** The ledger file: `BATON_LEDGER` (set by `baton dev` to `.baton/ledger.jsonl`); unset → no ledger. */
export const ledgerPath = (): string | undefined => process.env.BATON_LEDGER || undefined;

/** Appends synchronously: the line is on disk before the service answers, as a real write would be. */
export function recordCall(line: Omit<LedgerLine, 'at'>): void {
  const path = ledgerPath();
  if (!path) return;
  mkdirSync(dirname(path), { recursive: true });
  appendFileSync(path, `${JSON.stringify({ ...line, at: Date.now() })}\n`);
}

/** Every call recorded so far (a line cut short by a SIGKILL mid-write is skipped). */
export function readLedger(path = ledgerPath()): LedgerLine[] {
  if (path === undefined || !existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim().length > 0)
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as LedgerLine];
      } catch {
        return [];
      }
    });
}

/** Once-only keys that were executed more than once: must always be empty. */
export function duplicateEffects(lines: readonly LedgerLine[]): string[] {
  const seen = new Map<string, number>();
  for (const line of lines) {
    if (line.effect !== 'once' || line.operation.startsWith('refuse:') || line.operation.startsWith('refused:'))
      continue;
    const id = `${line.service}:${line.operation}:${line.idempotencyKey}`;
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
}
