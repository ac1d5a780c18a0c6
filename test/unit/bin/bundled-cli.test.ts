import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const CACHE_ROOT = join(ROOT, 'node_modules', '.cache', 'baton-cli');

/** Runs `baton --help` from the checkout, with this Node first on PATH, as a person would. */
function batonHelp() {
  const run = spawnSync('sh', [join(ROOT, 'bin', 'baton'), '--help'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${join(process.execPath, '..')}:${process.env.PATH ?? ''}` },
  });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toContain('usage: baton');
  return run;
}

/** This checkout's cache folder, as bin/bundled-cli names it (node_modules may be shared by several). */
function cacheDir(): string {
  const key = spawnSync('sh', ['-c', 'printf %s "$1" | cksum | cut -d" " -f1', 'sh', ROOT.replace(/\/$/, '')], {
    encoding: 'utf8',
  }).stdout.trim();
  return join(CACHE_ROOT, key);
}

/** The build `current` names. */
const currentBuild = (): string => readFileSync(join(cacheDir(), 'current'), 'utf8').trim();

describe('bin/baton in a checkout: the cached bundle of the CLI', () => {
  it('is reused while its inputs are unchanged, and rebuilt when one is newer than its stamp', () => {
    // Arrange: a bundle built and current.
    batonHelp();
    const built = currentBuild();

    // Act: another call, then one after a source the bundle was built from is touched.
    batonHelp();
    const reused = currentBuild();
    const source = join(ROOT, 'lib', 'cli', 'schemas.ts');
    const { atime, mtime } = statSync(source);
    const later = new Date(Date.now() + 2_000);
    try {
      utimesSync(source, later, later);
      batonHelp();
    } finally {
      utimesSync(source, atime, mtime);
    }
    const rebuilt = currentBuild();

    // Assert
    expect(reused).toBe(built);
    expect(rebuilt).not.toBe(built);
    const inputs = readFileSync(join(cacheDir(), rebuilt, 'inputs'), 'utf8').split('\n');
    expect(inputs).toContain('lib/cli/schemas.ts');
    expect(inputs).toContain('package.json');
  }, 60_000);

  it("writes a new project's files with the project's own import.meta, not the checkout's paths", async () => {
    // Arrange: the bundle `baton init` runs from in a checkout, whose modules keep their own import.meta.
    batonHelp();
    const build = join(cacheDir(), currentBuild());
    const chunk = readdirSync(build).find((file) => /^init-.*\.mjs$/.test(file));
    expect(chunk).toBeDefined();
    const { projectFiles } = (await import(pathToFileURL(join(build, chunk as string)).href)) as {
      projectFiles: (name: string, manifest: unknown, dependency?: string) => Record<string, string>;
    };
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;

    // Act
    const files = projectFiles('my-agents', manifest, 'file:baton.tgz');

    // Assert
    expect(files['infra/app.ts']).toContain("projectRoot: join(import.meta.dirname, '..')");
    expect(files['test/agents.test.ts']).toContain("new URL('../src/agents.ts', import.meta.url)");
    for (const [file, text] of Object.entries(files)) expect(text, file).not.toContain(ROOT.replace(/\/$/, ''));
  }, 60_000);
});
