import { spawnSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Inside node_modules so that an external `@aws-sdk/*` import resolves as it would in Lambda's runtime. */
const OUT_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'baton-bench');
const IMPORT_RUNS = 5;

export interface BundleFigures {
  readonly variant: 'aws-sdk-external' | 'all-bundled';
  readonly bytes: number;
  /** Median of fresh `node` processes importing the bundle (module scope included: config, clients). */
  readonly coldImportMs: number;
}

/** What the step function's module scope needs to initialise (values are never contacted). */
const IMPORT_ENV = {
  BATON_TABLE: 'bench-sessions',
  BATON_WORK_QUEUE_URL: 'http://127.0.0.1:1/000000000000/bench-work',
  BATON_RESULTS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/bench-results',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_METRICS_DISABLED: 'true',
};

/**
 * The step function as CDK's NodejsFunction ships it (esbuild, minified, ESM): its size, with
 * the AWS SDK left to the Lambda runtime (the CDK default) and with everything bundled, and
 * the time a fresh Node process takes to import it — the cold start's share that is ours.
 */
export async function measureStepBundle(entry = join(REPO_ROOT, 'functions', 'step.ts')): Promise<BundleFigures[]> {
  mkdirSync(OUT_DIR, { recursive: true });
  const figures: BundleFigures[] = [];
  for (const variant of ['aws-sdk-external', 'all-bundled'] as const) {
    const outfile = join(OUT_DIR, `step-${variant}.mjs`);
    await build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      minify: true,
      platform: 'node',
      target: 'node24',
      format: 'esm',
      logLevel: 'error',
      external: variant === 'aws-sdk-external' ? ['@aws-sdk/*'] : [],
      // The examples import `baton` by name: in a checkout that is the sources (package.json exports).
      conditions: ['baton-source'],
      // CommonJS dependencies bundled into ESM still call require() for Node built-ins.
      banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
    });
    figures.push({ variant, bytes: statSync(outfile).size, coldImportMs: medianImportMs(outfile) });
  }
  return figures;
}

function medianImportMs(file: string): number {
  const script = `const t = performance.now(); await import(${JSON.stringify(file)}); console.log(performance.now() - t);`;
  const runs: number[] = [];
  for (let i = 0; i < IMPORT_RUNS; i++) {
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ...IMPORT_ENV },
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`importing ${file} failed: ${result.stderr.slice(0, 500)}`);
    runs.push(Number(result.stdout.trim().split('\n').at(-1)));
  }
  runs.sort((a, b) => a - b);
  return runs[Math.floor(runs.length / 2)]!;
}
