import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DemoSummary } from '../../lib/demo/demo-summary.ts';
import { batonCli } from '../fixtures/cli.ts';

/**
 * The demo's own deadline: past it, it prints its summary with what is missing and exits 1. It
 * ends as soon as every ticket completes (about a minute); a loaded machine took 112 s at 120.
 */
const DEMO_DEADLINE_S = 200;
let demos = 0;
/** Resources of its own on the suite's shared emulators: the default prefix is any other test's too. */
const ownPrefix = () => ['--prefix', `demo${process.pid}x${++demos}`];
/** Starting the CLI and its workers on a busy machine, before the demo's deadline runs. */
const START_ALLOWANCE_MS = 60_000;
/** The process is stopped past this (the run then fails showing its output)… */
const CLI_TIMEOUT_MS = DEMO_DEADLINE_S * 1000 + START_ALLOWANCE_MS;
/** …and the test never times out before that. */
const DEMO_TIMEOUT_MS = CLI_TIMEOUT_MS + 30_000;

/** Runs `baton` as a user would (bin/baton), on the suite's emulators, with no terminal attached. */
const baton = (args: readonly string[], dir: string) => batonCli(args, dir, CLI_TIMEOUT_MS);

describe('baton demo', () => {
  const dirs: string[] = [];
  const stateDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-demo-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it(
    'runs a small batch to a green summary, exits 0 and prints the summary table without a terminal',
    async () => {
      // Arrange: four tickets, the fourth a long-haul job longer than the 10 s function timeout.
      const dir = stateDir();

      // Act
      const run = await baton(
        ['demo', '--tickets', '4', '--workers', '2', '--deadline-s', String(DEMO_DEADLINE_S), ...ownPrefix()],
        dir,
      );

      // Assert
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).not.toContain('\x1b[');
      expect(run.stdout).toMatch(/T04 {2}long-haul +leg +\d+ +step +\d+ +completed/);
      expect(run.stdout).toMatch(/completed +4\n/);
      expect(run.stdout).toMatch(/failed +0\n/);
      expect(run.stdout).toMatch(/duplicate effects +0\n/);
      expect(run.stdout).toMatch(/turn time p95 +\d+\.\d s/);
      expect(run.stdout).toContain('✓ every ticket completed correctly');
      expect(run.stdout, 'npm start prints the console address').toMatch(/console http:\/\/127\.0\.0\.1:\d+\//);
    },
    DEMO_TIMEOUT_MS,
  );

  it(
    'still ends green with --chaos: workers are killed, sessions recover, no once-only effect runs twice',
    async () => {
      // Arrange
      const dir = stateDir();

      // Act: --json puts the summary object alone on stdout, progress on stderr.
      const run = await baton(
        [
          '--json',
          'demo',
          '--tickets',
          '4',
          '--workers',
          '2',
          '--chaos',
          '--chaos-every-s',
          '3',
          '--deadline-s',
          String(DEMO_DEADLINE_S),
          ...ownPrefix(),
        ],
        dir,
      );

      // Assert
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const summary = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '{}') as DemoSummary;
      expect(summary).toMatchObject({
        tickets: 4,
        completed: 4,
        failed: 0,
        missing: 0,
        duplicateEffects: 0,
        green: true,
      });
      expect(summary.workerKills).toBeGreaterThan(0);
      expect(summary.legs).toBeGreaterThan(summary.tickets);
      expect(run.stderr).toContain('[chaos] kill -9 worker');
    },
    DEMO_TIMEOUT_MS,
  );
});
