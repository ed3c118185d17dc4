// Bulk import of the export layout (layout.ts) into a workspace: from parquet files (the fixture
// generator's output, an analyst's export) or from in-memory rows (tests). Both paths run the
// same INSERT … SELECT statements, which replace public ids by integer keys.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { Store } from './db.js';
import { propertyPaths, recordPropertyPaths } from './properties.js';
import { timestamp } from './time.js';
import { DATASET_TABLES, type Dataset, type DatasetTable, LAYOUT_COLUMNS, type LayoutType } from './layout.js';

/** `$1` is the workspace id; `{src}` is the source relation aliased `s`. */
const INSERTS: Record<DatasetTable, string> = {
  persons: `INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, traits, created_at, updated_at)
    SELECT $1, nextval('person_keys'), s.person_id, CAST(s.external_id AS VARCHAR), lower(trim(s.email)), s.name,
      CAST(s.traits AS JSON), s.created_at, s.created_at
    FROM {src} s`,
  visitors: `INSERT INTO visitors (workspace_id, visitor_key, visitor_id, person_key, first_seen_at, linked_at)
    SELECT $1, nextval('visitor_keys'), s.visitor_id, p.person_key, s.first_seen_at,
      CASE WHEN p.person_key IS NOT NULL THEN s.first_seen_at END
    FROM {src} s LEFT JOIN persons p ON p.workspace_id = $1 AND p.person_id = s.person_id`,
  // One event name per statement ({name} is its parameter), in name order, each sorted by time:
  // the table ends up ordered by name and time, so zone maps skip row groups of other names and
  // windows, and no single sort has to hold every event (100 M events in one ran out of memory).
  events: `INSERT INTO events (workspace_id, event_id, message_id, event_name, ts, person_key, visitor_key, properties, received_at)
    SELECT $1, s.event_id, NULL, s.event_name, s.ts, p.person_key, v.visitor_key, CAST(s.properties AS JSON), s.ts
    FROM {src} s
      LEFT JOIN persons p ON p.workspace_id = $1 AND p.person_id = s.person_id
      LEFT JOIN visitors v ON v.workspace_id = $1 AND v.visitor_id = s.visitor_id
    WHERE s.event_name = {name}
    ORDER BY s.ts`,
  pageviews: `INSERT INTO pageviews (workspace_id, pageview_id, visitor_key, ts, url, referrer, title, host, path,
      referrer_host, source, medium, campaign, channel, channel_category)
    SELECT $1, s.pageview_id, v.visitor_key, s.ts, s.url, s.referrer, NULL, s.host, s.path, s.referrer_host,
      s.source, s.medium, s.campaign, s.channel, s.channel_category
    FROM {src} s JOIN visitors v ON v.workspace_id = $1 AND v.visitor_id = s.visitor_id
    ORDER BY s.ts`,
  customers: `INSERT INTO payment_customers (workspace_id, customer_id, email, person_key, visitor_key, tr_user_id,
      tr_visitor_id, link_state, updated_at)
    SELECT $1, s.customer_id, lower(trim(s.email)), p.person_key, v.visitor_key, NULL, s.visitor_id, s.link_state, now()
    FROM {src} s
      LEFT JOIN persons p ON p.workspace_id = $1 AND p.person_id = s.person_id
      LEFT JOIN visitors v ON v.workspace_id = $1 AND v.visitor_id = s.visitor_id`,
  subscriptions: `INSERT INTO subscriptions (workspace_id, subscription_id, customer_id, status, price_id, product_id,
      "interval", amount, currency, cancel_at_period_end, created_at)
    SELECT $1, s.subscription_id, s.customer_id, s.status, s.price_id, s.product_id, s."interval", s.amount,
      s.currency, s.cancel_at_period_end, s.created_at
    FROM {src} s`,
  invoices: `INSERT INTO invoices (workspace_id, invoice_id, customer_id, subscription_id, status, amount_due,
      amount_paid, currency, created_at)
    SELECT $1, s.invoice_id, s.customer_id, s.subscription_id, s.status, s.amount_due, s.amount_paid, s.currency, s.created_at
    FROM {src} s`,
  payment_events: `INSERT INTO payment_events (workspace_id, customer_id, kind, ts, object_id)
    SELECT $1, s.customer_id, s.kind, s.ts, s.object_id FROM {src} s`,
};

const EVENT_NAMES = 'SELECT DISTINCT event_name FROM {src} s ORDER BY event_name';

/** Property paths seen on one event name ({name}), from DuckDB's merged JSON structure of the properties. */
const PROPERTY_STRUCTURE = `SELECT CAST(json_group_structure(CAST(s.properties AS JSON)) AS VARCHAR) AS structure
  FROM {src} s WHERE s.event_name = {name}`;

/** Called after each imported table with its inserted rows and elapsed milliseconds (progress). */
export type ImportProgress = (table: DatasetTable, rows: number, ms: number) => void;

async function importFrom(store: Store, ws: string, relation: (t: DatasetTable) => { src: string; params: string[] } | null,
  before?: (tx: DuckDBConnection) => Promise<void>, onTable?: ImportProgress): Promise<void> {
  await store.transaction(async (tx) => {
    await before?.(tx);
    for (const table of DATASET_TABLES) {
      const source = relation(table);
      if (!source) continue;
      const t0 = performance.now();
      const sql = INSERTS[table].replace('{src}', source.src);
      let inserted = 0;
      if (table === 'events') {
        // Name by name: each statement holds one name's events, not all of them (memory at 100 M).
        const src = source.src.replace(/\$2/g, '$1');
        const names = (await tx.runAndReadAll(EVENT_NAMES.replace('{src}', src), source.params)).getRowObjectsJS();
        for (const { event_name: name } of names as { event_name: string }[]) {
          const structure = await tx.runAndReadAll(PROPERTY_STRUCTURE.replace('{src}', src).replace('{name}', `$${source.params.length + 1}`),
            [...source.params, name]);
          const paths = propertyPaths(JSON.parse(String(structure.getRowObjectsJS()[0]?.structure ?? '{}')));
          await recordPropertyPaths(tx, ws, paths.map((path) => ({ event_name: name, path })));
          inserted += (await tx.run(sql.replace('{name}', `$${source.params.length + 2}`), [ws, ...source.params, name])).rowsChanged;
        }
      } else {
        inserted = (await tx.run(sql, [ws, ...source.params])).rowsChanged;
      }
      onTable?.(table, inserted, performance.now() - t0);
    }
  });
}

/** Imports `<dir>/<table>.parquet` for each table file present, in one transaction. */
export async function importParquetDir(store: Store, ws: string, dir: string, onTable?: ImportProgress): Promise<void> {
  await importFrom(store, ws, (table) => {
    const file = join(dir, `${table}.parquet`);
    return existsSync(file) ? { src: 'read_parquet($2)', params: [file] } : null;
  }, undefined, onTable);
}

function append(appender: DuckDBAppender, type: LayoutType, value: unknown): void {
  if (value === null || value === undefined) return appender.appendNull();
  switch (type) {
    case 'VARCHAR':
      return appender.appendVarchar(String(value));
    case 'TIMESTAMP':
      return appender.appendTimestamp(timestamp(value as Date));
    case 'BIGINT':
      return appender.appendBigInt(BigInt(Math.round(value as number)));
    case 'BOOLEAN':
      return appender.appendBoolean(Boolean(value));
  }
}

/** Imports in-memory rows (tests, small loads) through staging tables and the same statements. */
export async function importDataset(store: Store, ws: string, data: Partial<Dataset>): Promise<void> {
  const present = DATASET_TABLES.filter((t) => data[t] !== undefined);
  await importFrom(store, ws, (table) => (present.includes(table) ? { src: `stage_${table}`, params: [] } : null), async (tx) => {
    for (const table of present) {
      const columns = LAYOUT_COLUMNS[table];
      const ddl = columns.map(([name, type]) => `"${String(name)}" ${type}`).join(', ');
      await tx.run(`CREATE OR REPLACE TEMP TABLE stage_${table} (${ddl})`);
      const appender = await tx.createAppender(`stage_${table}`, 'main', 'temp');
      for (const row of data[table] as unknown as Record<string, unknown>[]) {
        for (const [name, type] of columns) append(appender, type, row[String(name)]);
        appender.endRow();
      }
      appender.closeSync();
    }
  });
}
