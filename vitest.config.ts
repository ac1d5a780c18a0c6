import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Boots DynamoDB Local and fauxqs once per run; tests read their endpoints with inject('baton').
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration tests start worker processes; keep concurrency within a 2-core machine.
    maxWorkers: 2,
  },
});
