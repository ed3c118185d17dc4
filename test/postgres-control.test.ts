// The control state in PostgreSQL shared by API nodes: two nodes in this process, each with its
// own pool and its own ClickHouse client, on one PostgreSQL database and one ClickHouse database.
// Find-or-create races are forced (both nodes read, then both insert) and must end with one row;
// concurrent traffic over both nodes must store each user, event and notification once.

import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type IdentityInput, resolveIdentities } from '../src/ingest/identity.js';
import type { ControlTx } from '../src/store/control/store.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { PostgresControl } from '../src/store/postgres/control.js';
import { migratePostgres } from '../src/store/postgres/migrate.js';
import { startTestApp, type TestApp } from './support/app.js';
import { CHDB_INSTALLED, POSTGRES } from './support/engines.js';
import { createDatabase, postgresRunning } from './support/postgres.js';
import { controlRows, storedCount, storedRows } from './support/stored.js';
import { checkoutSession, deliver, invoice, notification } from './support/stripe.js';

/** The migration files applied, one row each in the migrations table. */
// Asking starts the run's test PostgreSQL: this suite is one of those it starts for.
const POSTGRES_RUNNING = await postgresRunning();
const MIGRATION_FILES = readdirSync(new URL('../src/store/postgres/migrations', import.meta.url)).filter((f) => f.endsWith('.sql')).length;

const count = async (t: TestApp, sql: string, params: string[] = []) => Number((await controlRows(t, sql, params))[0]!.n);

/**
 * Holds each node's first insert into persons or visitors until `nodes` nodes have reached theirs:
 * every node has looked the identifier up and found nothing before any of them writes.
 */
function insertGate(nodes: number) {
  let arrived = 0;
  let open!: () => void;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  return (tx: ControlTx): ControlTx => {
    let held = false;
    return {
      dialect: tx.dialect,
      search: tx.search,
      all: (sql, params) => tx.all(sql, params),
      afterCommit: (hook) => tx.afterCommit(hook),
      run: async (sql, params) => {
        if (!held && /^\s*INSERT INTO (persons|visitors)\b/.test(sql)) {
          held = true;
          if (++arrived === nodes) open();
          await opened;
        }
        return tx.run(sql, params);
      },
    };
  };
}

describe.skipIf(!POSTGRES_RUNNING || !CHDB_INSTALLED)('two API nodes on one PostgreSQL', () => {
  let a: TestApp;
  let b: TestApp;
  beforeEach(async () => {
    a = await startTestApp({ engine: POSTGRES });
    b = await startTestApp({ nodeOf: a });
  });
  afterEach(async () => {
    await b.close();
    await a.close();
  });

  /** Resolves `input` on both nodes at once, each insert held until both have looked it up. */
  async function raceBothNodes(input: IdentityInput) {
    const gate = insertGate(2);
    const now = new Date();
    return Promise.all([a, b].map((node) => node.stores.analytics.unit(async (work) => {
      const { resolved } = await resolveIdentities(node.stores.control, { ...work, control: gate(work.control) }, node.ws.workspace_id, [input], now);
      return resolved[0]!;
    })));
  }

  it('two nodes finding-or-creating the same new external_id at once create one person', async () => {
    const [first, second] = await raceBothNodes({ external_id: 'new-user', visitor_id: 'new-visitor', at: new Date() });
    expect(first!.person_id).toMatch(/^per_/);
    expect(second!.person_id).toBe(first!.person_id);
    expect(second!.visitor_key).toBe(first!.visitor_key);
    expect(await count(a, 'SELECT count(*) AS n FROM persons WHERE external_id = $1', ['new-user'])).toBe(1);
    expect(await controlRows(a, `SELECT p.external_id FROM visitors v JOIN persons p ON p.person_key = v.person_key
      WHERE v.visitor_id = $1`, ['new-visitor'])).toEqual([{ external_id: 'new-user' }]);
  });

  it('two nodes finding-or-creating the same new email at once create one person', async () => {
    const [first, second] = await raceBothNodes({ email: 'new@example.com', at: new Date() });
    expect(second!.person_id).toBe(first!.person_id);
    expect(await count(a, 'SELECT count(*) AS n FROM persons WHERE email = $1', ['new@example.com'])).toBe(1);
  });

  it('two nodes seeing the same new visitor at once create one visitor', async () => {
    const [first, second] = await raceBothNodes({ visitor_id: 'anonymous', at: new Date() });
    expect(first!.person_id).toBeNull();
    expect(second!.visitor_key).toBe(first!.visitor_key);
    expect(await count(a, 'SELECT count(*) AS n FROM visitors WHERE visitor_id = $1', ['anonymous'])).toBe(1);
  });

  it('traffic spread over both nodes stores each new user, message id and notification once', async () => {
    const users = Array.from({ length: 12 }, (_, i) => i);
    const signup = (i: number) => ({ batch: [{ event_name: 'signup', external_id: `u${i}`, email: `u${i}@example.com`, visitor_id: `v${i}`, message_id: `m${i}` }] });
    const answers = await Promise.all(users.flatMap((i) => [a, b].map((node) => node.post('/v1/events', signup(i)))));
    for (const res of answers) expect(res.statusCode, res.body).toBe(200);
    const results = answers.map((res) => (res.json().results as { person_id: string | null; duplicate: boolean }[])[0]!);
    for (const i of users) {
      const [onA, onB] = [results[2 * i]!, results[2 * i + 1]!];
      expect([onA.duplicate, onB.duplicate].sort(), `u${i}`).toEqual([false, true]);
    }
    expect(await count(a, 'SELECT count(*) AS n FROM persons')).toBe(users.length);
    expect(await count(a, 'SELECT count(*) AS n FROM visitors')).toBe(users.length);
    expect(await storedCount(a, 'events')).toBe(users.length);

    const notifications = users.slice(0, 6).map((i) => notification('checkout.session.completed', checkoutSession(`cus_${i}`, { tr_user_id: `u${i}` })));
    const receipts = await Promise.all(notifications.flatMap((n) => [a, b].map((node) => deliver(node, n))));
    for (const res of receipts) expect(res.statusCode, res.body).toBe(200);
    const duplicates = receipts.map((res) => (res.json() as { duplicate: boolean }).duplicate);
    expect(duplicates.filter((d) => !d)).toHaveLength(notifications.length);
    expect(await count(a, 'SELECT count(*) AS n FROM processed_notifications')).toBe(notifications.length);
    expect(await controlRows(a, `SELECT c.customer_id, c.link_state, p.external_id FROM payment_customers c
      JOIN persons p ON p.person_key = c.person_key ORDER BY c.customer_id`)).toEqual(
      users.slice(0, 6).map((i) => ({ customer_id: `cus_${i}`, link_state: 'linked', external_id: `u${i}` })));
    expect(await count(a, 'SELECT count(*) AS n FROM persons')).toBe(users.length);
  });

  it('two nodes starting at once with the same bootstrap keys make one default workspace holding them', async () => {
    const keys = { secret_key: 'sk_bootstrap_both', publishable_key: 'pk_bootstrap_both' };
    const [onA, onB] = await Promise.all([a, b].map((node) => new Workspaces(node.stores.control).ensure('default', keys)));
    expect(onB).toEqual(onA);
    expect(await count(a, "SELECT count(*) AS n FROM workspaces WHERE name = 'default'")).toBe(1);
    expect(await new Workspaces(b.stores.control).authenticate('sk_bootstrap_both')).toEqual({ workspaceId: onA!.workspace_id, kind: 'secret' });
  });

  it('two first invoices of one customer paid on two nodes at once keep one first_paid_invoice, the earlier', async () => {
    const customers = Array.from({ length: 6 }, (_, i) => `cus_two_nodes_${i}`);
    const created = Math.floor(Date.now() / 1000) - 3600;
    for (const [i, customerId] of customers.entries()) {
      const res = await deliver(a, notification('checkout.session.completed', checkoutSession(customerId, { tr_user_id: `u_inv_${i}` })));
      expect(res.statusCode, res.body).toBe(200);
    }
    for (const customerId of customers) {
      const [early, late] = [0, 60].map((later) => notification('invoice.paid', invoice(customerId, { id: `in_${customerId}_${later}`, created: created + later, paid_at: created + later })));
      const answers = await Promise.all([deliver(a, late!), deliver(b, early!)]);
      for (const res of answers) expect(res.statusCode, res.body).toBe(200);
    }
    const first = (await storedRows(a, 'payment_events', ['kind', 'customer_id', 'object_id'])).filter((r) => r.kind === 'first_paid_invoice');
    expect(first.map((r) => [r.customer_id, r.object_id]).sort()).toEqual(customers.map((c) => [c, `in_${c}_0`]).sort());
  });

  it('two nodes starting at once on an empty store without bootstrap keys make one default workspace', async () => {
    await a.stores.control.run('DELETE FROM workspaces');
    const created = await Promise.all([a, b, a, b].map((node) => new Workspaces(node.stores.control).createFirst('default')));
    expect(created.filter((ws) => ws !== null)).toHaveLength(1);
    expect(await count(a, 'SELECT count(*) AS n FROM workspaces')).toBe(1);
    expect(await new Workspaces(b.stores.control).createFirst('default')).toBeNull();
  });
});

describe.skipIf(!POSTGRES_RUNNING || !CHDB_INSTALLED)('one node under concurrent units', () => {
  let t: TestApp;
  beforeEach(async () => { t = await startTestApp({ engine: POSTGRES }); });
  afterEach(() => t.close());

  it('serves more concurrent new persons than its pool has connections, each drawing keys mid-transaction', async () => {
    const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => t.post('/v1/persons', { external_id: `c${i}`, visitor_id: `cv${i}` })));
    for (const res of answers) expect(res.statusCode, res.body).toBe(200);
    expect(await count(t, 'SELECT count(*) AS n FROM persons')).toBe(25);
  });
});

describe.skipIf(!POSTGRES_RUNNING)('PostgreSQL migrations', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('apply once: opening a migrated database again, or migrating it again, changes nothing', async () => {
    const db = await createDatabase({ migrated: false });
    try {
      const first = await PostgresControl.open({ url: db.url });
      expect(await first.schemaVersion()).toBe(MIGRATION_FILES);
      await first.close();
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await migratePostgres(client);
      await client.end();
      const again = await PostgresControl.open({ url: db.url });
      expect(await again.schemaVersion()).toBe(MIGRATION_FILES);
      const tables = await again.all("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name");
      expect(tables.map((t) => t.name)).toEqual([
        'analytics_outbox', 'api_keys', 'audience_consent_withheld', 'audience_deliveries', 'audience_delivery_attempts',
        'audience_destination_changes', 'audience_destinations', 'audience_snapshots', 'audiences', 'event_messages',
        'event_names', 'event_properties', 'exchange_rates', 'leases', 'payment_customers', 'payment_objects', 'payments',
        'person_aliases', 'person_merges', 'persons', 'pgmigrations', 'privacy_departures', 'privacy_request_items',
        'privacy_requests', 'processed_notifications', 'refunds', 'stripe_backfill_cursors', 'suppressions', 'trait_definitions',
        'visitor_salts', 'visitors', 'workspaces',
      ]);
      // The people lookup's trigram indexes (003_people_lookup.sql; the customers without an owner's, 006).
      const trigram = await again.all("SELECT indexname AS name FROM pg_indexes WHERE schemaname = 'public' AND indexdef LIKE '%gin_trgm_ops%' ORDER BY indexname");
      expect(trigram.map((i) => i.name)).toEqual([
        'payment_customers_email_trgm', 'payment_customers_id_trgm', 'payment_customers_unowned_email_trgm', 'payment_customers_unowned_id_trgm',
        'persons_email_trgm', 'persons_external_id_trgm', 'persons_name_trgm',
      ]);
      await again.close();
    } finally {
      await db.release();
    }
  });

  it('connections run without parallel workers (launching one cost a people lookup of 1 ms of work 100 ms)', async () => {
    const db = await createDatabase();
    const control = await PostgresControl.open({ url: db.url });
    try {
      expect(await control.all('SHOW max_parallel_workers_per_gather')).toEqual([{ max_parallel_workers_per_gather: '0' }]);
      expect(await control.transaction((tx) => tx.all('SHOW max_parallel_workers_per_gather'))).toEqual([{ max_parallel_workers_per_gather: '0' }]);
    } finally {
      await control.close();
      await db.release();
    }
  });

  it.skipIf(!CHDB_INSTALLED)('`audiences migrate` with DATABASE_URL migrates PostgreSQL and ClickHouse, idempotently', async () => {
    const db = await createDatabase({ migrated: false });
    const dir = await mkdtemp(join(tmpdir(), 'pg-migrate-'));
    dirs.push(dir);
    const env = { ...process.env, DATABASE_URL: db.url, ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_PATH: join(dir, 'clickhouse'), CLICKHOUSE_DATABASE: 'migrated' };
    const bin = join(import.meta.dirname, '..', 'bin', 'audiences.js');
    try {
      for (let run = 0; run < 2; run++) {
        const { stdout } = await promisify(execFile)(process.execPath, [bin, 'migrate', '--json'], { env, timeout: 60_000 });
        const where = new URL(db.url);
        expect(JSON.parse(stdout)).toEqual({
          database: `postgres://${where.host}${where.pathname}`, database_created: false, schema_version: MIGRATION_FILES, analytics_store: 'clickhouse',
          typed_rows_filled: 0, clickhouse: { database: 'migrated', path: join(dir, 'clickhouse') },
        });
      }
    } finally {
      await db.release();
    }
  });
});
