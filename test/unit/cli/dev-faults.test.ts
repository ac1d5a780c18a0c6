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

describe('baton dev flags', () => {
  // Aborted from the start: were a flag not checked first, dev would return "stopped before the stack was up".
  const refused = (args: string[]) =>
    dev(args, { json: false, out: () => {}, connect: { stateDir: 'unused' }, signal: AbortSignal.abort() });

  it('refuses a visibility timeout shorter than the function timeout before booting anything, as Lambda does', async () => {
    await expect(refused(['--timeout-s', '60', '--visibility-s', '1'])).rejects.toThrow(
      /--visibility-s 1 is shorter than the function timeout \(--timeout-s 60\)/,
    );
    await expect(refused(['--visibility-s', '30'])).rejects.toThrow(/--visibility-s 30 is shorter .*--timeout-s 60/);
  });

  it('refuses a port out of range or not whole before booting anything, naming --port', async () => {
    await expect(refused(['--port', '99999'])).rejects.toThrow(
      "--port must be a whole number below 65536, got '99999'",
    );
    await expect(refused(['--port', '80.5'])).rejects.toThrow(/--port must be a whole number/);
  });
});
