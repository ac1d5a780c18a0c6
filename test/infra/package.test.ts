import { execFileSync, spawn } from 'node:child_process';
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
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../fixtures/cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

interface Run {
  /** The exit code; null when a signal (the timeout's) ended the process. */
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end without blocking the event loop (spawnSync would), so the tests of
 * this file can run at once: most of their time is child processes (tsc, esbuild, local stacks).
 * Past `timeoutMs` its process group is killed and the run resolves with status null.
 */
function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Run> {
  return new Promise((resolvePromise, reject) => {
    // Its own process group, so a timeout stops what it started too (npm → tsc).
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ status: code, stdout, stderr });
    });
  });
}

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
    include: ['src', 'infra'],
  }),
  'src/agents.ts': `import { agentRegistry, defineAgent, defineTool, scriptedModel, type Result, Ticket, toolResults } from '@baton-run/baton';
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
  'src/intake.ts': `import { createIntakeHandler } from '@baton-run/baton/aws';
import { agents } from './agents.ts';
export const handler = createIntakeHandler({ agents });
`,
  'src/step.ts': `import { createStepHandler } from '@baton-run/baton/aws';
import { agents } from './agents.ts';
export const handler = createStepHandler({ agents });
`,
  'src/sweeper.ts': `import { createSweeperHandler } from '@baton-run/baton/aws';
export const handler = createSweeperHandler();
`,
  'src/api.ts': `import { createHttpApiHandler } from '@baton-run/baton/aws';
import { agents } from './agents.ts';
export const handler = createHttpApiHandler({ agents });
`,
  // The team's CDK app: its own handlers, the construct from baton/cdk, cdk-nag's packs over it all.
  'infra/app.ts': `import { App, Stack, Validations } from 'aws-cdk-lib';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { BatonRuntime } from '@baton-run/baton/cdk';

const app = new App();
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
const stack = new Stack(app, 'TeamAgents');
const baton = new BatonRuntime(stack, 'Baton', {
  handlers: { intake: 'src/intake.ts', step: 'src/step.ts', sweeper: 'src/sweeper.ts', api: 'src/api.ts' },
  projectRoot: import.meta.dirname + '/..',
});
baton.grantSubmitTickets(new Role(stack, 'Producer', { assumedBy: new AccountRootPrincipal() }));
`,
  // NodejsFunction builds from a lockfile; a team's is npm's.
  'package-lock.json': JSON.stringify({ name: 'team-agents', lockfileVersion: 3, packages: {} }),
  // The typed client, typed by an agent's schemas through the published declarations.
  'src/client.ts': `import { defineAgent, scriptedModel } from '@baton-run/baton';
import { createClient } from '@baton-run/baton/client';
import { z } from 'zod';

const asker = defineAgent({
  name: 'asker',
  instructions: 'Answer.',
  input: z.object({ question: z.string() }),
  output: z.object({ answer: z.string() }),
  model: scriptedModel({ script: () => ({ final: '{"answer":"because"}' }) }),
});
const baton = createClient({ baseUrl: 'https://abc.lambda-url.eu-west-1.on.aws' });

export async function ask(question: string): Promise<string> {
  const outcome = await (await baton.start(asker, { question })).result();
  return outcome.status === 'completed' ? outcome.output.answer : 'no answer';
}
// @ts-expect-error the input must match the agent's input schema
export const wrongInput = () => baton.start(asker, { text: 'why?' });
`,
  // Proves the declarations carry real types (with \`any\` the expected errors would not happen).
  'src/misuse.ts': `import { createStepHandler } from '@baton-run/baton/aws';
import { defineAgent } from '@baton-run/baton';
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

/** What only the local stack and the tests may switch on: none of it may be in a Lambda bundle. */
const TEST_HOOKS = {
  'the agents-module import': 'BATON_AGENTS_MODULE',
  'the fault middleware': 'BATON_FAULTS',
  'the file failpoints': 'SIGKILL',
  'the local trace-header shim': 'batonAwsTraceHeaderShim',
};

/**
 * Synthesizes the CDK app in `cwd` offline (no credentials, no cdk CLI) into `outdir`; returns
 * each bundle's code. Without `bundle`, esbuild is skipped (most of a synth's time).
 */
async function synthBundles(cwd: string, outdir: string, bundle = true): Promise<string[]> {
  const context = bundle ? {} : { CDK_CONTEXT_JSON: JSON.stringify({ 'aws:cdk:bundling-stacks': [] }) };
  const synth = await run(process.execPath, ['infra/app.ts'], {
    cwd,
    env: { ...process.env, ...context, CDK_OUTDIR: outdir, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  expect(synth.status, synth.stderr).toBe(0);
  const report = join(outdir, 'validation-report.json');
  if (existsSync(report)) {
    const { pluginReports } = JSON.parse(readFileSync(report, 'utf8')) as {
      pluginReports: { pluginName: string; conclusion: string; violations: { ruleName: string }[] }[];
    };
    for (const plugin of pluginReports)
      expect({ [plugin.pluginName]: plugin.violations.map((v) => v.ruleName) }).toEqual({ [plugin.pluginName]: [] });
  }
  const assets = (await readdir(outdir)).filter((name) => name.startsWith('asset.'));
  // A function's bundle is its handler and the chunks it loads (on demand or not).
  return assets
    .filter((asset) => existsSync(join(outdir, asset, 'index.mjs')))
    .map((asset) =>
      [
        join(outdir, asset, 'index.mjs'),
        ...(existsSync(join(outdir, asset, 'chunks'))
          ? readdirSync(join(outdir, asset, 'chunks')).map((name) => join(outdir, asset, 'chunks', name))
          : []),
      ]
        .filter((file) => file.endsWith('.mjs'))
        .map((file) => readFileSync(file, 'utf8'))
        .join('\n'),
    );
}

/** The hooks found in a bundle, by what they are. */
const hooksIn = (bundle: string): string[] =>
  Object.entries(TEST_HOOKS)
    .filter(([, marker]) => bundle.includes(marker))
    .map(([hook]) => hook);

/**
 * Runs a `baton dev` command (`npm start` or the bin) until it prints the sample ticket's outcome,
 * then stops it with SIGINT as Ctrl-C would; returns everything it printed.
 */
function runUntilSampleFinished(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  return new Promise<string>((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    let stopping = false;
    const deadline = setTimeout(() => {
      stopping = true;
      process.kill(-child.pid!, 'SIGKILL');
      reject(new Error(`no sample outcome within ${DEV_DEADLINE_MS} ms; output:\n${output.slice(-4_000)}`));
    }, DEV_DEADLINE_MS);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (!stopping && /sample session \S+ \w+: /.test(output)) {
        stopping = true;
        process.kill(-child.pid!, 'SIGINT');
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', () => {
      clearTimeout(deadline);
      resolvePromise(output);
    });
  });
}

/** What a Bedrock-only project does not install (top-level names in node_modules): the adapters' and the tracer's optional peers. */
const OPTIONAL_PEERS_LEFT_OUT = ['ai', '@ai-sdk', '@modelcontextprotocol', '@opentelemetry'];

/** A local stack boots DynamoDB Local's JVM unless it finds the suite's; a busy machine is slow at both. */
const DEV_DEADLINE_MS = 180_000;

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

/** `npm pack` builds the package (prepack: tsc over the repository), minutes on a busy 2-core machine. */
const PACK_TIMEOUT_MS = 300_000;

/**
 * Packs the package into `dir` with a deadline of its own, so a slow build fails naming the
 * build rather than as an anonymous hook timeout.
 */
async function pack(dir: string): Promise<void> {
  const packed = await run('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: ROOT,
    timeoutMs: PACK_TIMEOUT_MS,
  });
  if (packed.status === null)
    throw new Error(`npm pack (which builds the package) did not finish within ${PACK_TIMEOUT_MS / 1000} s`);
  if (packed.status !== 0) throw new Error(`npm pack failed (exit ${packed.status}):\n${packed.stderr.slice(-4_000)}`);
}

// The tests run at once: each is mostly waiting on child processes (tsc, esbuild, a synth, a
// local stack on the suite's emulators), and in a row they took minutes more. On a busy 2-core
// machine each may take minutes. The pack stays here, not in the global setup: that runs before
// every run of the stack project, one file or all, and would hold every test up behind the build.
describe('the published package, installed into a project outside the repository', {
  timeout: 420_000,
  concurrent: true,
}, () => {
  let dir: string;
  let project: string;
  let installed: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'baton-package-'));
    await pack(dir);
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
    if (tarball === undefined) throw new Error(`npm pack wrote no tarball into ${dir}`);
    project = join(dir, 'project');
    const { name } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string };
    installed = join(project, 'node_modules', ...name.split('/'));
    mkdirSync(installed, { recursive: true });
    // What `npm install` of the tarball puts in node_modules/NAME; its dependencies are the repo's, linked.
    execFileSync('tar', ['-xzf', join(dir, tarball), '-C', installed, '--strip-components=1']);
    // A Bedrock-only team: none of the optional peers the AI SDK and MCP adapters or the
    // OpenTelemetry tracer need, so every test below also shows the package works without them.
    for (const name of readdirSync(join(ROOT, 'node_modules')))
      if (!name.startsWith('.') && !OPTIONAL_PEERS_LEFT_OUT.includes(name))
        symlinkSync(join(ROOT, 'node_modules', name), join(project, 'node_modules', name));
    // npm links each package's bins into node_modules/.bin: baton's own, and the tools a project runs.
    const bin = join(project, 'node_modules', '.bin');
    mkdirSync(bin);
    const { bin: bins } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    for (const [name, path] of Object.entries(bins)) symlinkSync(join(installed, path), join(bin, name));
    for (const tool of ['esbuild', 'tsc', 'cdk'])
      symlinkSync(join(ROOT, 'node_modules', '.bin', tool), join(bin, tool));
    for (const [file, text] of Object.entries(USER_FILES)) {
      mkdirSync(dirname(join(project, file)), { recursive: true });
      writeFileSync(join(project, file), text);
    }
  }, PACK_TIMEOUT_MS + 60_000);
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships compiled JavaScript with declarations for each entry, and none of the repository’s dev tools', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      private?: boolean;
      exports: Record<string, { types: string; default: string }>;
    };
    expect(manifest.private).toBeUndefined();
    for (const entry of ['.', './aws', './cdk', './testing', './client']) {
      const target = manifest.exports[entry];
      expect(target, `exports["${entry}"]`).toBeDefined();
      expect(existsSync(join(installed, target!.default)), `${entry} → ${target!.default}`).toBe(true);
      expect(existsSync(join(installed, target!.types)), `${entry} → ${target!.types}`).toBe(true);
    }
    // baton dev serves the web console from the package.
    expect(existsSync(join(installed, 'dist', 'console', 'index.html')), 'dist/console is published').toBe(true);
    for (const absent of ['lib/demo', 'bench', 'examples', 'functions', 'test'])
      expect(existsSync(join(installed, 'dist', absent)), `dist/${absent} is published`).toBe(false);
  });

  it('depends on neither the AI SDK nor OpenTelemetry: they are optional peers, so a project’s own copy is the one used', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
    };
    const optIn = ['ai', '@opentelemetry/api', '@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http'];

    expect(optIn.filter((name) => name in manifest.dependencies)).toEqual([]);
    expect(optIn.filter((name) => manifest.peerDependenciesMeta[name]?.optional !== true)).toEqual([]);
    expect(existsSync(join(project, 'node_modules', 'ai')), 'the test project has no ai').toBe(false);
  });

  it('keeps the local stack, chaos and fault hooks out of what a Lambda bundle of baton or baton/aws can import', () => {
    for (const entry of ['dist/lib/index.js', 'dist/lib/aws/index.js']) {
      const graph = [...importGraph(join(installed, entry))];
      expect(graph.length, `${entry} imports its modules`).toBeGreaterThan(5);
      expect(graph.filter((file) => DEV_ONLY.some((pattern) => pattern.test(file)))).toEqual([]);
    }
  });

  it("type-checks a team's agents module and two-line handlers against the published declarations", async () => {
    const tsc = await run(process.execPath, [TSC, '-p', join(project, 'tsconfig.json')]);
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  });

  it('loads under Node: the root entry defines agents, baton/aws builds handlers, the bin prints its usage', async () => {
    const script = `
      import { agents } from './src/agents.ts';
      import { BatonClient, defineAgent } from '@baton-run/baton';
      import { createStepHandler } from '@baton-run/baton/aws';
      import { createClient } from '@baton-run/baton/client';
      console.log(JSON.stringify({
        typedClient: typeof createClient,
        agents: [...agents.keys()],
        defineAgent: typeof defineAgent,
        client: typeof BatonClient,
        handlerFactory: typeof createStepHandler,
      }));`;
    const loaded = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
    expect(loaded.status, loaded.stderr).toBe(0);
    expect(JSON.parse(loaded.stdout)).toEqual({
      typedClient: 'function',
      agents: ['greeter'],
      defineAgent: 'function',
      client: 'function',
      handlerFactory: 'function',
    });

    // The package's bin, with this Node first on PATH, as npm would link it into node_modules/.bin.
    const help = await run('sh', [join(installed, 'bin/baton'), '--help'], {
      env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` },
    });
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('dev ');
    // The commands that run only from a checkout are not offered where they would refuse.
    expect(help.stdout).not.toMatch(/^ {2}(demo|bench|chaos) /m);
  });

  it("synthesizes a CDK app with the team's handlers offline, cdk-nag clean: bundles of its agents, none of the test hooks", async () => {
    const bundles = await synthBundles(project, join(dir, 'team.out'));

    expect(bundles).toHaveLength(4);
    // Intake and step run them; the API admits inputs against them. The sweeper needs none.
    expect(bundles.filter((bundle) => bundle.includes('greeter')).length, 'bundles with the agents').toBe(3);
    expect(bundles.map(hooksIn)).toEqual([[], [], [], []]);
  });

  it("hosts the team's agents with `baton dev --agents` and completes a ticket", async () => {
    writeFileSync(join(project, 'sample.json'), JSON.stringify({ agent: 'greeter', input: 'hi' }));

    const output = await runUntilSampleFinished(
      join(project, 'node_modules', '.bin', 'baton'),
      ['dev', '--agents', 'src/agents.ts', '--submit', 'sample.json', '--prefix', `pkg${process.pid}a`],
      project,
      devEnv(),
    );

    expect(output).toMatch(/sample session \S+ completed: "greeted"/);
  });

  // At once too: the synth writes its own outdir, and `npm start` and `npm run test:local` keep
  // their state in different directories of the app under different resource prefixes.
  describe('a project made by `baton init`', () => {
    let app: string;
    beforeAll(async () => {
      const init = await run(join(project, 'node_modules', '.bin', 'baton'), ['init', 'greeter-app'], {
        cwd: dir,
        env: devEnv(),
      });
      expect(init.status, init.stderr).toBe(0);
      app = join(dir, 'greeter-app');
      // What `npm install` would give it: the same packages as the team's project.
      symlinkSync(join(project, 'node_modules'), join(app, 'node_modules'));
      writeFileSync(
        join(app, 'package-lock.json'),
        JSON.stringify({ name: 'greeter-app', lockfileVersion: 3, packages: {} }),
      );
    });

    // Its handler files are the team's pattern, whose bundles the test above reads: here the app itself.
    it('synthesizes its CDK app: the construct over its four handler files', async () => {
      const outdir = join(dir, 'init.out');
      await synthBundles(app, outdir, false);
      const [template] = (await readdir(outdir)).filter((name) => name.endsWith('.template.json'));
      const { Resources } = JSON.parse(readFileSync(join(outdir, template!), 'utf8')) as {
        Resources: Record<
          string,
          { Type: string; Properties: { Environment?: { Variables: Record<string, string> } } }
        >;
      };
      const functions = Object.values(Resources).filter((r) => r.Type === 'AWS::Lambda::Function');

      expect(functions.map((f) => f.Properties.Environment?.Variables.POWERTOOLS_SERVICE_NAME)).toEqual(
        Array(4).fill('GreeterApp/Baton'),
      );
    });

    it('starts with `npm start`: the local stack with its agents completes the sample ticket', async () => {
      const output = await runUntilSampleFinished(
        'npm',
        ['start', '--', '--prefix', `pkg${process.pid}b`],
        app,
        devEnv(),
      );

      expect(output).toMatch(/sample session \S+ completed: "Hello, Ada!"/);
    });

    it('passes `npm test` (its agent through the test harness) and `npm run test:local` (on the local stack)', async () => {
      const npm = (script: string[]) => run('npm', script, { cwd: app, env: devEnv(), timeoutMs: DEV_DEADLINE_MS });
      const [harness, local] = await Promise.all([npm(['test']), npm(['run', 'test:local'])]);

      expect(harness.status, harness.stdout + harness.stderr).toBe(0);
      expect(harness.stdout).toMatch(/pass 3\b[\s\S]*fail 0/);
      expect(local.status, local.stdout + local.stderr).toBe(0);
      expect(local.stdout).toMatch(/pass 1\b[\s\S]*fail 0/);
    });
  });
});

/** The environment of a local stack in the test: this Node first on PATH, the suite's emulators (no second JVM). */
function devEnv(): NodeJS.ProcessEnv {
  return { ...cliEnv(), PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` };
}
