import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's example agents: what the local stack hosts without `--agents`. A package install has none. */
export const EXAMPLE_AGENTS_URL = new URL('../../examples/agents.ts', import.meta.url);

/**
 * The agents module `baton dev` hands its workers: the `--agents` file (which must exist), or
 * undefined for the repository's examples. Without `--agents` where there are no examples (an
 * installed package), it refuses at once rather than when the workers start.
 */
export function agentsModuleFor(given: string | undefined, examples: URL = EXAMPLE_AGENTS_URL): string | undefined {
  if (given === undefined) {
    if (existsSync(fileURLToPath(examples))) return undefined;
    throw new Error(
      'baton dev needs --agents FILE here (a module exporting agents = agentRegistry([...])): the repository’s example agents are not part of the installed package',
    );
  }
  const module = resolve(given);
  if (!existsSync(module))
    throw new Error(`--agents: ${module} does not exist (a module exporting agents = agentRegistry([...]))`);
  return module;
}
