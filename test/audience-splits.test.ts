// Audience splits and the lift report (decisions §14) on every engine: precise refusals, members
// that keep their split across refreshes, split sizes within binomial bounds, deliveries that carry
// only the splits naming the destination, and the lift figures against the members' own invoices
// (per currency, and converted into one).

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { writeRates } from '../src/store/control/rates.js';
import type { Dataset } from '../src/store/layout.js';
import { startTestApp, type TestApp } from './support/app.js';
import { analyticsOf, ENGINES_WITH_POSTGRES } from './support/engines.js';
import { importRows } from './support/stored.js';
import { FULL_TIER, tierRuns } from './support/tier.js';
import { seededRandom } from './support/random.js';

const START = new Date('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const PEOPLE = 600;
/** 50 refreshes under CI=true (the issue's test), 10 by default: enough for members to join and leave. */
const REFRESHES = Math.max(10, tierRuns(50));
const visitedLately = { version: 1, root: { source: 'product_event', name: 'visit', occurrence: { op: 'did', count: null, window: { kind: 'last_n_days', n: 3 } } } };

/** Payers with a page view before their invoices: the rest pay with no touch (Non-attributed under any model). */
const touched = (payer: number) => payer % 2 === 0;

/** People who visit on random days of the refreshes' span (members join and leave), some paying in two currencies, half of those after a page view. */
function dataset(): Partial<Dataset> {
  const next = seededRandom(38);
  const persons = Array.from({ length: PEOPLE }, (_, i) => ({
    person_id: `p${i}`, external_id: `u${i}`, email: `p${i}@example.com`, name: null, traits: null, created_at: START,
  }));
  const events = persons.flatMap((p, i) => Array.from({ length: 6 }, (_, k) => ({
    event_id: `e${i}_${k}`, event_name: 'visit', ts: new Date(START.getTime() + Math.floor(next() * REFRESHES) * DAY), person_id: p.person_id, visitor_id: null, properties: '{}',
  })));
  const payers = persons.filter((_, i) => i % 5 === 0);
  const visitors = payers.filter((_, i) => touched(i)).map((p) => ({ visitor_id: `v_${p.person_id}`, person_id: p.person_id, first_seen_at: START }));
  const pageviews = visitors.map((v) => ({
    pageview_id: `pv_${v.visitor_id}`, visitor_id: v.visitor_id, ts: new Date(START.getTime() + 4 * DAY), url: 'https://shop.example/', referrer: null,
    host: 'shop.example', path: '/', referrer_host: null, source: null, medium: null, campaign: null, channel: 'Direct', channel_category: 'Direct',
  }));
  return {
    persons, events, visitors, pageviews,
    customers: payers.map((p) => ({ customer_id: `cus_${p.person_id}`, email: p.email, person_id: p.person_id, visitor_id: null, link_state: 'linked' as const })),
    invoices: payers.flatMap((p, i) => [
      { invoice_id: `in_${p.person_id}`, customer_id: `cus_${p.person_id}`, subscription_id: null, status: 'paid', amount_due: 1000 + i * 7, amount_paid: 1000 + i * 7, currency: 'usd', created_at: new Date(START.getTime() + 5 * DAY) },
      ...(i % 4 === 0 ? [{ invoice_id: `in_${p.person_id}_eur`, customer_id: `cus_${p.person_id}`, subscription_id: null, status: 'paid', amount_due: 500, amount_paid: 500, currency: 'eur', created_at: new Date(START.getTime() + 6 * DAY) }] : []),
    ]),
  };
}

describe.each(ENGINES_WITH_POSTGRES)('audience splits on %s', (engine) => {
  let t: TestApp;
  let now = START;
  const send = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => t.app.inject({
    method, url, headers: { authorization: `Bearer ${t.ws.secret_key}` }, ...(body === undefined ? {} : { payload: body as object }),
  });
  const members = async (id: string) => {
    const out: { person_id: string; split?: string }[] = [];
    let cursor: string | null = null;
    do {
      const page = (await send('GET', `/v1/audiences/${id}/members?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)).json() as { data: typeof out; next_cursor: string | null };
      out.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  };

  beforeAll(async () => {
    // A budget the lift statements (ASOF joins for a currency on chDB) do not reach on a loaded machine: figures are tested here.
    t = await startTestApp({ engine, clock: () => now, budgetMs: 60_000 });
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    now = START;
    await t.freshWorkspace();
  });

  it('refuses splits that do not add up, repeat a name, or leave a destination unnamed, naming each field', async () => {
    const hook = { type: 'webhook', url: 'http://127.0.0.1:9/hook', secret: 's' };
    const faults = async (body: unknown, method: 'POST' | 'PATCH' = 'POST', url = '/v1/audiences') => {
      const res = await send(method, url, body);
      expect(res.statusCode, res.body).toBe(400);
      return (res.json() as { errors: { field: string }[] }).errors.map((e) => e.field);
    };
    const base = { name: 'x', criteria_json: visitedLately };
    expect(await faults({ ...base, splits: [{ name: 'a', percent: 60 }, { name: 'b', percent: 30 }] })).toEqual(['/splits']);
    expect(await faults({ ...base, splits: [{ name: 'a', percent: 50 }, { name: 'a', percent: 50 }] })).toEqual(['/splits/1/name']);
    expect(await faults({ ...base, splits: [{ name: 'a', percent: 50.001 }, { name: 'b', percent: 49.999 }] })).toEqual(['/splits/0/percent', '/splits/1/percent']);
    expect(await faults({ ...base, destinations: [hook, hook], splits: [{ name: 'a', percent: 90, destinations: [0, 2] }, { name: 'h', percent: 10 }] }))
      .toEqual(['/splits/0/destinations/1', '/destinations/1']);
    const created = (await send('POST', '/v1/audiences', { ...base, destinations: [hook], splits: [{ name: 'a', percent: 90, destinations: [0] }, { name: 'h', percent: 10 }] })).json();
    expect(created.splits).toEqual([{ name: 'a', percent: 90, destinations: [0] }, { name: 'h', percent: 10, destinations: [] }]);
    // A destination added without a split naming it; splits that no longer add up.
    expect(await faults({ destinations: [hook, hook] }, 'PATCH', `/v1/audiences/${created.id}`)).toEqual(['/destinations/1']);
    expect(await faults({ splits: [{ name: 'a', percent: 10, destinations: [0] }] }, 'PATCH', `/v1/audiences/${created.id}`)).toEqual(['/splits']);
  });

  // The placement is the members page's on every engine (the lift test compares the engine's own); on
  // ClickHouse the refreshes are slow, so this runs there under CI=true only.
  it.skipIf(!FULL_TIER && analyticsOf(engine) === 'clickhouse')('keeps every member in its split across the refreshes as members join and leave, the sizes within binomial bounds', async () => {
    await importRows(t, dataset());
    const percents = { treatment: 70, second: 20, holdout: 10 };
    const a = (await send('POST', '/v1/audiences', {
      name: 'visited lately', criteria_json: visitedLately, refresh_every: '1d',
      splits: Object.entries(percents).map(([name, percent]) => ({ name, percent })),
    })).json();
    const placed = new Map<string, string>();
    const sizes: number[] = [];
    for (let r = 0; r < REFRESHES; r++) {
      now = new Date(START.getTime() + r * DAY);
      expect((await send('POST', `/v1/audiences/${a.id}/refresh`)).json()).toMatchObject({ status: 'ready' });
      const current = await members(a.id);
      sizes.push(current.length);
      for (const m of current) {
        expect(m.split, m.person_id).toBeDefined();
        expect(placed.get(m.person_id) ?? m.split, `${m.person_id} at refresh ${r}`).toBe(m.split);
        placed.set(m.person_id, m.split!);
      }
    }
    // Members joined and left: the sizes vary, and most people were members at some point.
    expect(new Set(sizes).size).toBeGreaterThan(5);
    expect(placed.size).toBeGreaterThan(PEOPLE * 0.9);
    // Each split's share of everyone placed, within 5 standard deviations of its percent (the salt is random).
    for (const [name, percent] of Object.entries(percents)) {
      const p = percent / 100;
      const n = placed.size;
      const count = [...placed.values()].filter((s) => s === name).length;
      expect(Math.abs(count - n * p), name).toBeLessThan(5 * Math.sqrt(n * p * (1 - p)));
    }
  });

  it('pushes only the splits naming the destination, and reports each split\'s revenue per member against the holdout', async () => {
    await importRows(t, dataset());
    const received: { added: { person_id: string; split?: string }[]; removed: { person_id: string }[] }[] = [];
    const server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => { raw += c.toString('utf8'); });
      req.on('end', () => {
        received.push(JSON.parse(raw));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      now = new Date(START.getTime() + 10 * DAY);
      const a = (await send('POST', '/v1/audiences', {
        name: 'everyone', criteria_json: { version: 1, root: { source: 'product_event', name: 'visit', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
        destinations: [{ type: 'webhook', url, secret: 's' }],
        splits: [{ name: 'treatment', percent: 75, destinations: [0] }, { name: 'holdout', percent: 25 }],
      })).json();
      await t.app.audiences.scheduler.tick(now);
      await t.app.audiences.deliverer.idle();
      const all = await members(a.id);
      const treated = all.filter((m) => m.split === 'treatment').map((m) => m.person_id).sort();
      const pushed = received.flatMap((b) => b.added);
      expect(pushed.map((m) => m.person_id).sort()).toEqual(treated);
      expect(new Set(pushed.map((m) => m.split))).toEqual(new Set(['treatment']));
      // The delivery log counts what was sent to the destination, not the holdout's members.
      const logged = async () => (await send('GET', `/v1/audiences/${a.id}/deliveries`)).json().data[0];
      expect(await logged()).toMatchObject({ status: 'delivered', added: treated.length, removed: 0 });

      const lift = async (model?: string, currency?: string) => {
        const response = await send('POST', '/v1/reports/lift', { audience_id: a.id, from: '2026-03-01', to: '2026-04-01', ...(model ? { model } : {}), ...(currency ? { currency } : {}) });
        expect(response.statusCode, response.body).toBe(200);
        return response.json();
      };
      // Expected from the members' splits (the API's placement) and the invoices imported: every
      // invoice without a model; under one, only those of payers with a page view before them.
      const data = dataset();
      const payerIndex = new Map(data.customers!.map((c, i) => [c.customer_id, i]));
      const splitOf = new Map(all.map((m) => [m.person_id, m.split!]));
      for (const model of [undefined, 'first_touch', 'last_touch']) {
        const report = await lift(model);
        const counted = data.invoices!.filter((i) => model === undefined || touched(payerIndex.get(i.customer_id)!));
        expect(report).toMatchObject({ holdout: 'holdout', interval: 'welch_normal_95', hit_limit: false, model: model ?? null });
        for (const split of ['treatment', 'holdout']) {
          const people = all.filter((m) => m.split === split).map((m) => m.person_id);
          const invoices = counted.filter((i) => splitOf.get(i.customer_id.slice(4)) === split);
          const sum = (currency: string) => invoices.filter((i) => i.currency === currency).reduce((s, i) => s + i.amount_paid, 0);
          const row = report.splits.find((s: { name: string }) => s.name === split);
          expect(row, `${split} under ${model ?? 'no model'}`).toMatchObject({
            members: people.length, holdout: split === 'holdout',
            paying_members: new Set(invoices.map((i) => i.customer_id)).size,
            revenue: { usd: sum('usd'), eur: sum('eur') },
          });
          expect(row.revenue_per_member.usd).toBeCloseTo(sum('usd') / people.length, 9);
        }
        const treatment = report.splits.find((s: { name: string }) => s.name === 'treatment');
        const holdout = report.splits.find((s: { name: string }) => s.name === 'holdout');
        expect(holdout.difference).toBeNull();
        const d = treatment.difference.usd;
        expect(d.estimate).toBeCloseTo(treatment.revenue_per_member.usd - holdout.revenue_per_member.usd, 9);
        expect(d.low).toBeLessThan(d.estimate);
        expect(d.high).toBeGreaterThan(d.estimate);
      }
      // In one currency: each invoice at its day's rate (the EUR ones on a Saturday, at Friday's), as the revenue report converts.
      const usdPerEur = 1.0834;
      await t.stores.analytics.unit((work) => writeRates(work, t.ws.workspace_id, [{ day: '2026-03-05', currency: 'usd', perEur: 1.05 }, { day: '2026-03-06', currency: 'usd', perEur: usdPerEur }]));
      for (const model of [undefined, 'last_touch']) {
        const report = await lift(model, 'USD');
        expect(report, 'within the budget').toMatchObject({ hit_limit: false, currencies: ['usd'] });
        for (const split of ['treatment', 'holdout']) {
          const invoices = data.invoices!.filter((i) => splitOf.get(i.customer_id.slice(4)) === split && (model === undefined || touched(payerIndex.get(i.customer_id)!)));
          const usd = invoices.reduce((sum, i) => sum + (i.currency === 'usd' ? i.amount_paid : Math.floor(i.amount_paid * usdPerEur + 0.5)), 0);
          expect(report.splits.find((s: { name: string }) => s.name === split).revenue, `${split} under ${model ?? 'no model'}`).toEqual({ usd });
        }
      }
      const noRate = await send('POST', '/v1/reports/lift', { audience_id: a.id, from: '2026-03-01', to: '2026-04-01', currency: 'gbp' });
      expect(noRate.statusCode, noRate.body).toBe(400);
      expect(noRate.json()).toMatchObject({ error: 'invalid_request', errors: [{ field: '/currency', message: expect.stringMatching(/GBP on 2026-03-06/) }] });
      const refused = await send('POST', '/v1/reports/lift', { audience_id: a.id, from: '2026-03-01', to: '2026-04-01', lookback_days: 30 });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().errors.map((e: { field: string }) => e.field)).toEqual(['/lookback_days']);

      // Members leave, in both splits: the destination is sent, and the log counts, the treatment's only.
      const sentBefore = received.length;
      expect((await send('PATCH', `/v1/audiences/${a.id}`, { criteria_json: visitedLately })).statusCode).toBe(200);
      await t.app.audiences.scheduler.tick(now);
      await t.app.audiences.deliverer.idle();
      const staying = new Set((await members(a.id)).map((m) => m.person_id));
      const left = treated.filter((p) => !staying.has(p));
      expect(left.length).toBeGreaterThan(0);
      expect(all.filter((m) => m.split === 'holdout' && !staying.has(m.person_id)).length).toBeGreaterThan(0);
      expect(received.slice(sentBefore).flatMap((b) => b.removed).map((m) => m.person_id).sort()).toEqual(left);
      expect(await logged()).toMatchObject({ status: 'delivered', added: 0, removed: left.length });
    } finally {
      server.close();
    }
  });
});
