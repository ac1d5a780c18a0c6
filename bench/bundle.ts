import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_ENTRY_FILE, functionBuildOptions } from '../infra/constructs/bundling.ts';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Inside node_modules so that an external `@aws-sdk/*` import resolves as it would in Lambda's runtime. */
const OUT_DIR = join(REPO_ROOT, 'node_modules', '.cache', 'baton-bench');

export type BundleVariant = 'aws-sdk-external' | 'all-bundled';

export interface BundleFigures {
  /** Which function: the repo's four, and the step function of one Bedrock-only agent. */
  readonly function: string;
  readonly variant: BundleVariant;
  /** Every file of the bundle (the entry and its chunks, source maps aside). */
  readonly bytes: number;
  /** What a cold start reads: the entry and the chunks it imports statically, not those loaded on demand. */
  readonly initBytes: number;
  /** Median of fresh `node` processes importing the bundle (module scope included: config, clients). */
  readonly coldImportMs: number;
  /** The same processes' median CPU time (user + system) for the import: steadier on a busy machine. */
  readonly coldImportCpuMs: number;
}

export interface BundleReport {
  readonly functions: BundleFigures[];
  /** The repo's step function (SDK external) imported as in Lambda with tracing on: the X-Ray SDK loads during init. */
  readonly stepWithXrayMs: number;
  /** What the Bedrock-only function's first model call adds once per cold start: loading the Bedrock SDK and building its client. */
  readonly bedrockFirstCallMs: number;
  readonly runs: number;
}

/** What the functions' module scope needs to initialise (values are never contacted). */
const IMPORT_ENV = {
  BATON_TABLE: 'bench-sessions',
  BATON_WORK_QUEUE_URL: 'http://127.0.0.1:1/000000000000/bench-work',
  BATON_RESULTS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/bench-results',
  BATON_TICKETS_QUEUE_URL: 'http://127.0.0.1:1/000000000000/bench-tickets',
  BATON_BUCKET: 'bench-payloads',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  POWERTOOLS_METRICS_DISABLED: 'true',
  // Outside Lambda: Powertools traces nothing, and Baton does not load the X-Ray SDK (see stepWithXrayMs).
  AWS_EXECUTION_ENV: '',
};

/**
 * This process's environment without what belongs to the machine rather than to the function:
 * an extra CA bundle (NODE_EXTRA_CA_CERTS) is parsed whole when the SDK's HTTPS stack loads
 * `tls` — a system bundle of ~140 certificates is ~50 M instructions — and Lambda's runtime
 * sets its own.
 */
function machineEnv(): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _machineCertificates, ...env } = process.env;
  return env;
}

/** The environment Lambda gives a function, as far as tracing looks at it. */
const LAMBDA_TRACING_ENV = { AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x', AWS_LAMBDA_FUNCTION_NAME: 'bench-step' };

export const BEDROCK_ONLY_AGENTS = join(REPO_ROOT, 'bench', 'fixtures', 'bedrock-agents.ts');

interface FunctionEntry {
  readonly name: string;
  readonly entry: string;
  /** What `#agents` maps to; the package's own mapping (the examples) when absent. */
  readonly agents?: string | undefined;
}

const FUNCTIONS: readonly FunctionEntry[] = [
  { name: 'step', entry: 'step' },
  { name: 'intake', entry: 'intake' },
  { name: 'sweeper', entry: 'sweeper' },
  { name: 'api', entry: 'api' },
  { name: 'step, one Bedrock agent', entry: 'step', agents: BEDROCK_ONLY_AGENTS },
];

/**
 * The functions as the construct ships them (esbuild, minified ESM, its main fields, banner and
 * built-in aliases from infra/constructs/bundling.ts): each one's size with the AWS SDK left to
 * the Lambda runtime and with everything bundled (the construct's choice), and the time a fresh
 * Node process takes to import it — the cold start's share that is ours.
 */
export async function measureBundles(runs: number): Promise<BundleReport> {
  mkdirSync(OUT_DIR, { recursive: true });
  const functions: BundleFigures[] = [];
  const files = new Map<string, string>();
  for (const fn of FUNCTIONS) {
    for (const variant of ['aws-sdk-external', 'all-bundled'] as const) {
      const outdir = join(OUT_DIR, `${fn.name.replace(/\W+/g, '-')}-${variant}`);
      rmSync(outdir, { recursive: true, force: true });
      const sizes = await bundle(fn, variant, outdir);
      const entry = join(outdir, BUNDLE_ENTRY_FILE);
      files.set(`${fn.name}/${variant}`, entry);
      const { wallMs, cpuMs } = medianImport(entry, runs);
      functions.push({ function: fn.name, variant, ...sizes, coldImportMs: wallMs, coldImportCpuMs: cpuMs });
    }
  }
  const step = files.get('step/aws-sdk-external')!;
  const bedrock = files.get(`${FUNCTIONS.at(-1)!.name}/aws-sdk-external`)!;
  return {
    functions,
    stepWithXrayMs: medianImport(step, runs, LAMBDA_TRACING_ENV).wallMs,
    bedrockFirstCallMs: medianImport(bedrock, runs, {}, BEDROCK_FIRST_CALL).afterMs,
    runs,
  };
}

/** Builds one function as the construct does into `outdir`; its bytes in all and those read at init. */
async function bundle(fn: FunctionEntry, variant: BundleVariant, outdir: string) {
  const result = await build({
    ...functionBuildOptions(
      {
        entry: join(REPO_ROOT, 'functions', `${fn.entry}.ts`),
        // The examples import `baton` by name: in a checkout that is the sources (package.json exports).
        fromSource: true,
        agentsEntry: fn.agents,
        external: variant === 'aws-sdk-external' ? ['@aws-sdk/*'] : [],
        sourcemap: false,
      },
      outdir,
    ),
    logLevel: 'error',
    metafile: true,
  });
  const outputs = result.metafile.outputs;
  const byPath = new Map(Object.entries(outputs).map(([path, output]) => [resolve(path), output]));
  const initFiles = new Set<string>();
  const visit = (path: string) => {
    if (initFiles.has(path)) return;
    initFiles.add(path);
    for (const imported of byPath.get(path)?.imports ?? []) {
      if (imported.kind === 'import-statement' && !imported.external) visit(resolve(imported.path));
    }
  };
  visit(resolve(outdir, BUNDLE_ENTRY_FILE));
  const sum = (paths: Iterable<string>) =>
    [...paths].reduce((total, path) => total + (byPath.get(path)?.bytes ?? 0), 0);
  return { bytes: sum(byPath.keys()), initBytes: sum(initFiles) };
}

/** After the import: what BedrockModelClient does at its first call (import the SDK, build the client). */
const BEDROCK_FIRST_CALL =
  "const { BedrockRuntimeClient } = await import('@aws-sdk/client-bedrock-runtime'); new BedrockRuntimeClient({ maxAttempts: 1 });";

function medianImport(
  file: string,
  runs: number,
  env: Record<string, string> = {},
  after = '',
): { wallMs: number; cpuMs: number; afterMs: number } {
  const script = [
    'const c0 = process.cpuUsage(); const t0 = performance.now();',
    `await import(${JSON.stringify(file)});`,
    'const wall = performance.now() - t0; const c = process.cpuUsage(c0); const t1 = performance.now();',
    after,
    'console.log(JSON.stringify([wall, (c.user + c.system) / 1000, performance.now() - t1]));',
  ].join('\n');
  const samples: number[][] = [];
  for (let i = 0; i < runs; i++) {
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      // Resolved from the bundle's folder: `@aws-sdk/*` left external is found in node_modules.
      cwd: OUT_DIR,
      env: { ...machineEnv(), ...IMPORT_ENV, ...env },
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`importing ${file} failed: ${result.stderr.slice(0, 500)}`);
    samples.push(JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '[]') as number[]);
  }
  const median = (k: number) => {
    const sorted = samples.map((s) => s[k]!).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  return { wallMs: median(0), cpuMs: median(1), afterMs: median(2) };
}
