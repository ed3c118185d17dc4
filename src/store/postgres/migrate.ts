// The PostgreSQL schema (migrations/*.sql, in file name order) applied with node-pg-migrate, at
// every start and by `audiences migrate`. Nodes starting together wait for the one migrating
// (node-pg-migrate's advisory lock), then find nothing left to run.

import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import type pg from 'pg';

export const MIGRATIONS_TABLE = 'pgmigrations';
const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations', import.meta.url));

/** Applies the migrations not applied yet, on `client`, all in one transaction. */
export async function migratePostgres(client: pg.ClientBase): Promise<void> {
  await runner({
    dbClient: client,
    dir: MIGRATIONS_DIR,
    migrationsTable: MIGRATIONS_TABLE,
    direction: 'up',
    advisoryLockMode: 'wait',
    log: () => undefined,
  });
}
