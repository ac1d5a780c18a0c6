import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** A team's project, as it would write it: an agents module and three two-line handler files. */
const USER_FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'team-agents', private: true, type: 'module' }),
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      target: 'ES2024',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      types: ['node'],
      strict: true,
      noEmit: true,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
    },
    include: ['src'],
  }),
  'src/agents.ts': `import { agentRegistry, defineAgent, defineTool, scriptedModel, type Result, Ticket, toolResults } from 'baton';
import { z } from 'zod';

const greet = defineTool({
  name: 'greet',
  description: 'Greets someone',
  input: z.object({ who: z.string() }),
  effect: 'pure',
  run: async ({ who }) => \`hello \${who}\`,
});

export const greeter = defineAgent({
  name: 'greeter',
  instructions: 'Greet whoever the ticket names.',
  tools: [greet],
  model: scriptedModel({
    script: (transcript) =>
      toolResults(transcript).size > 0
        ? { final: 'greeted' }
        : { toolCalls: [{ id: 'call-1', name: 'greet', input: { who: 'team' } }] },
  }),
});

export const agents = agentRegistry([greeter]);

// The message schemas and types are part of the surface.
export const sample: Ticket = Ticket.parse({ ticketId: 'ticket-1', agent: 'greeter', input: 'hi' });
export const describeResult = (result: Result): string => result.ticketId;
`,
  'src/intake.ts': `import { createIntakeHandler } from 'baton/aws';
import { agents } from './agents.ts';
export const handler = createIntakeHandler({ agents });
`,
  'src/step.ts': `import { createStepHandler } from 'baton/aws';
import { agents } from './agents.ts';
export const handler = createStepHandler({ agents });
`,
  'src/sweeper.ts': `import { createSweeperHandler } from 'baton/aws';
export const handler = createSweeperHandler();
`,
  // Proves the declarations carry real types (with \`any\` the expected errors would not happen).
  'src/misuse.ts': `import { createStepHandler } from 'baton/aws';
import { defineAgent } from 'baton';
// @ts-expect-error the agents are required
export const noAgents = createStepHandler({});
// @ts-expect-error an agent needs a model
export const noModel = defineAgent({ name: 'x', instructions: 'y' });
`,
};

/** Modules only the repository's development tools use: never in the graph of a published entry. */
const DEV_ONLY = [
  /\/lib\/local\//,
  /\/lib\/chaos\//,
  /\/lib\/demo\//,
  /\/adapters\/faults\//,
  /\/bench\//,
  /\/examples\//,
];

/** The relative imports of compiled ESM, followed from `entry`: the files a bundle of it could pull in. */
function importGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g))
      visit(resolve(dirname(file), match[1] as string));
  };
  visit(entry);
  return seen;
}

// `npm pack` builds the package (prepack) on a busy 2-core machine: allow minutes.
describe('the published package, installed into a project outside the repository', { timeout: 240_000 }, () => {
  let dir: string;
  let project: string;
  let installed: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'baton-package-'));
    execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
    if (tarball === undefined) throw new Error(`npm pack wrote no tarball into ${dir}`);
    project = join(dir, 'project');
    installed = join(project, 'node_modules', 'baton');
    mkdirSync(installed, { recursive: true });
    // What `npm install baton.tgz` puts in node_modules/baton; its dependencies are the repo's, linked.
    execFileSync('tar', ['-xzf', join(dir, tarball), '-C', installed, '--strip-components=1']);
    for (const name of readdirSync(join(ROOT, 'node_modules')))
      if (!name.startsWith('.')) symlinkSync(join(ROOT, 'node_modules', name), join(project, 'node_modules', name));
    for (const [file, text] of Object.entries(USER_FILES)) {
      mkdirSync(dirname(join(project, file)), { recursive: true });
      writeFileSync(join(project, file), text);
    }
  }, 240_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships compiled JavaScript with declarations for each entry, and none of the repository’s dev tools', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      private?: boolean;
      exports: Record<string, { types: string; default: string }>;
    };
    expect(manifest.private).toBeUndefined();
    for (const entry of ['.', './aws', './cdk']) {
      const target = manifest.exports[entry];
      expect(target, `exports["${entry}"]`).toBeDefined();
      expect(existsSync(join(installed, target!.default)), `${entry} → ${target!.default}`).toBe(true);
      expect(existsSync(join(installed, target!.types)), `${entry} → ${target!.types}`).toBe(true);
    }
    for (const absent of ['lib/demo', 'bench', 'examples', 'functions', 'test'])
      expect(existsSync(join(installed, 'dist', absent)), `dist/${absent} is published`).toBe(false);
  });

  it('keeps the local stack, chaos and fault hooks out of what a Lambda bundle of baton or baton/aws can import', () => {
    for (const entry of ['dist/lib/index.js', 'dist/lib/aws/index.js']) {
      const graph = [...importGraph(join(installed, entry))];
      expect(graph.length, `${entry} imports its modules`).toBeGreaterThan(5);
      expect(graph.filter((file) => DEV_ONLY.some((pattern) => pattern.test(file)))).toEqual([]);
    }
  });

  it("type-checks a team's agents module and two-line handlers against the published declarations", () => {
    const run = spawnSync(process.execPath, [TSC, '-p', join(project, 'tsconfig.json')], { encoding: 'utf8' });
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('loads under Node: the root entry defines agents, baton/aws builds handlers, the bin prints its usage', () => {
    const script = `
      import { agents } from './src/agents.ts';
      import { BatonClient, defineAgent } from 'baton';
      import { createStepHandler } from 'baton/aws';
      console.log(JSON.stringify({
        agents: [...agents.keys()],
        defineAgent: typeof defineAgent,
        client: typeof BatonClient,
        handlerFactory: typeof createStepHandler,
      }));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      agents: ['greeter'],
      defineAgent: 'function',
      client: 'function',
      handlerFactory: 'function',
    });

    // The package's bin, with this Node first on PATH, as npm would link it into node_modules/.bin.
    const help = spawnSync('sh', [join(installed, 'bin/baton'), '--help'], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
    });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('dev ');
  });
});
