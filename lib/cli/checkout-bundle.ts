/**
 * Bundles the CLI of a checkout into one cached ES module (plus the chunks its commands import
 * on use), so `baton status` from a checkout starts as fast as the installed, compiled CLI:
 * without it every call loads the TypeScript loader and transpiles the CLI's module graph again.
 * bin/bundled-cli runs this (`node lib/cli/checkout-bundle.ts CACHE_DIR`) when a source changed;
 * Node strips this file's types itself, so it imports nothing but esbuild and Node.
 *
 * A build is a directory of its own under CACHE_DIR, named in CACHE_DIR/current once complete
 * (renamed into place: a concurrent `baton` reads the old build or the new one, never half of
 * one). Next to the bundle, `inputs` lists every file it was built from and `stamp` was written
 * before the build read any of them: a file newer than the stamp makes the build stale, an edit
 * made during the build included.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin, transform } from 'esbuild';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const ENTRY = 'lib/cli/main.ts';
/** Files that change the bundle without being in its module graph. */
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'lib/cli/checkout-bundle.ts'];
/** Builds older than this are removed by the next build (a `baton dev` started from one may still load its chunks). */
const OLD_BUILD_AGE_MS = 60 * 60_000;

/**
 * Each module keeps its own `import.meta.url` (and dirname, filename) in the bundle: the CLI
 * finds the files next to its sources through them (the worker script, the console, the example
 * agents, the checkout-only commands), and those stay where they are. Replaced by esbuild's
 * `define`, on the syntax tree: the same words inside a string (a template `baton init` writes)
 * stay as they are.
 */
const ownImportMeta: Plugin = {
  name: 'own-import-meta',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      const { code } = await transform(await readFile(path, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: 'node24',
        sourcefile: path,
        // As the build would read it from tsconfig.json: imports are kept as written.
        tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
        define: {
          'import.meta.url': JSON.stringify(pathToFileURL(path).href),
          'import.meta.dirname': JSON.stringify(dirname(path)),
          'import.meta.filename': JSON.stringify(path),
        },
      });
      return { contents: code, loader: 'js' };
    });
  },
};

/** Builds the bundle into a new directory of `cacheDir` and names it in `cacheDir/current`. */
export async function buildCheckoutBundle(cacheDir: string): Promise<string> {
  const id = `build-${Date.now()}-${process.pid}`;
  const out = join(cacheDir, id);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'stamp'), '');
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [ENTRY],
    outdir: out,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node24',
    outExtension: { '.js': '.mjs' },
    // Packages load from node_modules as they do for the sources: only the checkout's own modules are bundled.
    packages: 'external',
    conditions: ['baton-source'],
    metafile: true,
    logLevel: 'error',
    plugins: [ownImportMeta],
  });
  const inputs = [...Object.keys(result.metafile.inputs), ...BUILD_INPUTS].map((input) =>
    relative(ROOT, resolve(ROOT, input)),
  );
  writeFileSync(join(out, 'inputs'), `${inputs.join('\n')}\n`);
  writeFileSync(join(cacheDir, `current.${process.pid}`), `${id}\n`);
  renameSync(join(cacheDir, `current.${process.pid}`), join(cacheDir, 'current'));
  removeOldBuilds(cacheDir, id);
  return join(out, 'main.mjs');
}

function removeOldBuilds(cacheDir: string, keep: string): void {
  for (const entry of readdirSync(cacheDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === keep) continue;
    const path = join(cacheDir, entry.name);
    if (Date.now() - statSync(path).mtimeMs > OLD_BUILD_AGE_MS) rmSync(path, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const cacheDir = process.argv[2];
  if (cacheDir === undefined) throw new Error('usage: node lib/cli/checkout-bundle.ts CACHE_DIR');
  await buildCheckoutBundle(resolve(cacheDir));
}
