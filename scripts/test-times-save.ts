// Keeps each test file's duration from vitest's JSON report (npm run test:times) in
// test/support/file-times.json, under the tier the run was made in, for the longest-first order.

import { readFileSync, writeFileSync } from 'node:fs';

const REPORT = process.argv[2] ?? 'scratch/test-times.json';
const TIMES = 'test/support/file-times.json';
const tier = process.env.CI === 'true' ? 'ci' : 'default';

/** The file's path from the repository root (test/…), wherever the run was made (a worktree, a clone). */
const testPath = (name: string) => name.replaceAll('\\', '/').replace(/^.*?\/(test\/)/, '$1');

const report = JSON.parse(readFileSync(REPORT, 'utf8')) as { testResults: { name: string; startTime: number; endTime: number }[] };
const times = JSON.parse(readFileSync(TIMES, 'utf8')) as Record<string, Record<string, number>>;
times[tier] = Object.fromEntries(report.testResults
  .map((r) => [testPath(r.name), Math.round((r.endTime - r.startTime) / 100) / 10] as const)
  .sort(([a], [b]) => a.localeCompare(b)));
writeFileSync(TIMES, `${JSON.stringify(times, null, 2)}\n`);
console.log(`${TIMES}: ${Object.keys(times[tier]!).length} files under "${tier}"`);
