import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
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
          include: ['test/{contract,integration,chaos,infra,browser}/**/*.test.ts'],
          // Boots DynamoDB Local and fauxqs once per run; tests read their endpoints with inject('baton').
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
