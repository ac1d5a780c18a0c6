import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import SlowestFirstSequencer from './test/slowest-first-sequencer.ts';

type Exports = Record<string, string | Record<string, string>>;
const { name, exports } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as {
  name: string;
  exports: Exports;
};
/**
 * `baton` and its subpaths (the examples import them by name, as a team does) resolve to the
 * TypeScript sources, as the package's `baton-source` condition says; an alias rather than the
 * condition, which would also change how Vite resolves every dependency.
 */
const sourceAliases = Object.entries(exports).flatMap(([subpath, target]) =>
  typeof target === 'object' && target['baton-source']
    ? [
        {
          find: new RegExp(`^${(name + subpath.slice(1)).replace(/[/.]/g, '\\$&')}$`),
          replacement: fileURLToPath(new URL(target['baton-source'], import.meta.url)),
        },
      ]
    : [],
);

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: {
    // The default report, then the slowest files (where a CI run's wall time went).
    reporters: ['default', './test/slowest-files-reporter.ts'],
    // The minutes-long files start first, so the suite does not end waiting for one of them alone.
    sequence: { sequencer: SlowestFirstSequencer },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests start worker processes; keep concurrency within a 2-core machine.
    maxWorkers: 2,
    projects: [
      // Pure unit tests: no emulators, run in seconds (`npx vitest run --project unit`).
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'stack',
          // A backstop above the tests' own waits (60 s by default, each naming what it waited
          // for), so a slow run fails on the wait's message, not on an anonymous test timeout.
          testTimeout: 240_000,
          include: ['test/{contract,integration,chaos,infra,browser}/**/*.test.ts'],
          // Boots DynamoDB Local and fauxqs once per run; tests read their endpoints with inject('baton').
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
