import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { functionBuildOptions } from '../../../infra/constructs/bundling.ts';

const SWEEPER = fileURLToPath(new URL('../../../functions/sweeper.ts', import.meta.url));
const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

/** The input files of the sweeper function's bundle, built with the construct's options. */
async function bundledInputs(fromSource: boolean): Promise<string[]> {
  const outdir = mkdtempSync(join(tmpdir(), 'baton-bundling-'));
  outdirs.push(outdir);
  const result = await build({
    ...functionBuildOptions({ entry: SWEEPER, fromSource, external: [], sourcemap: false }, outdir),
    logLevel: 'silent',
    metafile: true,
    write: false,
  });
  return Object.keys(result.metafile.inputs);
}

describe('function bundles', () => {
  // `@smithy/core` and `@aws-sdk/core` list their CommonJS build (`node`) before `import` in
  // their exports; bundled as CommonJS they were wrapped whole, untreeshaken, and evaluated at
  // every cold start (docs/PERFORMANCE.md, Cold start).
  it.each([
    ['from the sources (a checkout)', true],
    ['from the published package', false],
  ])('take the AWS SDK from its ESM builds, %s', async (_, fromSource) => {
    const inputs = await bundledInputs(fromSource);
    const sdk = inputs.filter((input) => /node_modules\/@(smithy|aws-sdk)\//.test(input));
    expect(sdk.some((input) => input.includes('/@smithy/core/'))).toBe(true);
    expect(sdk.filter((input) => input.includes('/dist-cjs/'))).toEqual([]);
  });
});
