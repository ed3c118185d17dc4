// `migrate`: creates or upgrades the service's schemas without starting it (the service does the
// same at each start): the control store's migrations (DuckDB's, or PostgreSQL's with DATABASE_URL),
// and with ANALYTICS_STORE=clickhouse the ClickHouse schema. Opening the stores is the migration;
// the ClickHouse store also inserts the rows a stopped service left in its outbox before it closes.

import { loadConfig } from '../config.js';
import { rewriteStorage, type StorageRewrite } from '../store/duckdb/storage-format.js';
import type { Command, Values } from './args.js';
import { UsageError } from './errors.js';
import type { Output } from './output.js';
import { openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const HELP = `usage: audiences migrate [--data <file.duckdb>] [--rewrite-storage] [--json]

Creates or upgrades the service's schemas, as the service does at each start: the migrations of
its database (the DuckDB file, created when missing; with DATABASE_URL and no --data, PostgreSQL's
tables), and with ANALYTICS_STORE=clickhouse the ClickHouse schema (CLICKHOUSE_URL, else the
embedded chDB at CLICKHOUSE_PATH; in CLICKHOUSE_DATABASE; ON CLUSTER with CLICKHOUSE_CLUSTER).
On DuckDB it also fills the typed payload columns of events stored before them (the service does
that in the background after its start; here it is done before the command returns). Every step is
idempotent: running it again changes nothing.

With --rewrite-storage, a DuckDB file made in an older storage format (DuckDB's default is 1.0's;
the service makes new files in 1.5's, whose scans are faster) is then copied into the new format
and put in the old one's place, once its row counts are checked table by table. It needs the
file's size free on its disk, and takes minutes for 100 M events (2 minutes on 2 cores).

${SERVICE_DATABASE_NOTE}

options:
  ${SERVICE_DATABASE_HELP}
  --rewrite-storage         copy the DuckDB file into the service's storage format when it is older
  --json                    print { database, database_created, schema_version, analytics_store, typed_rows_filled,
                            clickhouse?: { database, url?, path?, cluster? },
                            storage?: { from, to, rewritten, tables, rows } (with --rewrite-storage) }
  -h, --help                this help`;

async function migrate(_: string[], values: Values, out: Output): Promise<number> {
  const config = loadConfig(out.env);
  const rewrite = values['rewrite-storage'] === true;
  if (rewrite && values.data === undefined && config.databaseUrl !== undefined) {
    throw new UsageError('--rewrite-storage rewrites a DuckDB file, and DATABASE_URL names PostgreSQL; pass --data <file.duckdb>', 'migrate');
  }
  const db = await openServiceDatabase(values, 'migrate', true, out.env);
  const ch = config.clickhouse;
  const clickhouse: { database: string; url?: string; path?: string; cluster?: string } | undefined = config.analyticsStore === 'clickhouse'
    ? { database: ch.database, ...(ch.url === undefined ? { path: ch.path } : { url: ch.url }), ...(ch.cluster === undefined ? {} : { cluster: ch.cluster }) }
    : undefined;
  let version: number;
  // Typed payload columns live with DuckDB's analytical tables only.
  let filled = 0;
  try {
    version = await db.stores.control.schemaVersion();
    if (config.analyticsStore === 'duckdb' && db.stores.duckdb) {
      const typed = db.stores.duckdb.typed;
      await typed.settled();
      filled = await typed.fill();
    }
  } finally {
    await db.close();
  }
  // The file is closed (checkpointed) before it is copied.
  const storage = rewrite ? await rewriteStorage(db.path) : undefined;
  if (values.json) {
    out.json({
      database: db.path, database_created: db.created, schema_version: version, analytics_store: config.analyticsStore, typed_rows_filled: filled, clickhouse, storage,
    });
    return 0;
  }
  out.print(`${db.path}: ${db.created ? 'created, ' : ''}schema version ${version}`);
  if (filled > 0) out.print(`typed payload columns: ${filled.toLocaleString('en-US')} event rows filled`);
  if (clickhouse) {
    const where = clickhouse.url ?? `the embedded chDB at ${clickhouse.path}`;
    out.print(`ClickHouse: database ${clickhouse.database} on ${where}${clickhouse.cluster ? ` (cluster ${clickhouse.cluster})` : ''} up to date`);
  }
  if (storage) {
    out.print(storage.rewritten
      ? `storage format: rewritten from DuckDB ${storage.from} into ${storage.to} (${storage.tables} tables, ${storage.rows.toLocaleString('en-US')} rows)`
      : `storage format: DuckDB ${storage.from}, nothing to rewrite`);
  }
  return 0;
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'create or upgrade the service\'s schemas (its database, and ClickHouse when configured)',
  help: HELP,
  options: { ...SERVICE_DATABASE_OPTIONS, 'rewrite-storage': { type: 'boolean' } },
  positionals: [],
  run: migrate,
};
