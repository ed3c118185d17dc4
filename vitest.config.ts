import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL for the run, for the suites' PostgreSQL control-plane runs.
    globalSetup: ['test/support/postgres-server.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
