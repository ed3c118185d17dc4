// The ClickHouse schema of the analytical tables, as DDL strings (pure: running them is the
// store's job). Designed for the criteria queries (criteria/print/clickhouse.ts), not copied from
// DuckDB: each table is ordered by what a criteria leaf filters on, one workspace at a time.
//
// A profile is an integer as in DuckDB (store/duckdb/migrations.ts): a person's `person_key`, or minus the
// `visitor_key` of an anonymous visitor. Keys are positive, so key columns are not Nullable: 0
// means "none" (argMax skips NULL values, so a Nullable key could never be set back to none).
//
// Tables that hold current state (visitor links, persons, customers, subscriptions, invoices,
// payment events) are ReplacingMergeTree(version): every change is a new row with a higher
// `version` (strictly increasing per key), and readers take the row of the highest version (FINAL), so
// answers are exact whatever the merge state. Payment events can be withdrawn (a refund that
// fails): a row with `deleted = 1` and a higher version.

import { literal, quote, VISITOR_LINKS } from '../../criteria/print/clickhouse-text.js';

export { VISITOR_LINKS };

export interface ClickHouseSchemaOptions {
  database: string;
  /** The cluster name of `ON CLUSTER`; unset: a single node. */
  cluster?: string;
  /** How old a link must be to be loaded into the links dictionary (VISITOR_LINKS_LAG_S unless given). */
  linkLagSeconds?: number;
  /**
   * The user the links dictionary reads the visitors table as (a server's dictionary source logs in
   * like a client; ClickHouse hides the password in SHOW CREATE). Unset: `default`.
   */
  dictionarySource?: { username?: string; password?: string };
}

/**
 * The visitor → person links dictionary (criteria/print/clickhouse.ts reads it): every current link
 * whose version is older than this lag when the dictionary loads, plus, under key 0, that cut
 * (versions are ns of the writer's clock). Links newer than the cut are read from the table beside
 * it, so the lag only has to cover the time between a link's version and its row landing (a unit's
 * commit and insert; the outbox sweeper reloads the dictionary after a late insert).
 */
export const VISITOR_LINKS_LAG_S = 600;

const TS = "DateTime64(6, 'UTC')";

interface TableSpec {
  name: string;
  columns: string;
  /** The single-node engine; the cluster variant is its Replicated form. */
  engine: 'MergeTree' | 'ReplacingMergeTree' | 'ReplacingMergeTree(version)' | 'ReplacingMergeTree(version, deleted)';
  orderBy: string;
  partitionBy?: string;
  /** Batched appends: a retried batch with the same insert_deduplication_token is stored once. */
  appendOnly?: boolean;
  /** Data-skipping indexes, `name expression TYPE type GRANULARITY n`. */
  indexes?: string[];
  /** Columns added after the table was first released, `name type …`: created with it, added to an older one. */
  added?: string[];
}

const TABLES: readonly TableSpec[] = [
  {
    name: 'events',
    columns: `
    workspace_id String,
    event_id String,
    message_id Nullable(String),
    event_name LowCardinality(String),
    ts ${TS},
    person_key Int64,
    visitor_key Int64,
    properties JSON,
    property_objects Array(String),
    received_at ${TS}`,
    engine: 'MergeTree',
    orderBy: '(workspace_id, event_name, ts)',
    partitionBy: 'toYYYYMM(ts)',
    appendOnly: true,
  },
  {
    name: 'pageviews',
    columns: `
    workspace_id String,
    pageview_id String,
    visitor_key Int64,
    ts ${TS},
    url String,
    referrer Nullable(String),
    title Nullable(String),
    host String,
    path String,
    referrer_host Nullable(String),
    source Nullable(String),
    medium Nullable(String),
    campaign Nullable(String),
    channel LowCardinality(String),
    channel_category LowCardinality(String)`,
    engine: 'MergeTree',
    orderBy: '(workspace_id, ts)',
    partitionBy: 'toYYYYMM(ts)',
    appendOnly: true,
  },
  {
    // One row per link change of a visitor (PostHog's person_distinct_id2): person_key 0 = anonymous.
    name: 'visitors',
    columns: `
    workspace_id String,
    visitor_key Int64,
    visitor_id String,
    person_key Int64,
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, visitor_key)',
    // The links past the dictionary's cut are read by version: only the newest parts' granules.
    indexes: ['version_minmax version TYPE minmax GRANULARITY 1'],
  },
  {
    // The identity fields a members list shows and the traits person leaves read (the persons
    // themselves stay in the control store). Traits are the merged object's JSON text, read with
    // JSONType before any JSONExtract*, which converts ("12" reads as 12, 12 as "12"); a String
    // rather than the JSON type, which drops null and empty-object values and infers dates.
    name: 'persons',
    columns: `
    workspace_id String,
    person_key Int64,
    person_id String,
    external_id Nullable(String),
    email Nullable(String),
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, person_key)',
    added: ["traits String DEFAULT '{}'"],
  },
  {
    // Whom a payment customer belongs to: its person, else its visitor (0 = none).
    name: 'payment_customers',
    columns: `
    workspace_id String,
    customer_id String,
    person_key Int64,
    visitor_key Int64,
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, customer_id)',
  },
  {
    name: 'subscriptions',
    columns: `
    workspace_id String,
    subscription_id String,
    customer_id String,
    status LowCardinality(String),
    price_id Nullable(String),
    product_id Nullable(String),
    \`interval\` Nullable(String),
    amount Nullable(Int64),
    currency Nullable(String),
    cancel_at_period_end Bool,
    created_at ${TS},
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, subscription_id)',
  },
  {
    name: 'invoices',
    columns: `
    workspace_id String,
    invoice_id String,
    customer_id String,
    subscription_id Nullable(String),
    status LowCardinality(String),
    amount_due Int64,
    amount_paid Int64,
    currency String,
    created_at ${TS},
    paid_at Nullable(${TS}),
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, invoice_id)',
  },
  {
    name: 'payment_events',
    columns: `
    workspace_id String,
    kind LowCardinality(String),
    customer_id String,
    object_id String,
    ts ${TS},
    amount Nullable(Int64),
    currency Nullable(String),
    version UInt64,
    deleted UInt8`,
    engine: 'ReplacingMergeTree(version, deleted)',
    orderBy: '(workspace_id, kind, customer_id, object_id)',
  },
  {
    // The control store's payments (a payment intent, else its session or charge), copied by each
    // unit that changes one: the revenue report's one-time payments are those whose invoice is not
    // a stored invoice. Payments recorded before this table existed are not in it.
    name: 'payments',
    columns: `
    workspace_id String,
    payment_id String,
    customer_id Nullable(String),
    amount Nullable(Int64),
    currency Nullable(String),
    paid_at Nullable(${TS}),
    invoice_id Nullable(String),
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, payment_id)',
  },
  {
    // The control store's exchange rates (per EUR, per day and currency), copied by each load.
    name: 'exchange_rates',
    columns: `
    workspace_id String,
    currency String,
    day Date,
    per_eur Float64,
    version UInt64`,
    engine: 'ReplacingMergeTree(version)',
    orderBy: '(workspace_id, currency, day)',
  },
  {
    // Membership snapshots: the profiles of each refresh.
    name: 'audience_members',
    columns: `
    workspace_id String,
    snapshot_id UInt64,
    profile Int64`,
    engine: 'MergeTree',
    orderBy: '(workspace_id, snapshot_id, profile)',
  },
  {
    // Each snapshot's diff to the one before, numbered in page order (change, profile).
    name: 'audience_diffs',
    columns: `
    workspace_id String,
    audience_id String,
    snapshot_id UInt64,
    seq UInt64,
    change LowCardinality(String),
    profile Int64`,
    engine: 'MergeTree',
    orderBy: '(workspace_id, audience_id, snapshot_id, seq)',
  },
  {
    // A delivery's own work list (its snapshot against what the destination acknowledged), numbered
    // in page order. Each build of the list has a higher `build`; the newest is the one sent, so a
    // build interrupted before the delivery recorded its start is harmless.
    name: 'audience_delivery_items',
    columns: `
    workspace_id String,
    audience_id String,
    delivery_id UInt64,
    build UInt64,
    seq UInt64,
    change LowCardinality(String),
    profile Int64`,
    engine: 'MergeTree',
    orderBy: '(workspace_id, delivery_id, build, seq)',
  },
  {
    // The destination's acknowledged changes (control store) copied for one build of a work list.
    name: 'audience_delivery_acked',
    columns: `
    workspace_id String,
    audience_id String,
    delivery_id UInt64,
    build UInt64,
    change LowCardinality(String),
    profile Int64`,
    engine: 'MergeTree',
    orderBy: '(workspace_id, delivery_id, build, profile)',
  },
  {
    // A deleted payer's attribution, frozen (docs/privacy.md): the profile its customer was
    // attributed through. Written once per customer (a retried freeze writes the same row).
    name: 'frozen_payers',
    columns: `
    workspace_id String,
    customer_id String,
    profile Int64`,
    engine: 'ReplacingMergeTree',
    orderBy: '(workspace_id, customer_id)',
  },
  {
    // That profile's touches (page views without visitor, url, referrer or title) up to its latest payment.
    name: 'frozen_touches',
    columns: `
    workspace_id String,
    profile Int64,
    pageview_id String,
    ts ${TS},
    path String,
    referrer_host Nullable(String),
    medium Nullable(String),
    campaign Nullable(String),
    channel LowCardinality(String),
    channel_category LowCardinality(String)`,
    engine: 'ReplacingMergeTree',
    orderBy: '(workspace_id, profile, pageview_id)',
  },
];

/** The analytical tables' names, as the criteria queries read them (Distributed ones on a cluster). */
export const CLICKHOUSE_TABLES: readonly string[] = TABLES.map((t) => t.name);

/** `ReplacingMergeTree(version)` → `ReplicatedReplacingMergeTree('<zk path>', '{replica}', version)`. */
function replicated(engine: TableSpec['engine']): string {
  const [, family, args] = /^(\w+)(?:\((.*)\))?$/.exec(engine)!;
  const path = "'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'";
  return `Replicated${family}(${args ? `${path}, ${args}` : path})`;
}

function createTable(t: TableSpec, name: string, engine: string, onCluster: string, settings: string[]): string {
  return `CREATE TABLE IF NOT EXISTS ${name}${onCluster}
(${[t.columns, ...(t.added ?? []).map((c) => `\n    ${c}`)].join(',')}
)
ENGINE = ${engine}
${t.partitionBy ? `PARTITION BY ${t.partitionBy}\n` : ''}ORDER BY ${t.orderBy}${settings.length > 0 ? `\nSETTINGS ${settings.join(', ')}` : ''}`;
}

/**
 * The statements that create the analytical schema, in order; each is idempotent (IF NOT EXISTS).
 * Single node: MergeTree-family tables. Cluster: per table a ReplicatedMergeTree-family `<name>_local`
 * on every node and a Distributed `<name>` over them sharded by cityHash64(workspace_id), so one
 * workspace lives on one shard and a criteria query (always one workspace) never crosses shards.
 */
export function clickhouseSchema(options: ClickHouseSchemaOptions): string[] {
  const db = quote(options.database);
  const onCluster = options.cluster === undefined ? '' : ` ON CLUSTER ${quote(options.cluster)}`;
  const statements = [`CREATE DATABASE IF NOT EXISTS ${db}${onCluster}`];
  for (const t of TABLES) {
    const stored = options.cluster === undefined ? t.name : `${t.name}_local`;
    if (options.cluster === undefined) {
      // Non-replicated MergeTree deduplicates retried inserts only within this window.
      statements.push(createTable(t, `${db}.${quote(t.name)}`, t.engine, '', t.appendOnly ? ['non_replicated_deduplication_window = 1000'] : []));
    } else {
      statements.push(createTable(t, `${db}.${quote(stored)}`, replicated(t.engine), onCluster, []));
      statements.push(`CREATE TABLE IF NOT EXISTS ${db}.${quote(t.name)}${onCluster} AS ${db}.${quote(stored)}
ENGINE = Distributed(${quote(options.cluster)}, ${db}, ${quote(stored)}, cityHash64(workspace_id))`);
    }
    // Added after the table, so that a schema created before a column or an index gets it (the
    // Distributed table's columns too, on a cluster).
    for (const name of new Set([stored, t.name])) {
      for (const column of t.added ?? []) statements.push(`ALTER TABLE ${db}.${quote(name)}${onCluster} ADD COLUMN IF NOT EXISTS ${column}`);
    }
    for (const index of t.indexes ?? []) statements.push(`ALTER TABLE ${db}.${quote(stored)}${onCluster} ADD INDEX IF NOT EXISTS ${index}`);
  }
  statements.push(visitorLinksDictionary(db, onCluster, options.linkLagSeconds ?? VISITOR_LINKS_LAG_S, options.dictionarySource ?? {}));
  return statements;
}

/**
 * The links dictionary: loaded from the (Distributed, on a cluster) visitors table, so every node
 * holds every link it may be asked for (its size: bench/RESULTS.md); reloaded in the background every one to
 * two minutes, which moves its cut forward.
 */
function visitorLinksDictionary(db: string, onCluster: string, lagSeconds: number, login: { username?: string; password?: string }): string {
  if (!Number.isInteger(lagSeconds) || lagSeconds < 0) throw new Error(`link lag ${lagSeconds} is not a whole number of seconds`);
  const cut = `toUInt64(toUnixTimestamp(now()) - ${lagSeconds}) * 1000000000`;
  const source = `SELECT toUInt64(visitor_key) AS visitor_key, person_key FROM ${db}.visitors FINAL WHERE person_key != 0 AND version <= ${cut}
    UNION ALL SELECT toUInt64(0), toInt64(${cut})`;
  return `CREATE DICTIONARY IF NOT EXISTS ${db}.${VISITOR_LINKS}${onCluster} (visitor_key UInt64, person_key Int64)
PRIMARY KEY visitor_key
SOURCE(CLICKHOUSE(QUERY ${literal(source)}${login.username === undefined ? '' : ` USER ${literal(login.username)}`}${login.password === undefined ? '' : ` PASSWORD ${literal(login.password)}`}))
LAYOUT(HASHED())
LIFETIME(MIN 60 MAX 120)`;
}

/**
 * Settings for every insert into `events`: JSON strings stay strings (ClickHouse would otherwise
 * read "2026-01-01" as a Date), and a key with a dot is one key, not a nested path.
 */
export const EVENT_INSERT_SETTINGS = {
  input_format_try_infer_dates: 0,
  input_format_try_infer_datetimes: 0,
  input_format_json_try_infer_numbers_from_strings: 0,
  json_type_escape_dots_in_keys: 1,
} as const;

/**
 * Settings for criteria queries on a cluster: the leaves' subqueries on Distributed tables run on
 * the shard's local tables (a workspace is on one shard), and only that shard is asked.
 */
export const CLUSTER_QUERY_SETTINGS = {
  distributed_product_mode: 'local',
  optimize_skip_unused_shards: 1,
} as const;

/**
 * The `property_objects` of an event: the dotted paths of its properties whose value is an object.
 * ClickHouse's JSON type keeps only leaf values (an object such as `{}` or `{"a": null}` leaves no
 * trace), and a payload path holding an object is present for `is_set`. Dots inside a key are
 * escaped as `%2E`, like json_type_escape_dots_in_keys does, so they never read as a nested path.
 */
export function propertyObjects(properties: unknown): string[] {
  const paths: string[] = [];
  const walk = (value: unknown, prefix: string) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
    for (const [key, child] of Object.entries(value)) {
      if (typeof child !== 'object' || child === null || Array.isArray(child)) continue;
      const path = `${prefix}${key.replaceAll('.', '%2E')}`;
      paths.push(path);
      walk(child, `${path}.`);
    }
  };
  walk(properties, '');
  return paths;
}
