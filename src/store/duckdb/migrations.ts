// Schema migrations, applied in order once each. Every table carries workspace_id.
// Persons and visitors have integer keys (positive) so the compiler can form one integer profile
// per row: the person's key, or minus the key of an anonymous visitor (criteria/sql.ts).

import { personSearch } from './search.js';

/**
 * Marks the visitors of workspace `ws` (an expression), or of every workspace, that have events
 * stored without a person (criteria/print/duckdb.ts reads only their links): the migration's and
 * the import's statement.
 */
export const markAnonymousEvents = (ws: string | null): string => {
  const inWorkspace = ws === null ? 'TRUE' : `workspace_id = ${ws}`;
  return `UPDATE visitors SET anonymous_events = visitor_key IN (
    SELECT visitor_key FROM events WHERE ${inWorkspace} AND person_key IS NULL AND visitor_key IS NOT NULL)
  WHERE ${inWorkspace}`;
};

/** Migrations run after a CHECKPOINT: DuckDB indexes no table with updates since the last one. */
export const CHECKPOINT_BEFORE: ReadonlySet<number> = new Set([17, 26]);

export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE workspaces (
    workspace_id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    stripe_webhook_secret VARCHAR,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
  );
  CREATE TABLE api_keys (
    key_hash VARCHAR PRIMARY KEY,
    workspace_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
  );
  CREATE SEQUENCE person_keys START 1;
  CREATE SEQUENCE visitor_keys START 1;
  CREATE TABLE persons (
    workspace_id VARCHAR NOT NULL,
    person_key BIGINT NOT NULL,
    person_id VARCHAR NOT NULL,
    external_id VARCHAR,
    email VARCHAR,
    name VARCHAR,
    traits JSON,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
  );
  CREATE TABLE visitors (
    workspace_id VARCHAR NOT NULL,
    visitor_key BIGINT NOT NULL,
    visitor_id VARCHAR NOT NULL,
    person_key BIGINT,
    first_seen_at TIMESTAMP NOT NULL,
    linked_at TIMESTAMP
  );
  CREATE TABLE events (
    workspace_id VARCHAR NOT NULL,
    event_id VARCHAR NOT NULL,
    message_id VARCHAR,
    event_name VARCHAR NOT NULL,
    ts TIMESTAMP NOT NULL,
    person_key BIGINT,
    visitor_key BIGINT,
    properties JSON NOT NULL,
    received_at TIMESTAMP NOT NULL
  );
  CREATE TABLE event_properties (
    workspace_id VARCHAR NOT NULL,
    event_name VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    PRIMARY KEY (workspace_id, event_name, path)
  );
  CREATE TABLE pageviews (
    workspace_id VARCHAR NOT NULL,
    pageview_id VARCHAR NOT NULL,
    visitor_key BIGINT NOT NULL,
    ts TIMESTAMP NOT NULL,
    url VARCHAR NOT NULL,
    referrer VARCHAR,
    title VARCHAR,
    host VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    referrer_host VARCHAR,
    source VARCHAR,
    medium VARCHAR,
    campaign VARCHAR,
    channel VARCHAR NOT NULL,
    channel_category VARCHAR NOT NULL
  );
  CREATE TABLE payment_customers (
    workspace_id VARCHAR NOT NULL,
    customer_id VARCHAR NOT NULL,
    email VARCHAR,
    person_key BIGINT,
    visitor_key BIGINT,
    tr_user_id VARCHAR,
    tr_visitor_id VARCHAR,
    link_state VARCHAR NOT NULL,
    updated_at TIMESTAMP NOT NULL
  );
  CREATE TABLE subscriptions (
    workspace_id VARCHAR NOT NULL,
    subscription_id VARCHAR NOT NULL,
    customer_id VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    price_id VARCHAR,
    product_id VARCHAR,
    "interval" VARCHAR,
    amount BIGINT,
    currency VARCHAR,
    cancel_at_period_end BOOLEAN NOT NULL DEFAULT false,
    created_at TIMESTAMP NOT NULL
  );
  CREATE TABLE invoices (
    workspace_id VARCHAR NOT NULL,
    invoice_id VARCHAR NOT NULL,
    customer_id VARCHAR NOT NULL,
    subscription_id VARCHAR,
    status VARCHAR NOT NULL,
    amount_due BIGINT NOT NULL,
    amount_paid BIGINT NOT NULL,
    currency VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
  );
  CREATE TABLE payment_events (
    workspace_id VARCHAR NOT NULL,
    customer_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    ts TIMESTAMP NOT NULL,
    object_id VARCHAR NOT NULL
  );
  `,
  // Ingest: point lookups by identifier, and message ids seen (dedupe without indexing events).
  `
  CREATE INDEX persons_by_external_id ON persons (workspace_id, external_id);
  CREATE INDEX persons_by_email ON persons (workspace_id, email);
  CREATE INDEX persons_by_key ON persons (person_key);
  CREATE INDEX visitors_by_id ON visitors (workspace_id, visitor_id);
  CREATE TABLE event_messages (
    workspace_id VARCHAR NOT NULL,
    message_id VARCHAR NOT NULL,
    PRIMARY KEY (workspace_id, message_id)
  );
  `,
  // Payments: notifications processed once; per-field times so the newest metadata wins whatever
  // the arrival order; the processor's `created` on state rows so an older update never overwrites.
  `
  CREATE TABLE processed_notifications (
    workspace_id VARCHAR NOT NULL,
    notification_id VARCHAR NOT NULL,
    processed_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (workspace_id, notification_id)
  );
  CREATE TABLE payment_objects (
    workspace_id VARCHAR NOT NULL,
    object_id VARCHAR NOT NULL,
    customer_id VARCHAR NOT NULL
  );
  ALTER TABLE payment_customers ADD COLUMN tr_user_id_created TIMESTAMP;
  ALTER TABLE payment_customers ADD COLUMN tr_visitor_id_created TIMESTAMP;
  ALTER TABLE subscriptions ADD COLUMN source_created TIMESTAMP;
  ALTER TABLE invoices ADD COLUMN source_created TIMESTAMP;
  CREATE INDEX payment_customers_by_id ON payment_customers (workspace_id, customer_id);
  CREATE INDEX payment_objects_by_id ON payment_objects (workspace_id, object_id);
  `,
  // Audiences: saved criteria, membership snapshots (profiles; only the last two kept), the diff of
  // each snapshot to the one before, and deliveries of diffs to destinations with every attempt.
  `
  CREATE SEQUENCE audience_snapshot_ids START 1;
  CREATE SEQUENCE audience_delivery_ids START 1;
  CREATE TABLE audiences (
    workspace_id VARCHAR NOT NULL,
    audience_id VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    criteria JSON NOT NULL,
    is_time_windowed BOOLEAN NOT NULL,
    refresh_every VARCHAR NOT NULL,
    refresh_every_ms BIGINT NOT NULL,
    destinations JSON NOT NULL,
    status VARCHAR NOT NULL,
    snapshot_id BIGINT,
    member_count BIGINT,
    last_refreshed_at TIMESTAMP,
    next_refresh_at TIMESTAMP NOT NULL,
    last_error VARCHAR,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
  );
  CREATE TABLE audience_snapshots (
    workspace_id VARCHAR NOT NULL,
    audience_id VARCHAR NOT NULL,
    snapshot_id BIGINT NOT NULL,
    previous_snapshot_id BIGINT,
    taken_at TIMESTAMP NOT NULL,
    member_count BIGINT NOT NULL,
    added_count BIGINT NOT NULL,
    removed_count BIGINT NOT NULL
  );
  CREATE TABLE audience_members (
    workspace_id VARCHAR NOT NULL,
    snapshot_id BIGINT NOT NULL,
    profile BIGINT NOT NULL
  );
  CREATE TABLE audience_diffs (
    workspace_id VARCHAR NOT NULL,
    audience_id VARCHAR NOT NULL,
    snapshot_id BIGINT NOT NULL,
    change VARCHAR NOT NULL,
    profile BIGINT NOT NULL
  );
  CREATE TABLE audience_deliveries (
    workspace_id VARCHAR NOT NULL,
    delivery_id BIGINT NOT NULL,
    audience_id VARCHAR NOT NULL,
    destination_id VARCHAR NOT NULL,
    snapshot_id BIGINT NOT NULL,
    status VARCHAR NOT NULL,
    next_page INTEGER NOT NULL DEFAULT 0,
    skipped BIGINT NOT NULL DEFAULT 0,
    last_error VARCHAR,
    created_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP
  );
  CREATE TABLE audience_delivery_attempts (
    workspace_id VARCHAR NOT NULL,
    delivery_id BIGINT NOT NULL,
    page INTEGER NOT NULL,
    request VARCHAR NOT NULL,
    attempt INTEGER NOT NULL,
    ok BOOLEAN NOT NULL,
    http_status INTEGER,
    error VARCHAR,
    attempted_at TIMESTAMP NOT NULL
  );
  `,
  // Payments: the payer's email from two sources, each with the time of its notification so an
  // older one never overwrites a newer: the Customer object's (kept current by the processor) and
  // the copies on payment objects (a fallback). `email` stays the one in effect.
  `
  ALTER TABLE payment_customers ADD COLUMN customer_email VARCHAR;
  ALTER TABLE payment_customers ADD COLUMN customer_email_created TIMESTAMP;
  ALTER TABLE payment_customers ADD COLUMN payment_email VARCHAR;
  ALTER TABLE payment_customers ADD COLUMN payment_email_created TIMESTAMP;
  `,
  // Deliveries converge: what each destination has acknowledged is a snapshot (its base, kept
  // while referenced) plus the profiles acknowledged differently since (changes). A delivery sends
  // its target snapshot against that: the snapshot's own diff when the destination had acknowledged
  // the previous snapshot, else a work list of its own (items); both numbered by `seq` in page order
  // (change, profile), pages of page_size rows. Existing destinations start at their audience's
  // snapshot, minus the changes their pending deliveries have not sent yet: per profile the first
  // unsent change says what the receiver has (pages already acknowledged, webhook 1 000 rows and ad
  // platforms 10 000 each, were sent).
  `
  CREATE TABLE audience_destinations (
    workspace_id VARCHAR NOT NULL,
    audience_id VARCHAR NOT NULL,
    destination_id VARCHAR NOT NULL,
    acked_snapshot_id BIGINT NOT NULL
  );
  CREATE TABLE audience_destination_changes (
    workspace_id VARCHAR NOT NULL,
    audience_id VARCHAR NOT NULL,
    destination_id VARCHAR NOT NULL,
    change VARCHAR NOT NULL,
    profile BIGINT NOT NULL
  );
  CREATE TABLE audience_delivery_items (
    workspace_id VARCHAR NOT NULL,
    delivery_id BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    change VARCHAR NOT NULL,
    profile BIGINT NOT NULL
  );
  ALTER TABLE audience_deliveries ADD COLUMN base_snapshot_id BIGINT;
  ALTER TABLE audience_deliveries ADD COLUMN sends_diff BOOLEAN;
  ALTER TABLE audience_deliveries ADD COLUMN page_size INTEGER;
  ALTER TABLE audience_deliveries ADD COLUMN page_count INTEGER;
  ALTER TABLE audience_deliveries ADD COLUMN added_count BIGINT;
  ALTER TABLE audience_deliveries ADD COLUMN removed_count BIGINT;
  ALTER TABLE audience_diffs ADD COLUMN seq BIGINT;
  CREATE TEMPORARY TABLE numbered_diffs AS
    SELECT workspace_id, audience_id, snapshot_id, change, profile,
      row_number() OVER (PARTITION BY workspace_id, audience_id, snapshot_id ORDER BY change, profile) - 1 AS seq
    FROM audience_diffs;
  DELETE FROM audience_diffs;
  INSERT INTO audience_diffs (workspace_id, audience_id, snapshot_id, change, profile, seq) SELECT * FROM numbered_diffs;
  DROP TABLE numbered_diffs;
  CREATE TEMPORARY TABLE listed_destinations AS
    SELECT a.workspace_id, a.audience_id, a.snapshot_id, d.id AS destination_id,
      CASE WHEN d.type = 'webhook' THEN 1000 ELSE 10000 END AS page_size
    FROM audiences a, unnest(from_json(a.destinations, '[{"id":"VARCHAR","type":"VARCHAR"}]')) AS t(d)
    WHERE a.snapshot_id IS NOT NULL;
  INSERT INTO audience_destinations SELECT workspace_id, audience_id, destination_id, snapshot_id FROM listed_destinations;
  INSERT INTO audience_destination_changes
  SELECT u.workspace_id, u.audience_id, u.destination_id, CASE WHEN u.change = 'removed' THEN 'added' ELSE 'removed' END, u.profile
  FROM (
    SELECT d.workspace_id, d.audience_id, d.destination_id, f.change, f.profile,
      row_number() OVER (PARTITION BY d.workspace_id, d.audience_id, d.destination_id, f.profile ORDER BY d.snapshot_id) AS k
    FROM audience_deliveries d
    JOIN listed_destinations l ON l.workspace_id = d.workspace_id AND l.audience_id = d.audience_id AND l.destination_id = d.destination_id
    JOIN audience_diffs f ON f.workspace_id = d.workspace_id AND f.audience_id = d.audience_id AND f.snapshot_id = d.snapshot_id
    WHERE d.status = 'pending' AND f.seq >= d.next_page * l.page_size
  ) u
  JOIN listed_destinations l ON l.workspace_id = u.workspace_id AND l.audience_id = u.audience_id AND l.destination_id = u.destination_id
  WHERE u.k = 1 AND (u.change = 'removed') <> EXISTS (
    SELECT 1 FROM audience_members m WHERE m.workspace_id = u.workspace_id AND m.snapshot_id = l.snapshot_id AND m.profile = u.profile);
  UPDATE audience_deliveries SET next_page = 0 WHERE status = 'pending';
  DROP TABLE listed_destinations;
  `,
  // Payments: the amounts the revenue report sums. A paid invoice's time; lifecycle events with
  // their amount (first paid invoice, refund); one row per refund (re_…), its payer unknown until
  // its charge or payment intent is seen; one row per payment, keyed by its payment intent (else
  // its session or charge), with the invoice it paid when one names it (links can come first).
  // A one-time payment is one not paying an invoice that is stored (that invoice is summed instead).
  `
  ALTER TABLE invoices ADD COLUMN paid_at TIMESTAMP;
  ALTER TABLE payment_events ADD COLUMN amount BIGINT;
  ALTER TABLE payment_events ADD COLUMN currency VARCHAR;
  CREATE TABLE refunds (
    workspace_id VARCHAR NOT NULL,
    refund_id VARCHAR NOT NULL,
    customer_id VARCHAR,
    charge_id VARCHAR,
    payment_intent_id VARCHAR,
    amount BIGINT,
    currency VARCHAR,
    status VARCHAR,
    created_at TIMESTAMP NOT NULL,
    source_created TIMESTAMP NOT NULL
  );
  CREATE INDEX refunds_by_id ON refunds (workspace_id, refund_id);
  CREATE TABLE payments (
    workspace_id VARCHAR NOT NULL,
    payment_id VARCHAR NOT NULL,
    customer_id VARCHAR,
    amount BIGINT,
    currency VARCHAR,
    paid_at TIMESTAMP,
    source VARCHAR,
    invoice_id VARCHAR
  );
  CREATE INDEX payments_by_id ON payments (workspace_id, payment_id);
  CREATE VIEW one_time_payments AS
    SELECT p.workspace_id, p.payment_id, p.customer_id, p.amount, p.currency, p.paid_at
    FROM payments p
    WHERE p.amount IS NOT NULL AND p.customer_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM invoices i WHERE i.workspace_id = p.workspace_id AND i.invoice_id = p.invoice_id);
  `,
  // Workspaces: which of the processor's modes counts (`live` or `test`); the other is ignored.
  `
  ALTER TABLE workspaces ADD COLUMN payments_mode VARCHAR DEFAULT 'live';
  `,
  // ANALYTICS_STORE=clickhouse: the analytical rows of each committed unit of work (NDJSON per
  // table), kept until ClickHouse acknowledges them, so a failure or a crash between the control
  // commit and the insert is replayed; the token makes a replayed insert one ClickHouse stores once.
  `
  CREATE TABLE analytics_outbox (
    token VARCHAR NOT NULL,
    table_name VARCHAR NOT NULL,
    body VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
  );
  `,
  // Leases of work done by one process at a time (store/control/leases.ts).
  `
  CREATE TABLE leases (
    name VARCHAR PRIMARY KEY,
    holder VARCHAR NOT NULL,
    expires_at TIMESTAMP NOT NULL
  );
  `,
  // Trait definitions: every trait path seen on a workspace's persons (`a`, `a.b`; arrays are
  // leaves), the person leaf's whitelist; filled from the traits stored before it existed.
  `
  CREATE TABLE trait_definitions (
    workspace_id VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    PRIMARY KEY (workspace_id, path)
  );
  INSERT INTO trait_definitions (workspace_id, path)
  WITH RECURSIVE nodes AS (
    SELECT p.workspace_id, p.person_key, j.id, j.parent, j.key, j.type
    FROM persons p, json_tree(p.traits) j WHERE json_type(p.traits) = 'OBJECT'
  ), paths AS (
    SELECT workspace_id, person_key, id, key AS path, type FROM nodes WHERE parent = 0
    UNION ALL
    SELECT n.workspace_id, n.person_key, n.id, paths.path || '.' || n.key, n.type
    FROM paths JOIN nodes n ON n.workspace_id = paths.workspace_id AND n.person_key = paths.person_key AND n.parent = paths.id
    WHERE paths.type = 'OBJECT'
  )
  SELECT DISTINCT workspace_id, path FROM paths;
  `,
  // People lookup: the persons' search column (store/duckdb/search.ts), filled for those stored.
  `
  ALTER TABLE persons ADD COLUMN search VARCHAR;
  UPDATE persons SET search = ${personSearch('email', 'external_id', 'name')};
  `,
  // Typed payload storage (store/duckdb/typed.ts): slots per event name, path and JSON type; the
  // names with rows stored before it are legacy, their slots filled from the JSON before use.
  `
  CREATE TABLE event_slots (
    workspace_id VARCHAR NOT NULL,
    event_name VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    slot INTEGER NOT NULL,
    ready BOOLEAN NOT NULL,
    PRIMARY KEY (workspace_id, event_name, path, kind)
  );
  CREATE TABLE event_slot_names (
    workspace_id VARCHAR NOT NULL,
    event_name VARCHAR NOT NULL,
    legacy BOOLEAN NOT NULL,
    discovered BOOLEAN NOT NULL,
    PRIMARY KEY (workspace_id, event_name)
  );
  INSERT INTO event_slot_names SELECT DISTINCT workspace_id, event_name, true, false FROM event_properties;
  `,
  // People lookup: the persons' trigrams and their counts, in tables once; no longer filled (the
  // indexes are in memory now: store/duckdb/search.ts) and dropped by a later migration.
  `
  CREATE TABLE person_grams (workspace_id VARCHAR NOT NULL, gram VARCHAR NOT NULL, person_key BIGINT NOT NULL);
  CREATE TABLE person_gram_counts (workspace_id VARCHAR NOT NULL, gram VARCHAR NOT NULL, n BIGINT NOT NULL);
  `,
  // People lookup: the paying customers' trigrams and their counts (as the persons'); and their ids
  // indexed alone, which the lookup reads its candidates by.
  `
  CREATE TABLE customer_grams (workspace_id VARCHAR NOT NULL, gram VARCHAR NOT NULL, customer_id VARCHAR NOT NULL);
  CREATE TABLE customer_gram_counts (workspace_id VARCHAR NOT NULL, gram VARCHAR NOT NULL, n BIGINT NOT NULL);
  CREATE INDEX payment_customers_by_customer_id ON payment_customers (customer_id);
  `,
  // Visitors with events stored without a person (which follow the visitor's link): an event leaf
  // looks up the links of those visitors only (criteria/print/duckdb.ts).
  // DuckDB alters no table an index depends on: the index is dropped, the column added (not NOT
  // NULL: DuckDB adds no constraint, nor sets one in the transaction that added the column; every
  // write gives a value) and filled; the next migration makes the index again, after a checkpoint
  // (CHECKPOINT_BEFORE).
  `
  DROP INDEX visitors_by_id;
  ALTER TABLE visitors ADD COLUMN anonymous_events BOOLEAN DEFAULT false;
  ${markAnonymousEvents(null)};
  `,
  `
  CREATE INDEX visitors_by_id ON visitors (workspace_id, visitor_id);
  `,
  // People lookup: the trigram tables go; their indexes are held in memory (store/duckdb/search.ts).
  `
  DROP TABLE person_grams;
  DROP TABLE person_gram_counts;
  DROP TABLE customer_grams;
  DROP TABLE customer_gram_counts;
  `,
  // Every event name received (event_properties holds only those with properties): the compile
  // warns of a leaf naming none of them (unknown_event).
  `
  CREATE TABLE event_names (workspace_id VARCHAR NOT NULL, event_name VARCHAR NOT NULL, PRIMARY KEY (workspace_id, event_name));
  INSERT INTO event_names SELECT DISTINCT workspace_id, event_name FROM events;
  `,
  // Privacy (privacy/): requests with the SHA-256 of their identifiers (the audit trail), the raw
  // identifiers and the keys they resolved to only while a request is under way, each workspace's
  // suppression list as hashes, its retention, and the public ids of erased audience members until
  // their removal is delivered (PostgreSQL: migrations/009_privacy.sql).
  `
  CREATE TABLE privacy_requests (
    workspace_id VARCHAR NOT NULL,
    request_id VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    phase VARCHAR NOT NULL,
    identifier_hashes JSON NOT NULL,
    persons BIGINT,
    visitors BIGINT,
    events BIGINT,
    pageviews BIGINT,
    customers BIGINT,
    error VARCHAR,
    created_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    PRIMARY KEY (workspace_id, request_id)
  );
  CREATE TABLE privacy_request_items (
    workspace_id VARCHAR NOT NULL,
    request_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    value VARCHAR NOT NULL
  );
  CREATE TABLE suppressions (
    workspace_id VARCHAR NOT NULL,
    hash VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (workspace_id, hash)
  );
  CREATE TABLE privacy_departures (
    workspace_id VARCHAR NOT NULL,
    profile BIGINT NOT NULL,
    person_id VARCHAR,
    visitor_id VARCHAR,
    external_id VARCHAR,
    email VARCHAR,
    created_at TIMESTAMP NOT NULL
  );
  ALTER TABLE workspaces ADD COLUMN retention_days INTEGER;
`,
  // Person merges (people/merge.ts): the record of every merge, and the identifiers of merged-away
  // persons, which resolve to the person they were merged into (PostgreSQL: migrations/011_person_merges.sql).
  `
  CREATE TABLE person_merges (
    workspace_id VARCHAR NOT NULL,
    merge_id VARCHAR NOT NULL,
    from_person_id VARCHAR NOT NULL,
    into_person_id VARCHAR NOT NULL,
    into_person_key BIGINT NOT NULL,
    current_person_key BIGINT NOT NULL,
    forced BOOLEAN NOT NULL,
    visitors BIGINT NOT NULL,
    customers BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (workspace_id, merge_id)
  );
  CREATE TABLE person_aliases (
    workspace_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    person_key BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, kind, value)
  );
  `,
  `
  CREATE TABLE audience_consent_withheld (
    workspace_id VARCHAR NOT NULL,
    audience_id VARCHAR NOT NULL,
    destination_id VARCHAR NOT NULL,
    profile BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, audience_id, destination_id, profile)
  );
  CREATE TABLE visitor_salts (
    day VARCHAR PRIMARY KEY,
    salt VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
  );
`,
  // Issue 38: where a Stripe backfill stopped, per object type; the exchange rates reports convert at.
  `CREATE TABLE stripe_backfill_cursors (
    workspace_id VARCHAR NOT NULL,
    object_type VARCHAR NOT NULL,
    since VARCHAR,
    last_id VARCHAR,
    done BOOLEAN NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (workspace_id, object_type)
  );
  CREATE TABLE exchange_rates (
    workspace_id VARCHAR NOT NULL,
    currency VARCHAR NOT NULL,
    day DATE NOT NULL,
    per_eur DOUBLE NOT NULL,
    PRIMARY KEY (workspace_id, currency, day)
  );
`,
  // A deleted payer's attribution, frozen (docs/privacy.md): the profile its customers were
  // attributed through, and that profile's touches (page views without visitor, url, referrer or
  // title) up to its latest payment; the revenue report reads them for profiles no longer stored.
  `
  CREATE TABLE frozen_payers (
    workspace_id VARCHAR NOT NULL,
    customer_id VARCHAR NOT NULL,
    profile BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, customer_id)
  );
  CREATE TABLE frozen_touches (
    workspace_id VARCHAR NOT NULL,
    profile BIGINT NOT NULL,
    pageview_id VARCHAR NOT NULL,
    ts TIMESTAMP NOT NULL,
    path VARCHAR NOT NULL,
    referrer_host VARCHAR,
    medium VARCHAR,
    campaign VARCHAR,
    channel VARCHAR NOT NULL,
    channel_category VARCHAR NOT NULL
  );
`,
  // The passes that took up each privacy request: one that keeps failing ends `failed` (privacy/worker.ts).
  'ALTER TABLE privacy_requests ADD COLUMN attempts INTEGER DEFAULT 0;',
  // People lookup: a page's persons' visitors and customers, and matched customers' visitors, are
  // read by lists of keys (store/control/lookup.ts), which DuckDB answers from an index only.
  `
  CREATE INDEX visitors_by_key ON visitors (visitor_key);
  CREATE INDEX visitors_by_person ON visitors (person_key);
  CREATE INDEX payment_customers_by_person ON payment_customers (person_key);
  CREATE INDEX payment_customers_by_visitor ON payment_customers (visitor_key);
  `,
  // Audience splits (decisions §14): the splits as JSON, and each audience's own salt that places
  // its members. Audiences saved before get a salt of their own.
  `
  ALTER TABLE audiences ADD COLUMN splits JSON DEFAULT '[]';
  ALTER TABLE audiences ADD COLUMN split_salt VARCHAR;
  UPDATE audiences SET split_salt = md5(CAST(gen_random_uuid() AS VARCHAR) || audience_id);
`,
  // Person merges resumable (people/merge.ts): `pending` until every step has run; those recorded
  // before were complete (PostgreSQL: migrations/015_merge_state.sql).
  `
  ALTER TABLE person_merges ADD COLUMN from_person_key BIGINT;
  ALTER TABLE person_merges ADD COLUMN state VARCHAR DEFAULT 'done';
  `,
  // The identifier indexes on two columns go: DuckDB's plans for the lookups by workspace and
  // email, external id or visitor id scan the table with or without them (EXPLAIN ANALYZE), so they
  // only cost every new person and visitor their inserts at commit (bench/RESULTS.md, "People lookup").
  `
  DROP INDEX persons_by_external_id;
  DROP INDEX persons_by_email;
  DROP INDEX visitors_by_id;
  `,
];
