import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * How a Baton function is bundled (esbuild, through CDK's NodejsFunction), in one place so that
 * `baton bench` measures the bundles the construct deploys. No CDK import here: the bench loads it.
 */

/** The export condition under which `baton` resolves to its TypeScript sources in a checkout (package.json). */
export const SOURCE_CONDITION = 'baton-source';

/** The module specifier the functions import their agents from; mapped at bundle time. */
export const AGENTS_SPECIFIER = '#agents';

/** ESM builds of dependencies first: esbuild can drop what a function never uses from them. */
export const MAIN_FIELDS = ['module', 'main'];

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
