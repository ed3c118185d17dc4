import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/support/sequencer.js';

// Two test files run at once on two cores: with DuckDB's one worker thread per core each, four
// threads would share them (and the CLI and service processes the tests start inherit it too). On
// the suites' small data a second thread runs no part of a plan and only spins while the first
// works (bench/RESULTS.md, "Test suite times"), so both tiers run one; the
// suites with data past one row group run one per core in the CI tier (PARALLEL_THREADS).
process.env.DUCKDB_THREADS ??= '1';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL for the run, started when a suite first asks for it (its PostgreSQL control-plane runs).
    globalSetup: ['test/support/postgres-server.ts'],
    // TEST_WORKERS overrides it. Two test files at once on two cores (vitest's default is one fewer than the cores): much of
    // the suite waits on timers, sockets and child processes, and every suite passes at load 8–10.
    maxWorkers: Number(process.env.TEST_WORKERS ?? 2),
    // The longest files first (test/support/file-times.json): the workers then finish together.
    sequence: { sequencer: LongestFirst },
    // A worker loads its modules (Fastify, DuckDB, zod, chDB) once for all the files it runs: every
    // suite builds its own app and stores, and closes them (bench/RESULTS.md, "Test suite times").
    isolate: false,
    // A guard against hangs, not a speed check: CLI and property suites take minutes on a loaded 2-core machine.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // expect.poll waits on a browser or a server doing work: its default second is too short on a loaded machine.
    expect: { poll: { timeout: 10_000 } },
  },
});
