import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const RUN = fileURLToPath(new URL('../../../bin/run', import.meta.url));

/**
 * Runs bin/run as on a machine whose node is 20: a fake `node` reports that version, and a fake
 * `npm` records what it was asked to pack and hands back a tarball of our own making.
 */
function runWithFakeRegistry(tarballBody: string) {
  const dir = mkdtempSync(join(tmpdir(), 'baton-run-'));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const script = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  script('node', 'echo 20');
  // `npm pack` writes a tarball into the current folder, as the real one does.
  script(
    'npm',
    `echo "$@" >> "${dir}/npm-calls"\nmkdir -p p/package/bin && printf '%s' '${tarballBody}' > p/package/bin/node && tar -czf node-fake.tgz -C p package && rm -rf p`,
  );
  const cache = join(dir, 'cache');
  const result = spawnSync('sh', [RUN, 'true'], {
    encoding: 'utf8',
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir, BATON_NODE_CACHE: cache },
  });
  const calls = existsSync(join(dir, 'npm-calls')) ? readFileSync(join(dir, 'npm-calls'), 'utf8') : '';
  return { result, cache, calls };
}

describe('bin/run', () => {
  it('fetches an exact, pinned Node 24 release and refuses a tarball whose checksum is not the pinned one', () => {
    const { result, cache, calls } = runWithFakeRegistry('not node');

    expect(calls).toMatch(/^pack .*node-(linux|darwin)-(x64|arm64)@24\.\d+\.\d+(\s|$)/m);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/checksum/i);
    // Nothing unverified is left where a later run would use it.
    expect(existsSync(join(cache, 'bin', 'node'))).toBe(false);
  });
});
