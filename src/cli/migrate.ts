// `migrate`: creates or upgrades the service's schemas without starting it (the service does the
// same at each start): the control store's migrations (DuckDB's, or PostgreSQL's with DATABASE_URL),
// and with ANALYTICS_STORE=clickhouse the ClickHouse schema. Opening the stores is the migration;
// the ClickHouse store also inserts the rows a stopped service left in its outbox before it closes.

import { loadConfig } from '../config.js';
import { TypedColumns } from '../store/duckdb/typed.js';
import type { Command, Values } from './args.js';
import { print, printJson } from './output.js';
import { openServiceDatabase, SERVICE_DATABASE_HELP, SERVICE_DATABASE_NOTE, SERVICE_DATABASE_OPTIONS } from './service-database.js';

const HELP = `usage: audiences migrate [--data <file.duckdb>] [--json]

Creates or upgrades the service's schemas, as the service does at each start: the migrations of
its database (the DuckDB file, created when missing; with DATABASE_URL and no --data, PostgreSQL's
tables), and with ANALYTICS_STORE=clickhouse the ClickHouse schema (CLICKHOUSE_URL, else the
embedded chDB at CLICKHOUSE_PATH; in CLICKHOUSE_DATABASE; ON CLUSTER with CLICKHOUSE_CLUSTER).
On DuckDB it also fills the typed payload columns of events stored before them (the service does
that in the background after its start; here it is done before the command returns). Every step is
idempotent: running it again changes nothing.

${SERVICE_DATABASE_NOTE}

options:
  ${SERVICE_DATABASE_HELP}
  --json                    print { database, database_created, schema_version, analytics_store, typed_rows_filled,
                            clickhouse?: { database, url?, path?, cluster? } }
  -h, --help                this help`;

async function migrate(_: string[], values: Values): Promise<number> {
  const config = loadConfig();
  const db = await openServiceDatabase(values, 'migrate', true);
  try {
    const version = await db.stores.control.schemaVersion();
    const ch = config.clickhouse;
    const clickhouse: { database: string; url?: string; path?: string; cluster?: string } | undefined = config.analyticsStore === 'clickhouse'
      ? { database: ch.database, ...(ch.url === undefined ? { path: ch.path } : { url: ch.url }), ...(ch.cluster === undefined ? {} : { cluster: ch.cluster }) }
      : undefined;
    // Typed payload columns live with DuckDB's analytical tables only.
    let filled = 0;
    if (config.analyticsStore === 'duckdb' && db.stores.duckdb) {
      const typed = TypedColumns.of(db.stores.duckdb);
      await typed.settled();
      filled = await typed.fill();
    }
    if (values.json) {
      printJson({
        database: db.path, database_created: db.created, schema_version: version, analytics_store: config.analyticsStore, typed_rows_filled: filled, clickhouse,
      });
      return 0;
    }
    print(`${db.path}: ${db.created ? 'created, ' : ''}schema version ${version}`);
    if (filled > 0) print(`typed payload columns: ${filled.toLocaleString('en-US')} event rows filled`);
    if (clickhouse) {
      const where = clickhouse.url ?? `the embedded chDB at ${clickhouse.path}`;
      print(`ClickHouse: database ${clickhouse.database} on ${where}${clickhouse.cluster ? ` (cluster ${clickhouse.cluster})` : ''} up to date`);
    }
    return 0;
  } finally {
    await db.close();
  }
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'create or upgrade the service\'s schemas (its database, and ClickHouse when configured)',
  help: HELP,
  options: SERVICE_DATABASE_OPTIONS,
  positionals: [],
  run: migrate,
};
