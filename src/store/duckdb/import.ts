// Bulk import of the export layout (store/layout.ts) into a workspace: from parquet files (the fixture
// generator's output, an analyst's export) or from in-memory rows (tests). Both paths run the
// same INSERT … SELECT statements (MAPPINGS), which replace public ids by integer keys; attach.ts
// makes views of the same SELECTs to read a directory in place.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { Store } from './db.js';
import { propertyPaths } from '../property-paths.js';
import { recordEventNames, recordPropertyPaths, recordTraitPaths } from './properties.js';
import { markAnonymousEvents } from './migrations.js';
import { personSearch } from './search.js';
import { timestamp } from './time.js';
import { DATASET_TABLES, type Dataset, type DatasetTable, LAYOUT_COLUMNS, type LayoutType } from '../layout.js';

/**
 * How each export table fills its store table: the columns set, each an expression over the source
 * row `s` and the joins of `from`, which turn public ids into keys. `{ws}` is the workspace, `{src}`
 * the source relation, `{person_key}` / `{visitor_key}` a new row's key. The import inserts these
 * rows; attach.ts makes views of the same SELECTs, so both read an export alike.
 */
export interface TableMapping {
  /** The store table. */
  table: string;
  columns: Readonly<Record<string, string>>;
  from: string;
}

/** The row's person, only when it exists (its key, or null). */
const PERSON = 'LEFT JOIN persons p ON p.workspace_id = {ws} AND p.person_id = s.person_id';
/** The row's visitor: page views of unknown visitors are left out, other rows keep a null key. */
const VISITOR = 'JOIN visitors v ON v.workspace_id = {ws} AND v.visitor_id = s.visitor_id';

export const MAPPINGS: Record<DatasetTable, TableMapping> = {
  persons: {
    table: 'persons',
    columns: {
      workspace_id: '{ws}', person_key: '{person_key}', person_id: 's.person_id', external_id: 'CAST(s.external_id AS VARCHAR)',
      email: 'lower(trim(s.email))', name: 's.name', traits: 'CAST(s.traits AS JSON)', created_at: 's.created_at',
      updated_at: 's.created_at', search: personSearch('lower(trim(s.email))', 'CAST(s.external_id AS VARCHAR)', 's.name'),
    },
    from: '{src} s',
  },
  visitors: {
    table: 'visitors',
    columns: {
      workspace_id: '{ws}', visitor_key: '{visitor_key}', visitor_id: 's.visitor_id', person_key: 'p.person_key',
      first_seen_at: 's.first_seen_at', linked_at: 'CASE WHEN p.person_key IS NOT NULL THEN s.first_seen_at END',
      // Every visitor, as a directory read in place sees them (always correct); the import then marks the exact ones.
      anonymous_events: 'true',
    },
    from: `{src} s ${PERSON}`,
  },
  events: {
    table: 'events',
    columns: {
      workspace_id: '{ws}', event_id: 's.event_id', message_id: 'NULL', event_name: 's.event_name', ts: 's.ts',
      person_key: 'p.person_key', visitor_key: 'v.visitor_key', properties: 'CAST(s.properties AS JSON)', received_at: 's.ts',
    },
    from: `{src} s ${PERSON} LEFT ${VISITOR}`,
  },
  pageviews: {
    table: 'pageviews',
    columns: {
      workspace_id: '{ws}', pageview_id: 's.pageview_id', visitor_key: 'v.visitor_key', ts: 's.ts', url: 's.url',
      referrer: 's.referrer', title: 'NULL', host: 's.host', path: 's.path', referrer_host: 's.referrer_host',
      source: 's.source', medium: 's.medium', campaign: 's.campaign', channel: 's.channel', channel_category: 's.channel_category',
    },
    from: `{src} s ${VISITOR}`,
  },
  customers: {
    table: 'payment_customers',
    columns: {
      workspace_id: '{ws}', customer_id: 's.customer_id', email: 'lower(trim(s.email))', person_key: 'p.person_key',
      visitor_key: 'v.visitor_key', tr_user_id: 'NULL', tr_visitor_id: 's.visitor_id', link_state: 's.link_state', updated_at: 'now()',
    },
    from: `{src} s ${PERSON} LEFT ${VISITOR}`,
  },
  subscriptions: {
    table: 'subscriptions',
    columns: {
      workspace_id: '{ws}', subscription_id: 's.subscription_id', customer_id: 's.customer_id', status: 's.status',
      price_id: 's.price_id', product_id: 's.product_id', interval: 's."interval"', amount: 's.amount', currency: 's.currency',
      cancel_at_period_end: 's.cancel_at_period_end', created_at: 's.created_at',
    },
    from: '{src} s',
  },
  invoices: {
    table: 'invoices',
    columns: {
      workspace_id: '{ws}', invoice_id: 's.invoice_id', customer_id: 's.customer_id', subscription_id: 's.subscription_id',
      status: 's.status', amount_due: 's.amount_due', amount_paid: 's.amount_paid', currency: 's.currency', created_at: 's.created_at',
      // The layout has no payment time: a paid invoice counts for the revenue report at its creation.
      paid_at: 'CASE WHEN s.amount_paid > 0 THEN s.created_at END',
    },
    from: '{src} s',
  },
  payment_events: {
    table: 'payment_events',
    columns: { workspace_id: '{ws}', customer_id: 's.customer_id', kind: 's.kind', ts: 's.ts', object_id: 's.object_id' },
    from: '{src} s',
  },
};

export interface MappingValues {
  ws: string;
  src: string;
  person_key: string;
  visitor_key: string;
}

/** A mapping's text with its placeholders replaced (a function, so `$1` in a value stays as it is). */
export function fillMapping(text: string, values: MappingValues): string {
  return text.replace(/\{(ws|src|person_key|visitor_key)\}/g, (_, key: keyof MappingValues) => values[key]);
}

/** The import draws new keys from the store's sequences. */
const SEQUENCE_KEYS = { person_key: "nextval('person_keys')", visitor_key: "nextval('visitor_keys')" };

/**
 * Import-only tails. Events go in name order, each name sorted by time: the table ends up ordered
 * by name and time, so zone maps skip row groups of other names and windows. A statement holds a
 * run of names (`$2` to `$3`) of at most EVENTS_PER_INSERT rows, or one name, so no single sort
 * holds every event (100 M events in one ran out of memory) and a small import is one statement,
 * not one per name.
 */
const IMPORT_TAIL: Partial<Record<DatasetTable, string>> = {
  events: ' WHERE s.event_name >= $2 AND s.event_name <= $3 ORDER BY s.event_name, s.ts',
  pageviews: ' ORDER BY s.ts',
};
const EVENTS_PER_INSERT = 5_000_000;

function insertSql(table: DatasetTable, src: string): string {
  const { table: target, columns, from } = MAPPINGS[table];
  return fillMapping(`INSERT INTO ${target} (${Object.keys(columns).map((c) => `"${c}"`).join(', ')})
    SELECT ${Object.values(columns).join(', ')}
    FROM ${from}${IMPORT_TAIL[table] ?? ''}`, { ws: '$1', src, ...SEQUENCE_KEYS });
}

/**
 * Each event name (those of `$1` only, when given) in name order, with its rows and DuckDB's merged
 * JSON structure of their properties: one scan for every name. Events without a name are not imported.
 */
const EVENT_NAMES = `SELECT event_name, count(*) AS n, CAST(json_group_structure(CAST(s.properties AS JSON)) AS VARCHAR) AS structure
  FROM {src} s WHERE event_name IS NOT NULL{only} GROUP BY event_name ORDER BY event_name`;
/** Trait paths seen on the persons, likewise. */
const TRAIT_STRUCTURE = 'SELECT CAST(json_group_structure(CAST(s.traits AS JSON)) AS VARCHAR) AS structure FROM {src} s';

/** The paths of the merged JSON structure `structure` (DuckDB's json_group_structure). */
const pathsOf = (structure: unknown): string[] => propertyPaths(JSON.parse(String(structure ?? '{}')));

/**
 * Records the property paths of the events in `src` (of the names `only`, when given): the payload
 * whitelist of each name. Returns each name found with its rows, in name order.
 */
export async function recordEventProperties(tx: DuckDBConnection, ws: string, src: string, only?: readonly string[]): Promise<{ name: string; rows: number }[]> {
  const filter = only === undefined ? '' : ' AND event_name IN (SELECT unnest(CAST(CAST($1 AS JSON) AS VARCHAR[])))';
  const found = (await tx.runAndReadAll(EVENT_NAMES.replace('{src}', () => src).replace('{only}', filter), only === undefined ? [] : [JSON.stringify(only)]))
    .getRowObjectsJS() as { event_name: string; n: bigint; structure: string | null }[];
  await recordPropertyPaths(tx, ws, found.flatMap((r) => pathsOf(r.structure).map((path) => ({ event_name: r.event_name, path }))));
  await recordEventNames(tx, ws, only === undefined ? found.map((r) => r.event_name) : [...only]);
  return found.map((r) => ({ name: r.event_name, rows: Number(r.n) }));
}

/** Records the trait paths of the persons in `src`: the person leaf's whitelist. */
export async function recordTraitDefinitions(tx: DuckDBConnection, ws: string, src: string): Promise<void> {
  const [row] = (await tx.runAndReadAll(TRAIT_STRUCTURE.replace('{src}', () => src))).getRowObjectsJS();
  await recordTraitPaths(tx, ws, pathsOf(row?.structure));
}

/** Consecutive names of at most EVENTS_PER_INSERT rows together (a bigger name alone). */
function insertRuns(names: readonly { name: string; rows: number }[]): { first: string; last: string; rows: number }[] {
  const runs: { first: string; last: string; rows: number }[] = [];
  for (const { name, rows } of names) {
    const run = runs.at(-1);
    if (run && run.rows + rows <= EVENTS_PER_INSERT) {
      run.last = name;
      run.rows += rows;
    } else {
      runs.push({ first: name, last: name, rows });
    }
  }
  return runs;
}

export interface ImportProgress {
  /** After each table: its inserted rows and elapsed milliseconds. */
  table?(table: DatasetTable, rows: number, ms: number): void;
  /**
   * Within events, before, while and after each statement (a run of names): the source rows done
   * (never decreasing; while a statement runs, its share of DuckDB's query progress) of `total`, the
   * run's first name before it and its last name after, and milliseconds since events began.
   */
  events?(done: number, total: number, name: string, ms: number): void;
}

/** While `work` runs on `conn`, calls `onPercent` with DuckDB's progress of the running query. */
async function watchProgress<T>(conn: DuckDBConnection, onPercent: (percent: number) => void, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => {
    const { percentage } = conn.progress;
    if (percentage > 0) onPercent(Math.min(percentage, 100));
  }, 250);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * Events name by name (each statement holds one name's events, not all of them: memory at 100 M).
 * Their typed payload columns are left to TypedColumns.fill: one UPDATE per name fills them.
 */
async function importEvents(store: Store, tx: DuckDBConnection, ws: string, src: string, progress: ImportProgress): Promise<number> {
  const t0 = performance.now();
  const names = await recordEventProperties(tx, ws, src);
  const total = names.reduce((sum, { rows }) => sum + rows, 0);
  const sql = insertSql('events', src);
  let done = 0;
  let reported = 0;
  const report = (rows: number, name: string) => {
    if (rows < reported) return;
    reported = rows;
    progress.events?.(rows, total, name, performance.now() - t0);
  };
  let inserted = 0;
  for (const run of insertRuns(names)) {
    report(done, run.first);
    const insert = () => tx.run(sql, [ws, run.first, run.last]);
    const result = progress.events
      ? await watchProgress(tx, (percent) => report(done + Math.floor((run.rows * percent) / 100), run.last), insert)
      : await insert();
    inserted += result.rowsChanged;
    done += run.rows;
    report(done, run.last);
  }
  await store.typed.imported(tx, ws, names.map((r) => r.name));
  return inserted;
}

async function importFrom(store: Store, ws: string, relation: (t: DatasetTable) => string | null,
  before?: (tx: DuckDBConnection) => Promise<void>, progress: ImportProgress = {}): Promise<void> {
  await store.transaction(async (tx) => {
    // The people search's indexes of the workspace are made again from its rows, the imported ones with them.
    store.afterCommit(() => store.search.forget(ws));
    await before?.(tx);
    // DuckDB tracks a query's progress only with its progress bar on; never let it print.
    if (progress.events) await tx.run('SET enable_progress_bar = true; SET enable_progress_bar_print = false');
    try {
      for (const table of DATASET_TABLES) {
        const src = relation(table);
        if (src === null) continue;
        const t0 = performance.now();
        const inserted = table === 'events'
          ? await importEvents(store, tx, ws, src, progress)
          : (await tx.run(insertSql(table, src), [ws])).rowsChanged;
        if (table === 'persons') await recordTraitDefinitions(tx, ws, src);
        progress.table?.(table, inserted, performance.now() - t0);
      }
      if (relation('visitors') !== null || relation('events') !== null) await tx.run(markAnonymousEvents('$1'), [ws]);
    } finally {
      // After a failed statement DuckDB takes nothing but ROLLBACK: the settings then stay, harmless.
      if (progress.events) await tx.run('RESET enable_progress_bar; RESET enable_progress_bar_print').catch(() => undefined);
    }
  });
  await store.typed.fill(ws);
}

/**
 * Imports `<dir>/<table>.parquet` for each table file present, in one transaction. The paths are
 * bound: each is set as a session variable by a parameter and read with getvariable().
 */
export async function importParquetDir(store: Store, ws: string, dir: string, progress?: ImportProgress): Promise<void> {
  const files = new Map(DATASET_TABLES.map((table) => [table, join(dir, `${table}.parquet`)] as const).filter(([, file]) => existsSync(file)));
  await importFrom(store, ws, (table) => (files.has(table) ? `read_parquet(getvariable('import_${table}'))` : null), async (tx) => {
    for (const [table, file] of files) await tx.run(`SET VARIABLE import_${table} = $1`, [file]);
  }, progress);
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
  await importFrom(store, ws, (table) => (present.includes(table) ? `stage_${table}` : null), async (tx) => {
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
