/**
 * How long a `baton` command takes, end to end as a person types it (sh, the Node check, Node's
 * start, the CLI's modules, the call): `--help`, `status` and `send` against a local stack this
 * bench starts, from this checkout, and optionally from other copies to compare with (an older
 * checkout, an installed package). Prints figures; asserts nothing.
 *
 *   sh bin/run tsx --conditions=baton-source bench/cli-latency.ts [--runs N] [--checkout DIR]... [--installed PROJECT_DIR]...
 *
 * `--checkout DIR` times DIR/bin/baton (e.g. an export of an earlier commit with node_modules
 * linked); `--installed DIR` times DIR/node_modules/.bin/baton (a project that installed the
 * packed tarball). Each command runs `--runs` times after one unmeasured warm-up run (which
 * builds a checkout's bundle when it is stale); the median and the fastest run are printed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startLocalStack } from '../lib/local/local-stack.ts';
import { clientFor, localTarget } from '../lib/local/store-target.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_RUNS = 7;
/** A conversational example agent: `send` adds a turn to it. */
const AGENT = 'support-desk';
const FIRST_TURN_TIMEOUT_MS = 120_000;

interface Copy {
  readonly label: string;
  readonly bin: string;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

/**
 * Wall milliseconds of one run; throws with its stderr when it fails. Not spawnSync: the local
 * stack's API, which the commands call, is served by this process.
 */
function timeRun(command: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      if (code === 0) resolve(ms);
      else reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
}

async function measure(command: string, args: readonly string[], runs: number) {
  await timeRun(command, args);
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) samples.push(await timeRun(command, args));
  return { medianMs: median(samples), minMs: Math.min(...samples) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string' },
      checkout: { type: 'string', multiple: true },
      installed: { type: 'string', multiple: true },
    },
  });
  const runs = values.runs === undefined ? DEFAULT_RUNS : Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be a whole number ≥ 1, got '${values.runs}'`);
  const copies: Copy[] = [
    { label: 'this checkout', bin: join(ROOT, 'bin', 'baton') },
    ...(values.checkout ?? []).map((dir) => ({ label: `checkout ${dir}`, bin: join(resolve(dir), 'bin', 'baton') })),
    ...(values.installed ?? []).map((dir) => ({
      label: `installed ${dir}`,
      bin: join(resolve(dir), 'node_modules', '.bin', 'baton'),
    })),
  ];

  const stateDir = mkdtempSync(join(tmpdir(), 'baton-cli-bench-'));
  const stack = await startLocalStack({
    workers: 1,
    stateDir,
    prefix: `clibench${process.pid}`,
    console: { port: 0 },
    workerOutput: 'ignore',
  });
  try {
    const { config } = stack;
    const client = clientFor(localTarget(config));
    const ticketId = `cli-bench-${process.pid}`;
    const { sessionId } = await client.submit({ agent: AGENT, ticketId, input: { text: 'hello' } });
    const deadline = Date.now() + FIRST_TURN_TIMEOUT_MS;
    while ((await client.status(sessionId))?.status !== 'idle') {
      if (Date.now() > deadline) throw new Error(`session ${sessionId} not idle after ${FIRST_TURN_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    const [load1] = loadavg();
    console.log(`baton CLI latency, wall ms (median / fastest of ${runs}); load average ${load1?.toFixed(1)}`);
    const node = await measure(process.execPath, ['-e', '0'], runs);
    console.log(`  ${'node -e 0 (the floor)'.padEnd(48)} ${fmt(node)}`);
    // Command by command, each copy in turn: on a shared machine the load drifts, and the copies
    // of one command should see the same.
    const state = ['--state-dir', stateDir];
    for (const [name, args] of [
      ['--help', ['--help']],
      ['status SESSION', [...state, 'status', sessionId]],
      ['send SESSION --text …', [...state, 'send', sessionId, '--text', 'again']],
    ] as const) {
      console.log(name);
      for (const copy of copies) {
        const figures = await measure('sh', [copy.bin, ...args], runs).then(fmt, (error: Error) => {
          const [reason] = error.message.split('\n');
          return `fails: ${reason?.slice(-120)}`;
        });
        console.log(`  ${copy.label.padEnd(48)} ${figures}`);
      }
    }
  } finally {
    await stack.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const fmt = ({ medianMs, minMs }: { medianMs: number; minMs: number }) =>
  `${medianMs.toFixed(0).padStart(6)} / ${minMs.toFixed(0).padStart(6)}`;

await main();
