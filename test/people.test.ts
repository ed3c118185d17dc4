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
import { GramIndex, gramsOf, lowerAsDuckDB } from '../src/store/duckdb/trigrams.js';
import { countGrams, rarestPieces, termGrams } from '../src/store/postgres/search.js';
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
    // An organic visitor who pays with metadata (a touch counts at or before the first payment).
    await t.post('/v1/pageviews', { visitor_id: 'v-org', url: 'https://shop.example/', referrer: 'https://www.google.com/', timestamp: new Date((T - 60) * 1000).toISOString() });
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

    it('finds a person by its exact email, external id or customer id right after the events that created it', async () => {
      const live = await t.workspaces.create('live-exact');
      // A lookup first: the search's state (DuckDB's indexes, PostgreSQL's sample) then predates the writes.
      expect(await find('x@y.example', () => live.secret_key)).toEqual([]);
      const batch = Array.from({ length: 200 }, (_, i) => ({ event_name: 'signup', user_id: `ext-${i}`, email: `member${i}@live.example`, visitor_id: `lv-${i}` }));
      expect((await t.post('/v1/events', { batch }, live.secret_key)).statusCode).toBe(200);
      const T = nowS();
      expect((await deliver(t, notification('checkout.session.completed', checkoutSession('cus_live7', { tr_user_id: 'ext-7' }, 'member7@live.example'), T),
        { workspaceId: live.workspace_id, secret: live.stripe_webhook_secret })).statusCode).toBe(200);
      expect(await find('member123@live.example', () => live.secret_key)).toEqual(['ext-123']);
      expect(await find('MEMBER7@LIVE.EXAMPLE', () => live.secret_key)).toEqual(['ext-7']);
      expect(await find('ext-199', () => live.secret_key)).toEqual(['ext-199']);
      expect(await find('cus_live7', () => live.secret_key)).toEqual(['ext-7']);
      expect(await find('member1@live', () => live.secret_key)).toEqual(['ext-1']);
    });

    it('finds by rare and common terms what a substring test finds, on persons written after the search\'s state was made', async () => {
      const live = await t.workspaces.create('live-steering');
      await t.post('/v1/events', { batch: [{ event_name: 'signup', user_id: 'first', email: 'first@start.example', visitor_id: 'sv-0' }] }, live.secret_key);
      expect(await find('first', () => live.secret_key)).toEqual(['first']);
      const people = Array.from({ length: 300 }, (_, i) => ({ user_id: `u-${i}`, email: `n${(i * 7919) % 1000}.${i}@${['acme.io', 'mail.example', 'corp.net'][i % 3]}` }));
      for (let i = 0; i < people.length; i += 100) {
        const batch = people.slice(i, i + 100).map((p, j) => ({ event_name: 'signup', ...p, visitor_id: `sv-${i + j + 1}` }));
        expect((await t.post('/v1/events', { batch }, live.secret_key)).statusCode).toBe(200);
      }
      const all = [{ user_id: 'first', email: 'first@start.example' }, ...people];
      for (const term of ['n919.1@acme.io', 'acme', 'u-29', '.2@corp', 'n1', '@mail.example', 'zzz', '9.29', 'u-299', 'first@']) {
        const expected = all.filter((p) => p.user_id.includes(term) || p.email.includes(term)).map((p) => p.user_id);
        expect(await find(term, () => live.secret_key), term).toEqual(expected);
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

/** The DuckDB search's candidates for `q` in the app's workspace (null: that side scanned). */
const candidatesOf = (app: TestApp, q: string) => app.store.search.candidates(app.stores.control, app.ws.workspace_id, q.toLowerCase());
const foundIn = (app: TestApp) => async (q: string) => (await app.app.inject({ method: 'GET', url: `/people?${new URLSearchParams({ q })}`,
  headers: { authorization: `Bearer ${app.ws.secret_key}` } })).json().data.map((d: { external_id: string | null; customer_ids: string[] }) => d.external_id ?? d.customer_ids[0]);

describe('the DuckDB trigram indexes (in memory)', () => {
  it('are kept by the writes of persons: a person created, given an email or a name is a candidate by it', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      await app.post('/v1/persons', { external_id: 'eve', name: 'Eve' });
      const eve = Number((await app.stores.control.all('SELECT person_key FROM persons WHERE external_id = $1', ['eve']))[0]!.person_key);
      expect((await candidatesOf(app, 'eve')).persons).toEqual([eve]);
      expect((await candidatesOf(app, 'quokka')).persons).toEqual([]);
      await app.post('/v1/persons', { external_id: 'eve', email: 'eve@quux.example', name: 'Eve Quokka' });
      expect((await candidatesOf(app, 'Quokka')).persons).toEqual([eve]);
      expect((await candidatesOf(app, 'quux.ex')).persons).toEqual([eve]);
      // The replaced name stays indexed; the lookup's check drops it.
      expect((await candidatesOf(app, 'eve q')).persons).toEqual([eve]);
      expect(await foundIn(app)('quokka')).toEqual(['eve']);
      expect(await foundIn(app)('quux.ex')).toEqual(['eve']);
    } finally {
      await app.close();
    }
  });

  it('give as candidates only the entries holding the whole term, where trigrams alone cannot tell them apart', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      // Every trigram of user_777777 is also one of the others'.
      for (const id of ['user_777777', 'user_777123', 'user_123777', 'user_77777', 'a\u{1F600}b']) await app.post('/v1/persons', { external_id: id });
      const keyOf = async (id: string) => Number((await app.stores.control.all('SELECT person_key FROM persons WHERE external_id = $1', [id]))[0]!.person_key);
      expect((await candidatesOf(app, 'user_777777')).persons).toEqual([await keyOf('user_777777')]);
      expect(await foundIn(app)('user_77777')).toEqual(['user_777777', 'user_77777']);
      // A term with a surrogate pair is narrowed by its trigrams, not checked as bytes: still found.
      expect((await candidatesOf(app, 'a\u{1F600}b')).persons).toEqual([await keyOf('a\u{1F600}b')]);
      expect(await foundIn(app)('\u{1F600}b')).toEqual(['a\u{1F600}b']);
    } finally {
      await app.close();
    }
  });

  it('are kept by the payment writes: a customer created or given another email is a candidate by it', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      const T = nowS();
      await deliver(app, notification('customer.created', customer('cus_Q1', { email: 'first@pay.example' }), T));
      expect((await candidatesOf(app, 'cus_q1')).customers).toEqual(['cus_Q1']);
      await deliver(app, notification('customer.updated', customer('cus_Q1', { email: 'Second@Elsewhere.example' }), T + 10));
      expect((await candidatesOf(app, 'second@else')).customers).toEqual(['cus_Q1']);
      expect(await foundIn(app)('SECOND@ELSE')).toEqual(['cus_Q1']);
      expect(await foundIn(app)('first@pay')).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('are filled from the rows at a workspace\'s first lookup, and made again after an import', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      await app.post('/v1/persons', { external_id: 'before-1', email: 'early@bird.example' });
      // The first lookup scans while the indexes are filled.
      expect(await candidatesOf(app, 'early@bird')).toEqual({ persons: null, customers: null });
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      expect((await candidatesOf(app, 'early@bird')).persons).toHaveLength(1);
      await importDataset(app.store, app.ws.workspace_id, {
        persons: [{ person_id: 'per_imported', external_id: 'imp-1', email: ' Imported@Example.ORG ', name: 'Ímported Person', traits: '{}', created_at: new Date() }],
        customers: [{ customer_id: 'cus_imported1', email: ' Payer@Imported.ORG ', person_id: null, visitor_id: null, link_state: 'unmatched' }],
      });
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      expect((await candidatesOf(app, 'ÍMPORTED PERSON')).persons).toHaveLength(1);
      expect((await candidatesOf(app, 'payer@imported')).customers).toEqual(['cus_imported1']);
      expect(await foundIn(app)('imported@example.org')).toEqual(['imp-1']);
      expect(await foundIn(app)('payer@imported')).toEqual(['cus_imported1']);
      expect(await foundIn(app)('early@bird')).toEqual(['before-1']);
    } finally {
      await app.close();
    }
  });

  it('answer what a scan of every person and customer answers, for persons and payers written through the API', async () => {
    const app = await startTestApp({ engine: 'duckdb' });
    try {
      await app.post('/v1/persons', { external_id: 'seed', name: 'Ünïcode Ǆemal İstanbul ΣΑΣ' });
      const events = Array.from({ length: 120 }, (_, i) => ({ event_name: 'signup', user_id: `live-${i}`, email: `p${(i * 7919) % 500}.${i}@${['acme.io', 'corp.net'][i % 2]}`, visitor_id: `v-${i}` }));
      await app.post('/v1/events', { batch: events });
      // Payers: one with the person's email, one through the person's visitor (its customers and
      // link state come with the person named exactly), one deferred on an anonymous visitor.
      await app.post('/v1/events', { batch: [{ event_name: 'page', visitor_id: 'v-anon' }] });
      // More payers through visitors than a lookup binds one key each: their visitors' links are read after them.
      const viaVisitors = [5, 6].map((i) => [`cus_via${i}`, { tr_visitor_id: `v-${i}` }, `via${i}@pay.example`] as const);
      for (const [id, metadata, email] of [['cus_own3', { tr_user_id: 'live-3' }, 'p257.3@corp.net'], ['cus_via3', { tr_visitor_id: 'v-3' }, 'elsewhere@pay.example'],
        ['cus_anon', { tr_visitor_id: 'v-anon' }, 'anon@pay.example'], ...viaVisitors] as const) {
        expect((await deliver(app, notification('checkout.session.completed', checkoutSession(id, metadata, email), nowS()))).statusCode).toBe(200);
      }
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      const terms = ['acme', 'p1', '.1@', 'live-11', 'live-119', 'ünï', 'ǆemal', 'ǅemal', 'istanbul', 'σας', 'ςας', 'zzz', '7.1', '@corp.net', 'e-1',
        'p257.3@corp.net', 'live-3', 'cus_via3', 'cus_own3', 'cus_anon', 'anon@pay', 'elsewhere@pay.example', 'cus_via', 'cus_', '@pay.example'];
      const whole = async (q: string) => (await app.app.inject({ method: 'GET', url: `/people?${new URLSearchParams({ q })}`,
        headers: { authorization: `Bearer ${app.ws.secret_key}` } })).json() as unknown;
      const scanned = new Map<string, unknown>();
      // The same lookups with the indexes forgotten and the fill held back: every side scanned.
      for (const term of terms) scanned.set(term, await whole(term));
      expect((scanned.get('live-3') as { data: unknown[] }).data[0]).toMatchObject({ external_id: 'live-3', customer_ids: ['cus_own3', 'cus_via3'], link_state: 'linked' });
      expect((scanned.get('cus_') as { data: { external_id: string | null; customer_ids: string[] }[] }).data.map((d) => d.external_id ?? d.customer_ids[0]))
        .toEqual(['cus_anon', 'live-3', 'live-5', 'live-6']);
      app.store.search.forget(app.ws.workspace_id);
      let release!: () => void;
      const released = new Promise<void>((resolve) => { release = resolve; });
      const hold = app.store.transaction(() => released);
      for (const term of terms) {
        expect(await candidatesOf(app, term)).toEqual({ persons: null, customers: null });
        expect(await whole(term), term).toEqual(scanned.get(term));
      }
      release();
      await hold;
      expect(await app.store.search.ready(app.ws.workspace_id)).toBe(true);
      for (const term of terms) expect(await whole(term), term).toEqual(scanned.get(term));
    } finally {
      await app.close();
    }
  });
});

describe('the DuckDB trigram indexes\' lowercasing', () => {
  it('lowers every letter of DuckDB\'s Unicode as its lower() does, a code point at a time', async () => {
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      // Code points DuckDB lowers (its Unicode may lack letters newer than it: those it leaves, only adding a candidate).
      const rows = (await conn.runAndReadAll(`SELECT i, lower(chr(CAST(i AS INTEGER))) AS l FROM range(1, 196608) t(i)
        WHERE (i < 55296 OR i > 57343) AND lower(chr(CAST(i AS INTEGER))) <> chr(CAST(i AS INTEGER))`)).getRowObjectsJS();
      expect(rows.length).toBeGreaterThan(1000);
      const differ = rows.filter((r) => lowerAsDuckDB(String.fromCodePoint(Number(r.i))) !== r.l).map((r) => Number(r.i).toString(16));
      expect(differ).toEqual([]);
      // Where JavaScript maps to two code points or by context, DuckDB maps to one.
      expect(lowerAsDuckDB('İΣΑΣ K')).toBe((await conn.runAndReadAll(`SELECT lower('İΣΑΣ K') AS l`)).getRowObjectsJS()[0]!.l);
    } finally {
      conn.closeSync();
      db.closeSync();
    }
  });
});

describe('the DuckDB trigram index\'s lists', () => {
  it('list an owner once under a trigram its values repeat, ASCII or not, so the rarest is told by owners', () => {
    const index = new GramIndex<string>();
    index.add('a', ['aaaaaa', 'xaaay']);
    index.add('b', ['ééééé', 'zzz']);
    // One owner under `aaa` and under `ééé`: a list of one is within a bound of one.
    expect(index.find('aaa', gramsOf('aaa'), 1, 10)).toStrictEqual(['a']);
    expect(index.find('ééé', gramsOf('ééé'), 1, 10)).toStrictEqual(['b']);
    expect(index.find('zzz', gramsOf('zzz'), 1, 10)).toStrictEqual(['b']);
    expect(index.find('aab', gramsOf('aab'), 1, 10)).toStrictEqual([]);
  });
});

describe('the DuckDB trigram tables', () => {
  it('are dropped by their migration; the persons stored before it are found', async () => {
    await migratedFrom('DROP TABLE person_grams', `INSERT INTO persons (workspace_id, person_key, person_id, external_id, email, name, search, created_at, updated_at) VALUES
        ('w1', 1, 'p1', 'Ext-1', 'ann@example.com', 'Ann', 'ann@example.com\next-1\nann', now(), now())`, async (control) => {
      expect(await control.all(`SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%gram%'`)).toEqual([]);
      expect(await control.search.ready('w1')).toBe(true);
      expect((await lookupPeople(control, 'w1', 'EXAMPLE', '', 10)).map((r) => r.person_id)).toEqual(['p1']);
      expect((await lookupPeople(control, 'w1', 'com\next', '', 10)).map((r) => r.person_id)).toEqual([]);
    });
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

describe('the PostgreSQL people search\'s pieces of a term', () => {
  it('read a word\'s first two letters after the character that starts it, and its last two before the one that ends it, LIKE\'s wildcards escaped', () => {
    const grams = (term: string) => termGrams(term).map(({ piece, gram }) => `${piece}=${gram}`);
    // `user_777777`: its rare trigrams are 777 and the start of a word 77 (` 77`), not 777 alone.
    expect(grams('user_777777')).toEqual(['use=use', 'ser=ser', 'er\\_=er ', '\\_77= 77', '777=777', '777=777', '777=777', '777=777']);
    expect(grams('a%bc d\\ef')).toEqual(['\\%bc= bc', 'bc =bc ', '\\\\ef= ef']);
    // The term's own start and end tell nothing; a letter outside ASCII is one to pg_trgm.
    expect(grams('ab')).toEqual([]);
    expect(grams('éab')).toEqual([]);
  });

  it('search by the rarest in a sample of persons, three characters before a word\'s end or start as rare', () => {
    const sample = countGrams(Array.from({ length: 100 }, (_, i) => `user${i + 1}@example.com\nuser_${i + 1}`));
    // One person in 100 has a word starting 77 (`user_77`): rare beside 777, which none has.
    expect(rarestPieces('user_777777', sample)).toEqual(['777', '\\_77']);
    // No person holds a customer id's trigrams: its characters' are read, not `us_` and `_b4` (every customer's `us `, one in 256's ` b4`).
    expect(rarestPieces('cus_b456003646a12c', sample)).toEqual(['cus', 'b45', '456']);
    expect(rarestPieces('user', sample)).toBeNull();
  });
});
