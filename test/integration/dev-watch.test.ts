import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { batonOk, cliEnv } from '../fixtures/cli.ts';
import { waitFor } from '../fixtures/wait-for.ts';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The shortest that fits a model call in the runtime's reserve. */
const FUNCTION_TIMEOUT_S = 15;
const VISIBILITY_TIMEOUT_S = 20;
/** Starting the stack's workers through tsx on a busy machine; a reload starts them again. */
const START_TIMEOUT_MS = 120_000;

/**
 * A team's agents module in a project of its own: the agent answers what `reply.ts` says, so an
 * edit of a file the module imports (not the module itself) changes what the agent does.
 * Inside the repository, so its imports of the runtime resolve to the sources.
 */
function writeProject(): { dir: string; reply: string; agents: string } {
  const root = join(REPO_ROOT, 'test-artifacts');
  mkdirSync(root, { recursive: true });
  const dir = mkdtempSync(join(root, 'dev-watch-'));
  const lib = (path: string) => JSON.stringify(join(REPO_ROOT, 'lib', path));
  const agents = join(dir, 'agents.ts');
  const reply = join(dir, 'reply.ts');
  writeFileSync(reply, "export const REPLY = 'first version';\n");
  writeFileSync(
    agents,
    `import { agentRegistry, defineAgent } from ${lib('agent/define-agent.ts')};
import { scriptedModel } from ${lib('agent/scripted-model.ts')};
import { REPLY } from './reply.ts';

export const agents = agentRegistry([
  defineAgent({ name: 'replier', instructions: 'Reply.', model: scriptedModel({ script: () => ({ final: REPLY }) }) }),
]);
`,
  );
  return { dir, reply, agents };
}

describe('baton dev --watch', () => {
  const project = writeProject();
  const stateDir = join(project.dir, 'state');
  let output = '';
  const dev = spawn(
    'sh',
    [
      join(REPO_ROOT, 'bin', 'baton'),
      '--state-dir',
      stateDir,
      'dev',
      '--agents',
      project.agents,
      '--watch',
      '--workers',
      '1',
      // A short visibility timeout: should a message a retired worker's last long poll took not be
      // given back at once (lib/local/abandoned-receives.ts), it is still back within --wait's minute.
      '--timeout-s',
      String(FUNCTION_TIMEOUT_S),
      '--visibility-s',
      String(VISIBILITY_TIMEOUT_S),
      '--prefix',
      `watch${process.pid}`,
    ],
    { cwd: REPO_ROOT, env: { ...cliEnv(), NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  dev.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  dev.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  afterAll(async () => {
    if (dev.exitCode === null && dev.signalCode === null) {
      const exited = new Promise((resolve) => dev.once('exit', resolve));
      dev.kill('SIGINT');
      await exited;
    }
    rmSync(project.dir, { recursive: true, force: true });
  });

  it(
    'reloads the workers when a file the agents module imports changes: the next turn runs the new code, the session store kept',
    async () => {
      // Arrange: the stack up and watching, a first ticket answered by the first version.
      await waitFor(() => output.includes('watching'), {
        timeoutMs: START_TIMEOUT_MS,
        what: () => `baton dev: ${output}`,
      });
      expect(output).toMatch(/watching +2 files/);
      const first = await batonOk(['submit', '--agent', 'replier', '--text', 'hi', '--wait'], stateDir);
      expect(first).toContain('first version');

      // Act: the developer edits reply.ts.
      writeFileSync(project.reply, "export const REPLY = 'second version';\n");
      await waitFor(() => /worker 0 reloaded/.test(output), { timeoutMs: START_TIMEOUT_MS, what: () => output });
      const second = await batonOk(['submit', '--agent', 'replier', '--text', 'again', '--wait'], stateDir);

      // Assert
      expect(output).toContain(`${project.reply} changed; reloading the workers`);
      expect(second).toContain('second version');
      // The first session is still there to read: a reload is a redeploy, not a reset.
      expect(await batonOk(['list', '--agent', 'replier'], stateDir)).toMatch(/completed[\s\S]*completed/);
      // Readable log lines by default, not the functions' JSON.
      expect(output).toMatch(/\d\d:\d\d:\d\d\.\d{3} INFO +step default\/replier\/\w{8} turn \w{8} {2}turn finished/);
      expect(output).not.toContain('"level":"INFO"');
    },
    3 * START_TIMEOUT_MS,
  );
});
