import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { agentsModuleFor, EXAMPLE_AGENTS_URL } from '../../../lib/local/agents-module.ts';

describe('the agents module baton dev hosts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-agents-'));
  const noExamples = pathToFileURL(join(dir, 'examples', 'agents.ts'));

  it('refuses at once, naming --agents, when none is given and there are no examples (an installed package)', () => {
    expect(() => agentsModuleFor(undefined, noExamples)).toThrow(/--agents FILE/);
  });

  it('hosts the repository’s examples when none is given in a checkout, and a given file that exists', () => {
    const given = join(dir, 'agents.ts');
    writeFileSync(given, 'export const agents = new Map();\n');

    expect(agentsModuleFor(undefined, EXAMPLE_AGENTS_URL)).toBeUndefined();
    expect(agentsModuleFor(given, noExamples)).toBe(given);
    expect(() => agentsModuleFor(join(dir, 'missing.ts'))).toThrow(/--agents: .*missing\.ts does not exist/);
  });
});
