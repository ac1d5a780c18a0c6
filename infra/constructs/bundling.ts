import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';

/**
 * How a Baton function is bundled (esbuild, run by the construct's local bundling), in one place
 * so that `baton bench` measures the bundles the construct deploys. No CDK import here: the bench
 * loads it.
 */

/** The export condition under which `baton` resolves to its TypeScript sources in a checkout (package.json). */
export const SOURCE_CONDITION = 'baton-source';

/** The module specifier the functions import their agents from; mapped at bundle time. */
export const AGENTS_SPECIFIER = '#agents';

/** ESM builds of dependencies first: esbuild can drop what a function never uses from them. */
export const MAIN_FIELDS = ['module', 'main'];

/**
 * The same for packages resolved through `exports`: esbuild adds the `module` condition only while
 * no conditions are configured, and any list (even an empty one) turns it off. Without it
 * `@smithy/core` and `@aws-sdk/core`, whose exports name `node` (CommonJS) before `import`,
 * came in as CommonJS: ~620 KiB wrapped whole and evaluated at every cold start, none of it
 * tree-shaken.
 */
export const ESM_CONDITION = 'module';

/**
 * ESM bundles still meet CommonJS dependencies that call `require()` for Node built-ins;
 * this banner gives them one.
 */
export const ESM_REQUIRE_BANNER =
  "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);";

/** Built-ins whose ESM import costs a cold start far more than the module itself (see below). */
const COSTLY_ESM_BUILTINS = ['http', 'https', 'child_process'] as const;

/**
 * Esbuild aliases that send `http`, `https` and `child_process` (with or without `node:`) to
 * one-line CommonJS modules returning `process.getBuiltinModule(...)`. An ESM bundle keeps its
 * imports of built-ins as ESM imports, and Node 24 builds an ESM facade for each by reading every
 * export — `node:http`'s lazy getters then load the whole of undici (its fetch), which cost more
 * than the DynamoDB client itself (measured with `baton bench --only bundle`). A CommonJS module
 * reads only what it uses. The AWS SDK's ESM builds and Powertools import them this way.
 */
export function builtinAliases(): Record<string, string> {
  return Object.fromEntries(
    COSTLY_ESM_BUILTINS.flatMap((name) => {
      const shim = fileURLToPath(new URL(`./node-builtins/${name}.cjs`, import.meta.url));
      return [
        [name, shim],
        [`node:${name}`, shim],
      ];
    }),
  );
}

/**
 * Packages the runtime imports only when a deployment opts in (the OpenTelemetry tracer, with
 * BATON_TRACING=otel): optional peers of the package, which a project may not have installed.
 */
export const OPT_IN_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace',
  '@opentelemetry/exporter-trace-otlp-http',
] as const;

/**
 * The opt-in packages not installed for `projectRoot` (in its node_modules or one above it):
 * left out of the bundles, where esbuild would otherwise fail to resolve their on-demand imports.
 * One installed is bundled, and loads only when the deployment opts in.
 */
export function absentOptInPackages(projectRoot: string): string[] {
  const installed = (name: string): boolean => {
    for (let dir = resolve(projectRoot); ; dir = dirname(dir)) {
      if (existsSync(join(dir, 'node_modules', name, 'package.json'))) return true;
      if (dirname(dir) === dir) return false;
    }
  };
  return OPT_IN_PACKAGES.filter((name) => !installed(name));
}

/** What one function's bundle is built from. */
export interface FunctionBundleInput {
  /** Absolute path of the handler file (it exports `handler`). */
  readonly entry: string;
  /** Absolute path of the module `#agents` maps to; undefined for a handler that imports its agents itself. */
  readonly agentsEntry?: string | undefined;
  /** Bundling Baton's own TypeScript sources (a checkout): resolve `baton` through its source condition. */
  readonly fromSource: boolean;
  /** Packages left out of the bundle. */
  readonly external: readonly string[];
  readonly sourcemap: boolean;
}

/** The handler file of a bundle, in its output folder: Lambda's handler is `index.handler`. */
export const BUNDLE_ENTRY_FILE = 'index.mjs';

/**
 * esbuild's options for one function: a minified ESM bundle written to `outdir` as `index.mjs`
 * plus chunks. Split into chunks, so what the function imports only on demand (the S3 and
 * Bedrock SDKs, the X-Ray SDK, OpenTelemetry, the MCP and AI SDK adapters) is not even parsed at
 * a cold start: in one file V8 still has to read every byte of it, which measured ~45 % of the
 * Bedrock-only step function's cold import (`baton bench --only bundle`).
 */
export function functionBuildOptions(input: FunctionBundleInput, outdir: string): BuildOptions {
  return {
    entryPoints: { index: input.entry },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    platform: 'node',
    target: 'node24',
    minify: true,
    sourcemap: input.sourcemap,
    mainFields: MAIN_FIELDS,
    conditions: [ESM_CONDITION, ...(input.fromSource ? [SOURCE_CONDITION] : [])],
    external: [...input.external],
    alias: {
      ...builtinAliases(),
      ...(input.agentsEntry === undefined ? {} : { [AGENTS_SPECIFIER]: input.agentsEntry }),
    },
    // Each chunk is a module of its own and gets its own `require`.
    banner: { js: ESM_REQUIRE_BANNER },
    logLevel: 'warning',
  };
}
