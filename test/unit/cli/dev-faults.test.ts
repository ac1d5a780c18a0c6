import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dev } from '../../../lib/cli/dev.ts';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('baton dev under BATON_FAULTS', () => {
  it('refuses a bad fault specification before booting anything, naming the bad field', async () => {
    vi.stubEnv('BATON_FAULTS', 'dynamoThrottle=lots');
    const lines: string[] = [];
    // Aborted from the start: were the spec not checked first, dev would return "stopped before the stack was up".
    const io = { json: false, out: (line: string) => lines.push(line), connect: {}, signal: AbortSignal.abort() };

    await expect(dev([], { ...io, connect: { stateDir: 'unused' } })).rejects.toThrow(
      /fault specification is invalid: dynamoThrottle/,
    );
    expect(lines).toEqual([]);
  });

  it('refuses a crash points file that arms an unknown failpoint before booting anything, naming it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-failpoints-')), 'crash.json');
    writeFileSync(file, JSON.stringify({ 'after-intnet': { action: 'kill' } }));
    vi.stubEnv('BATON_FAILPOINTS_FILE', file);
    const lines: string[] = [];
    const io = { json: false, out: (line: string) => lines.push(line), signal: AbortSignal.abort() };

    await expect(dev([], { ...io, connect: { stateDir: 'unused' } })).rejects.toThrow(
      /unknown failpoint "after-intnet" \(known: before-acquire, /,
    );
    expect(lines).toEqual([]);
  });
});
