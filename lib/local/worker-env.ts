/** What any process needs to run, taken from the developer's environment. */
const INHERITED = [
  'PATH',
  'HOME',
  'USER',
  'LANG',
  'TZ',
  'TMPDIR',
  'TMP',
  'TEMP',
  'TERM',
  'NO_COLOR',
  'FORCE_COLOR',
  'SYSTEMROOT',
];
/** Locale settings, the local stack's own switches (faults, demo pacing) and log levels. */
const INHERITED_PREFIXES = ['LC_', 'BATON_DEMO_', 'POWERTOOLS_'];
/** Fault injection and crash points: `BATON_FAULTS=… baton dev` must reach the workers that inject them. */
const INHERITED_BATON = ['BATON_FAULTS', 'BATON_FAILPOINTS_FILE'];
/** Comma-separated names a developer passes on to the workers on purpose (e.g. a Bedrock model id). */
export const WORKER_ENV_PASS = 'BATON_WORKER_ENV';

/**
 * The environment of a local worker: the basics from the developer's environment and the
 * stack's own settings (`stack`: endpoints, local credentials, resource names), never the rest.
 * A worker runs the functions as Lambda would, so it must not inherit the developer's AWS
 * credentials, model ids or tokens: a ticket injected into the local stack could spend them.
 */
export function workerEnvironment(
  parent: NodeJS.ProcessEnv,
  stack: Readonly<Record<string, string>>,
): Record<string, string> {
  const passed = new Set(
    (parent[WORKER_ENV_PASS] ?? '')
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  );
  const keep = (name: string) =>
    INHERITED.includes(name) ||
    INHERITED_BATON.includes(name) ||
    INHERITED_PREFIXES.some((prefix) => name.startsWith(prefix)) ||
    passed.has(name);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parent)) if (value !== undefined && keep(name)) env[name] = value;
  return { ...env, ...stack };
}
