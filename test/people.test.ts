// End to end: acquisition channel → payment → people lookup and payments criteria (issue 5).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDataApp } from '../src/http/app.js';
import type { CreatedWorkspace } from '../src/store/control/workspaces.js';
import { lookupPeople } from '../src/store/control/lookup.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { Store } from '../src/store/duckdb/db.js';
import { importDataset } from '../src/store/duckdb/import.js';
import { MIGRATIONS } from '../src/store/duckdb/migrations.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES_WITH_POSTGRES } from './support/engines.js';
import { checkoutSession, customer, deliver, invoice, notification, nowS, subscription } from './support/stripe.js';
import { tierRuns } from './support/tier.js';

let t: TestApp;
const get = (url: string, key = t.ws.secret_key) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });

describe.each(ENGINES_WITH_POSTGRES)('%s', (engine) => {
  beforeAll(async () => {
    t = await startTestApp({ engine });
    const T = nowS();
    // An organic visitor who pays with metadata.
    await t.post('/v1/pageviews', { visitor_id: 'v-org', url: 'https://shop.example/', referrer: 'https://www.google.com/' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_org', { tr_user_id: 'alice', tr_visitor_id: 'v-org' }, 'alice@example.com'), T));
    await deliver(t, notification('customer.subscription.created', subscription('cus_org', { metadata: { tr_user_id: 'alice' } }), T));
    await deliver(t, notification('invoice.paid', invoice('cus_org'), T));
    // A payer without metadata matched by email, and one matched by nothing.
    await t.post('/v1/persons', { external_id: 'bob', email: 'bob@example.com', name: 'Bob Stone' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_bob', {}, 'bob@example.com'), T));
    await deliver(t, notification('customer.subscription.created', subscription('cus_bob', { status: 'canceled' }), T));
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_anon', {}, 'nobody@example.com'), T));
    await deliver(t, notification('invoice.paid', invoice('cus_anon'), T));
    // An old first paid invoice (outside 30 days).
    await t.post('/v1/persons', { external_id: 'carol' });
    await deliver(t, notification('checkout.session.completed', checkoutSession('cus_carol', { tr_user_id: 'carol' }), T - 40 * 86_400));
    await deliver(t, notification('invoice.paid', invoice('cus_carol', { paid_at: T - 40 * 86_400 }), T - 40 * 86_400));
    for (let i = 0; i < 5; i++) await t.post('/v1/persons', { external_id: `page-${i}`, email: `page-${i}@example.com` });
  });
  afterAll(async () => { await t.close(); });

  describe('GET /people', () => {
    it('an organic payer with metadata shows Organic Search and linked', async () => {
      const res = await get('/people?q=ALICE');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        data: [expect.objectContaining({ external_id: 'alice', email: 'alice@example.com', customer_ids: ['cus_org'], link_state: 'linked', first_touch_channel: 'Organic Search' })],
        next_cursor: null,
      });
    });

    it('payers without metadata show Non-attributed', async () => {
      expect((await get('/people?q=stone')).json().data).toEqual([{
        person_id: expect.stringMatching(/^per_/), external_id: 'bob', email: 'bob@example.com', name: 'Bob Stone',
        customer_ids: ['cus_bob'], link_state: 'email_matched', first_touch_channel: 'Non-attributed',
      }]);
      expect((await get('/people?q=cus_anon')).json().data).toEqual([{
        person_id: null, external_id: null, email: 'nobody@example.com', name: null,
        customer_ids: ['cus_anon'], link_state: 'unmatched', first_touch_channel: 'Non-attributed',
      }]);
    });

    it('paginates with an opaque cursor', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(`/people?q=page-&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        const body = res.json() as { data: { external_id: string }[]; next_cursor: string | null };
        expect(body.data.length).toBeLessThanOrEqual(2);
        seen.push(...body.data.map((d) => d.external_id));
        cursor = body.next_cursor;
      } while (cursor);
      expect(seen.sort()).toEqual(['page-0', 'page-1', 'page-2', 'page-3', 'page-4']);
      expect((await get('/people?cursor=nope!')).statusCode).toBe(400);
      expect((await get('/people?limit=201')).statusCode).toBe(400);
    });

    it('needs a secret key', async () => {
      expect((await get('/people?q=a', t.ws.publishable_key)).statusCode).toBe(403);
      expect((await t.app.inject({ method: 'GET', url: '/people?q=a' })).statusCode).toBe(401);
    });

    it('is served by the data app too', async () => {
      const data = await buildDataApp({ stores: t.stores });
      try {
        const res = await data.inject({ method: 'GET', url: '/people?q=alice', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
        expect(res.json().data[0].first_touch_channel).toBe('Organic Search');
        expect((await data.inject({ method: 'POST', url: '/v1/events' })).statusCode).toBe(404);
      } finally {
        await data.close();
      }
    });

    it('never answers 500 to odd queries', async () => {
      await fc.assert(fc.asyncProperty(fc.string(), fc.string(), fc.string(), async (q, limit, cursor) => {
        const qs = new URLSearchParams({ q, limit, cursor }).toString();
        const res = await get(`/people?${qs}`);
        expect(res.statusCode).toBeLessThan(500);
      }), { numRuns: tierRuns(60) });
    });
  });

  describe('GET /people: what the indexes and the search column must not change', () => {
    let other: CreatedWorkspace;
    const find = async (q: string, key = () => other.secret_key) => {
      const res = await get(`/people?${new URLSearchParams({ q, limit: '200' })}`, key());
      expect(res.statusCode).toBe(200);
      return (res.json() as { data: { external_id: string | null; customer_ids: string[] }[] }).data.map((d) => d.external_id ?? d.customer_ids[0]);
    };

    beforeAll(async () => {
      other = await t.workspaces.create('lookup');
      const add = async (body: unknown) => expect((await t.post('/v1/persons', body, other.secret_key)).statusCode).toBe(200);
      // The first workspace's identifiers again: each workspace finds its own.
      await add({ external_id: 'alice', email: 'alice@example.com', name: 'Alice Twin' });
      await add({ external_id: 'dora', name: 'Dora Old' });
      await add({ external_id: 'dora', email: 'dora@mail.example', name: 'Dora New' });
      await add({ external_id: 'zoe', name: 'Zoë Ærøskøbing' });
      for (const id of ['x%y', 'x_y', 'x\\y', 'xay']) await add({ external_id: id });
    });

    it('finds the persons of the key\'s workspace only', async () => {
      expect(await find('alice')).toEqual(['alice']);
      expect(await find('twin', () => t.ws.secret_key)).toEqual([]);
      expect(await find('')).toEqual(['alice', 'dora', 'zoe', 'x%y', 'x_y', 'x\\y', 'xay']);
    });

    it('finds a person by the name and email written last, not by the name replaced', async () => {
      expect(await find('DORA NEW')).toEqual(['dora']);
      expect(await find('dora old')).toEqual([]);
      expect(await find('@mail.exa')).toEqual(['dora']);
    });

    it('lowercases letters beyond ASCII on both sides', async () => {
      expect(await find('ærøskøbing')).toEqual(['zoe']);
      expect(await find('ZOË')).toEqual(['zoe']);
    });

    it('matches %, _ and \\ literally', async () => {
      expect(await find('x%y')).toEqual(['x%y']);
      expect(await find('x_y')).toEqual(['x_y']);
      expect(await find('x\\y')).toEqual(['x\\y']);
      expect(await find('%')).toEqual(['x%y']);
      expect(await find('\\')).toEqual(['x\\y']);
    });

    it('never matches across two of a person\'s values', async () => {
      expect(await find('example\ndora')).toEqual([]);
      expect(await find('dora\ndora')).toEqual([]);
      expect(await find('\n')).toEqual([]);
    });

    it('pages of one row list what one page lists, customers first, then persons found by a customer id', async () => {
      for (const q of ['example.com', 'cus_', '']) {
        const all = (await get(`/people?${new URLSearchParams({ q, limit: '200' })}`)).json() as { data: unknown[] };
        const paged: unknown[] = [];
        let cursor: string | null = null;
        do {
          const body = (await get(`/people?${new URLSearchParams({ q, limit: '1', ...(cursor ? { cursor } : {}) })}`)).json() as { data: unknown[]; next_cursor: string | null };
          paged.push(...body.data);
          cursor = body.next_cursor;
        } while (cursor);
        expect(paged).toEqual(all.data);
      }
      const ids = (await get('/people?q=cus_')).json().data.map((d: { external_id: string | null; customer_ids: string[] }) => d.external_id ?? d.customer_ids[0]);
      expect(ids).toEqual(['cus_anon', 'alice', 'bob', 'carol']);
    });

    it('finds by a term\'s rarest trigrams what a substring test of every person finds', async () => {
      // Enough persons that some trigrams are rare (PostgreSQL's sample, DuckDB's index), some common.
      const bulk = await t.workspaces.create('bulk');
      const domains = ['acme.io', 'mail.example', 'corp.net'];
      const people = Array.from({ length: 150 }, (_, i) => ({
        external_id: `bulk-${i}`, email: `u${(i * 7919) % 1000}.${i}@${domains[i % 3]}`, name: `Name ${['Ann', 'Bo', 'Cy'][i % 3]} ${i * 37}`,
      }));
      people.push({ external_id: 'bulk-odd', email: 'odd77@corp.net', name: 'Odd qz\\x 50% off_now' });
      for (const person of people) expect((await t.post('/v1/persons', person, bulk.secret_key)).statusCode).toBe(200);
      // Some end a word inside the term (PostgreSQL then searches `lk-` as the trigram `lk `), some with
      // LIKE's wildcards or escape there, which must stay literal.
      const terms = ['u919.1@acme.io', 'bulk-17', 'bulk-149', '@corp.net', 'acme', 'ann 3', '.1', 'name bo 1110', 'u1', '9.2', 'zzz', 'ame cy',
        'lk-14', '.2@corp', 'nn 3', '19.1', 'u1_', 'k_1', '1%', 'qz\\x', 'dd qz', '50% o', 'f_now', 'odd77@', '01.1@mail.exa'];
      for (const term of terms) {
        const expected = people.filter((p) => [p.external_id, p.email, p.name].some((v) => v.toLowerCase().includes(term))).map((p) => p.external_id);
        expect(await find(term, () => bulk.secret_key), term).toEqual(expected.slice(0, 200));
      }
    });

    it('finds by a term\'s rarest trigrams what a substring test of every customer finds, by the email written last', async () => {
      // Payers of no person (each listed as its customer), some given another email later.
      const payers = await t.workspaces.create('payers');
      const T = nowS();
      const send = async (type: string, id: string, email: string, at: number) => expect((await deliver(t, notification(type, customer(id, { email }), at),
        { workspaceId: payers.workspace_id, secret: payers.stripe_webhook_secret })).statusCode).toBe(200);
      const domains = ['acme.io', 'pay.example', 'corp.net'];
      const emails = new Map(Array.from({ length: 90 }, (_, i) => [`cus_${(i * 7919).toString(16).padStart(6, '0')}x${i}`, `b${(i * 31) % 100}.${i}@${domains[i % 3]}`]));
      for (const [id, email] of emails) await send('customer.created', id, email, T);
      const moved = [...emails.keys()].filter((_, i) => i % 9 === 4);
      for (const id of moved) {
        await send('customer.updated', id, `Moved.${id}@Elsewhere.example`, T + 10);
        emails.set(id, `moved.${id}@elsewhere.example`);
      }
      const terms = ['cus_', '1e', 'x17', 'x89', '@corp.net', 'acme', 'b1', '.1@', 'moved', 'elsewhere', 'zzz', `${[...emails.keys()][4]}`, 'b4.4@corp',
        `@elsewhere.example`, 'b31.1@pay.example'];
      for (const term of terms) {
        const expected = [...emails].filter(([id, email]) => id.includes(term) || email.includes(term)).map(([id]) => id).sort();
        expect(await find(term, () => payers.secret_key), term).toEqual(expected);
      }
    });

    it.runIf(engine === 'duckdb')('finds persons an import brought', async () => {
      const imported = await t.workspaces.create('imported');
      await importDataset(t.store, imported.workspace_id, {
        persons: [{ person_id: 'per_imported', external_id: 'imp-1', email: ' Imported@Example.ORG ', name: 'Ímported Person', traits: '{}', created_at: new Date() }],
      });
      expect(await find('imported@example.org', () => imported.secret_key)).toEqual(['imp-1']);
      expect(await find('ÍMPORTED PERSON', () => imported.secret_key)).toEqual(['imp-1']);
    });
  });

  describe('payments leaves in compile', () => {
    const estimate = async (root: unknown) => {
      const res = await t.compile({ version: 1, root });
      expect(res.statusCode).toBe(200);
      return res.json().estimated_count.count as number;
    };

    it('subscription status = active counts the linked payer', async () => {
      expect(await estimate({ source: 'payments', entity: 'subscription', predicate: { status: { op: '=', value: 'active' } } })).toBe(1);
    });

    it('first_paid_invoice in the last 30 days counts alice (the unmatched payer belongs to nobody)', async () => {
      expect(await estimate({ source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'last_n_days', n: 30 } } })).toBe(1);
      expect(await estimate({ source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'ever' } } })).toBe(2);
    });
  });
});

/**
 * Runs `check` on a store opened on a file that stood at the schema before the migration holding
 * `marker`, with the rows `insert` (SQL) stored: the migration runs as the store opens.
 */
async function migratedFrom(marker: string, insert: string, check: (control: DuckDBControl) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'people-migration-'));
  const path = join(dir, 'before.duckdb');
  const version = MIGRATIONS.findIndex((m) => m.includes(marker));
  try {
    const before = await DuckDBInstance.create(path);
    const conn = await before.connect();
    await conn.run('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)');
    for (let v = 1; v <= version; v++) await conn.run(`${MIGRATIONS[v - 1]!}; INSERT INTO schema_migrations (version) VALUES (${v})`);
    await conn.run(insert);
    conn.closeSync();
    before.closeSync();
    const store = await Store.open(path);
    try {
      await check(new DuckDBControl(store));
    } finally {
      await store.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('the DuckDB trigram index of the persons', () => {
  it('is filled by its migration for the persons stored before it, and answers through it', async () => {
    await migratedFrom('CREATE TABLE person_grams', `INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, search, created_at, updated_at) VALUES
        ('w1', 1, 'p1', 'Ext-1', 'ann@example.com', 'Ann', 'ann@example.com\next-1\nann', now(), now()),
        ('w2', 2, 'p2', 'ann', NULL, NULL, 'ann', now(), now())`, async (control) => {
      expect(await control.all(`SELECT workspace_id, person_key, list(gram ORDER BY gram) AS grams FROM person_grams GROUP BY ALL ORDER BY person_key`)).toEqual([
        { workspace_id: 'w1', person_key: 1n, grams: ['.co', '@ex', 'amp', 'ann', 'com', 'e.c', 'exa', 'ext', 'le.', 'mpl', 'n@e', 'nn@', 'ple', 't-1', 'xam', 'xt-'] },
        { workspace_id: 'w2', person_key: 2n, grams: ['ann'] },
      ]);
      expect(await control.all('SELECT workspace_id, gram, n FROM person_gram_counts WHERE gram = \'ann\' ORDER BY workspace_id'))
        .toEqual([{ workspace_id: 'w1', gram: 'ann', n: 1n }, { workspace_id: 'w2', gram: 'ann', n: 1n }]);
      expect((await lookupPeople(control, 'w1', 'EXAMPLE', '', 10)).map((r) => r.person_id)).toEqual(['p1']);
      expect((await lookupPeople(control, 'w1', 'com\next', '', 10)).map((r) => r.person_id)).toEqual([]);
      expect((await lookupPeople(control, 'w2', 'ann', '', 10)).map((r) => r.person_id)).toEqual(['p2']);
    });
  });

  it('keeps the trigrams of a person created, and of one whose email or name changes, not of one unchanged', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      const grams = async () => (await app.stores.control.all(`SELECT count(*) AS n FROM person_grams g JOIN persons p USING (person_key)
        WHERE p.workspace_id = $1`, [app.ws.workspace_id]))[0]!.n as bigint;
      const found = async (q: string) => (await app.app.inject({ method: 'GET', url: `/people?q=${q}`, headers: { authorization: `Bearer ${app.ws.secret_key}` } }))
        .json().data.map((d: { external_id: string }) => d.external_id);
      await app.post('/v1/persons', { external_id: 'eve', name: 'Eve' });
      const created = await grams();
      expect(created).toBeGreaterThan(0n);
      await app.post('/v1/persons', { external_id: 'eve', name: 'Eve', traits: { plan: 'pro' } });
      expect(await grams()).toBe(created);
      await app.post('/v1/persons', { external_id: 'eve', email: 'eve@quux.example', name: 'Eve Quokka' });
      expect(await grams()).toBeGreaterThan(created);
      expect(await found('quokka')).toEqual(['eve']);
      expect(await found('quux.ex')).toEqual(['eve']);
      expect(await found('eve')).toEqual(['eve']);
    } finally {
      await app.close();
    }
  });
});

describe('the DuckDB trigram index of the customers', () => {
  it('is filled by its migration for the customers stored before it, and answers through it', async () => {
    await migratedFrom('CREATE TABLE customer_grams', `INSERT INTO payment_customers (workspace_id, customer_id, email, link_state, updated_at) VALUES
        ('w1', 'cus_A1', 'Ann@Example.com', 'unmatched', now()), ('w2', 'cus_b2', NULL, 'unmatched', now())`, async (control) => {
      expect(await control.all(`SELECT workspace_id, customer_id, list(gram ORDER BY gram) AS grams FROM customer_grams GROUP BY ALL ORDER BY customer_id`)).toEqual([
        { workspace_id: 'w1', customer_id: 'cus_A1', grams: ['.co', '@ex', '_a1', 'amp', 'ann', 'com', 'cus', 'e.c', 'exa', 'le.', 'mpl', 'n@e', 'nn@', 'ple', 's_a', 'us_', 'xam'] },
        { workspace_id: 'w2', customer_id: 'cus_b2', grams: ['_b2', 'cus', 's_b', 'us_'] },
      ]);
      expect(await control.all('SELECT workspace_id, gram, n FROM customer_gram_counts WHERE gram = \'cus\' ORDER BY workspace_id'))
        .toEqual([{ workspace_id: 'w1', gram: 'cus', n: 1n }, { workspace_id: 'w2', gram: 'cus', n: 1n }]);
      const found = async (ws: string, q: string) => (await lookupPeople(control, ws, q, '', 10)).map((r) => r.customer_ids);
      expect(await found('w1', 'ANN@EXAMPLE')).toEqual([['cus_A1']]);
      expect(await found('w1', 'cus_a')).toEqual([['cus_A1']]);
      expect(await found('w1', 'a1\nann')).toEqual([]);
      expect(await found('w2', 'cus_')).toEqual([['cus_b2']]);
    });
  });

  it('holds the customers an import brought', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      await importDataset(app.store, app.ws.workspace_id, {
        customers: [{ customer_id: 'cus_imported1', email: ' Payer@Imported.ORG ', person_id: null, visitor_id: null, link_state: 'unmatched' }],
      });
      const found = async (q: string) => (await app.app.inject({ method: 'GET', url: `/people?q=${q}`, headers: { authorization: `Bearer ${app.ws.secret_key}` } }))
        .json().data.map((d: { customer_ids: string[] }) => d.customer_ids);
      expect(await found('payer@imported')).toEqual([['cus_imported1']]);
      expect(await found('imported1')).toEqual([['cus_imported1']]);
      expect(await app.stores.control.all('SELECT n FROM customer_gram_counts WHERE workspace_id = $1 AND gram = $2', [app.ws.workspace_id, 'ed1']))
        .toEqual([{ n: 1n }]);
    } finally {
      await app.close();
    }
  });
});

describe('the DuckDB search column', () => {
  it('is filled by its migration for the persons stored before it', async () => {
    await migratedFrom('ADD COLUMN search', `INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, created_at, updated_at) VALUES
        ('w1', 1, 'p1', 'Ext-1', 'ann@example.com', 'Ann Ørsted', now(), now()), ('w1', 2, 'p2', NULL, NULL, 'Ben', now(), now())`, async (control) => {
      expect(await control.all('SELECT search FROM persons ORDER BY person_key')).toEqual([{ search: 'ann@example.com\next-1\nann ørsted' }, { search: 'ben' }]);
      expect((await lookupPeople(control, 'w1', 'ØRSTED', '', 10)).map((r) => r.person_id)).toEqual(['p1']);
      expect((await lookupPeople(control, 'w1', 'com\next', '', 10)).map((r) => r.person_id)).toEqual([]);
    });
  });
});
