import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * The packages a module loads before it runs: its static imports, followed through the
 * checkout's own modules (a dynamic import, which loads on use, is not followed).
 */
async function packagesLoadedBy(entry: string): Promise<Set<string>> {
  const { metafile } = await build({
    absWorkingDir: ROOT,
    entryPoints: [entry],
    outdir: 'out',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    packages: 'external',
    conditions: ['baton-source'],
    metafile: true,
    write: false,
    logLevel: 'error',
  });
  const outputs: Metafile['outputs'] = metafile.outputs;
  const start = Object.keys(outputs).find((path) => outputs[path]?.entryPoint === entry);
  if (start === undefined) throw new Error(`no output for ${entry}`);
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (path: string) => {
    if (seen.has(path)) return;
    seen.add(path);
    for (const imported of outputs[path]?.imports ?? []) {
      if (imported.kind !== 'import-statement') continue;
      if (imported.external) packages.add(imported.path);
      else visit(imported.path);
    }
  };
  visit(start);
  return packages;
}

describe("what the CLI's session commands load", () => {
  it('is no zod and no AWS SDK: `baton status` and `baton send` on the local stack make one HTTP call', async () => {
    const packages = await packagesLoadedBy('lib/cli/session-commands.ts');

    // zod alone is ~100 ms of a command that is over in a few hundred (docs/PERFORMANCE.md, the CLI).
    expect([...packages].filter((name) => !name.startsWith('node:'))).toEqual([]);
    // node:http loads on the call (process.getBuiltinModule), not through an import: node:http's
    // import facade loads undici; so does node:crypto's its web crypto.
    expect([...packages].sort()).toEqual(['node:fs', 'node:path', 'node:url', 'node:util']);
  });

  it('is less than `baton --help` loads, plus what the commands need', async () => {
    const packages = await packagesLoadedBy('lib/cli/main.ts');

    expect([...packages].sort()).toEqual(['node:fs', 'node:path', 'node:url']);
  });
});
