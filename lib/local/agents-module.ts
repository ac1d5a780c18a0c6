import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AgentRegistry } from '../agent/define-agent.ts';
import type { ScheduleDefinition } from '../agent/define-schedule.ts';

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

/**
 * Loads the agents a local stack hosts: the module's `agents` export, or the repository's
 * examples without one. The workers run them; `baton dev`'s API admits inputs against them.
 */
export async function loadAgents(
  module: string | undefined,
  examples: URL = EXAMPLE_AGENTS_URL,
): Promise<AgentRegistry> {
  if (module === undefined || module === '') {
    // The repository's example agents; an installed package has none and says so.
    try {
      return ((await import(examples.href)) as { agents: AgentRegistry }).agents;
    } catch (error) {
      throw new Error('no agents to host: set BATON_AGENTS_MODULE (baton dev --agents ./path/agents.ts)', {
        cause: error,
      });
    }
  }
  const url = module.startsWith('file:') ? module : pathToFileURL(module).href;
  const loaded = (await import(url)) as { agents?: unknown };
  if (!(loaded.agents instanceof Map)) throw new Error(`${module} has no 'agents' export (an agentRegistry([...]))`);
  return loaded.agents as AgentRegistry;
}

/**
 * The module's `schedules` export (`defineSchedule` results), checked against its agents: what
 * `baton dev` fires and `baton schedules` lists. None when the module has no such export.
 */
export async function loadSchedules(
  module: string | undefined,
  examples: URL = EXAMPLE_AGENTS_URL,
): Promise<ScheduleDefinition[]> {
  const url =
    module === undefined || module === ''
      ? examples.href
      : module.startsWith('file:')
        ? module
        : pathToFileURL(module).href;
  const loaded = (await import(url)) as { agents?: AgentRegistry; schedules?: unknown };
  if (loaded.schedules === undefined) return [];
  const where = module ?? 'the example agents';
  if (!Array.isArray(loaded.schedules))
    throw new Error(`${where}: 'schedules' must be an array of defineSchedule(...)`);
  return loaded.schedules.map((schedule: unknown, i) => {
    const s = schedule as Partial<ScheduleDefinition> | undefined;
    if (typeof s?.name !== 'string' || typeof s.expression !== 'string' || typeof s.agent !== 'string')
      throw new Error(`${where}: schedules[${i}] is not a defineSchedule(...) result`);
    if (loaded.agents instanceof Map && !loaded.agents.has(s.agent))
      throw new Error(`${where}: schedule "${s.name}" names agent "${s.agent}", which the module does not export`);
    return s as ScheduleDefinition;
  });
}
