// What the Segment benches share: the write key as Segment's clients send it, and a service's
// database file and ingest log under data/bench, removed before and after a run.

import { rmSync } from 'node:fs';
import { join } from 'node:path';

/** The Basic authorization of a write key: the key as user, no password. */
export const basicAuth = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

/** The database file and ingest log of the service `name`, its environment for them, and their removal. */
export function segmentFiles(name: string) {
  const dbPath = join('data', 'bench', `${name}.duckdb`);
  const logDir = join('data', 'bench', `${name}-log`);
  return {
    dbPath, logDir,
    env: { DATABASE_PATH: dbPath, INGEST_LOG_DIR: logDir },
    clean: () => { for (const path of [dbPath, `${dbPath}.wal`, logDir]) rmSync(path, { recursive: true, force: true }); },
  };
}
