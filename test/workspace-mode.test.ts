// `audiences workspace mode|retention` and `audiences privacy` on a service database, run in this
// process (test/support/cli.ts), checked through the real app: GET /v1/workspace shows the mode and
// the retention, the webhook applies the mode, ingest refuses what was suppressed.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Store } from '../src/store/duckdb/db.js';
import { DuckDBControl } from '../src/store/duckdb/control.js';
import { type CreatedWorkspace, Workspaces } from '../src/store/control/workspaces.js';
import { startTestApp } from './support/app.js';
import { cli } from './support/cli.js';
import { checkoutSession, count, deliver, notification } from './support/stripe.js';

let dir: string;
let db: string;
let shop: CreatedWorkspace;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'workspace-mode-'));
  db = join(dir, 'attribution.duckdb');
  const store = await Store.open(db);
  try {
    shop = await new Workspaces(new DuckDBControl(store)).create('shop');
  } finally {
    await store.close();
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function withApp(check: (t: Awaited<ReturnType<typeof startTestApp>>) => Promise<void>): Promise<void> {
  const t = await startTestApp({ path: db });
  try {
    await check(t);
  } finally {
    await t.close();
  }
}

const testModePayment = (id: string) => notification('checkout.session.completed',
  checkoutSession(null, { tr_user_id: `u_${id}` }, null, { mode: 'payment' }), undefined, id, false);

it('sets test mode by workspace name; the service then applies test-mode notifications and shows the mode', async () => {
  const res = await cli('workspace', 'mode', 'shop', 'test', '--data', db, '--json');
  expect(res.code, res.stderr).toBe(0);
  expect(JSON.parse(res.stdout)).toEqual({ workspace_id: shop.workspace_id, name: 'shop', payments_mode: 'test', previous: 'live' });
  await withApp(async (t) => {
    const shown = await t.app.inject({ method: 'GET', url: '/v1/workspace', headers: { authorization: `Bearer ${shop.secret_key}` } });
    expect(shown.json()).toMatchObject({ id: shop.workspace_id, payments_mode: 'test' });
    const signed = { workspaceId: shop.workspace_id, secret: shop.stripe_webhook_secret };
    expect((await deliver(t, testModePayment('evt_cli_test'), signed)).json()).toEqual({ received: true, duplicate: false });
    expect(await count(t, 'payment_customers', shop.workspace_id)).toBe(1);
    // A new workspace starts live.
    const fresh = await t.app.inject({ method: 'GET', url: '/v1/workspace', headers: { authorization: `Bearer ${t.ws.secret_key}` } });
    expect(fresh.json()).toMatchObject({ payments_mode: 'live' });
  });
});

it('sets live mode back by id, in words; test-mode notifications are then ignored', async () => {
  const res = await cli('workspace', 'mode', shop.workspace_id, 'live', '--data', db);
  expect(res.code, res.stderr).toBe(0);
  expect(res.stdout).toMatch(/^workspace "shop" \(ws_[\w-]+\) in .*attribution\.duckdb: payments mode live \(was test\); test-mode \("livemode": false\) notifications are acknowledged and ignored\n$/);
  const again = await cli('workspace', 'mode', 'shop', 'live', '--data', db);
  expect(again.stdout).toMatch(/payments mode live \(unchanged\)/);
  await withApp(async (t) => {
    const signed = { workspaceId: shop.workspace_id, secret: shop.stripe_webhook_secret };
    expect((await deliver(t, testModePayment('evt_cli_live'), signed)).statusCode).toBe(200);
    expect(await count(t, 'processed_notifications', shop.workspace_id)).toBe(1);
  });
});

it('refuses an unknown mode (usage, exit 2) and an unknown workspace (exit 1), changing nothing', async () => {
  const bad = await cli('workspace', 'mode', 'shop', 'sandbox', '--data', db);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toMatch(/^audiences: the mode must be one of live, test, got "sandbox" \(see: audiences workspace mode --help\)\n$/);
  const missing = await cli('workspace', 'mode', 'shop', '--data', db);
  expect(missing.code).toBe(2);
  expect(missing.stderr).toMatch(/missing <mode>/);
  const unknown = await cli('workspace', 'mode', 'initech', 'test', '--data', db);
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toMatch(/no workspace "initech"/);
  const help = await cli('workspace', 'mode', '--help');
  expect(help.stdout).toMatch(/^usage: audiences workspace mode <workspace> live\|test/);
  const store = await Store.open(db);
  try {
    expect((await new Workspaces(new DuckDBControl(store)).get(shop.workspace_id))?.payments_mode).toBe('live');
  } finally {
    await store.close();
  }
});

it('sets a retention by workspace name, shown by GET /v1/workspace; forever lifts it', async () => {
  const res = await cli('workspace', 'retention', 'shop', '30', '--data', db, '--json');
  expect(res.code, res.stderr).toBe(0);
  expect(JSON.parse(res.stdout)).toEqual({ workspace_id: shop.workspace_id, name: 'shop', retention_days: 30 });
  const shown = async () => withApp(async (t) => {
    const ws = await t.app.inject({ method: 'GET', url: '/v1/workspace', headers: { authorization: `Bearer ${shop.secret_key}` } });
    expect(ws.json().retention_days).toBe(days);
  });
  let days: number | null = 30;
  await shown();
  expect((await cli('workspace', 'retention', 'shop', 'forever', '--data', db)).code).toBe(0);
  days = null;
  await shown();
  const bad = await cli('workspace', 'retention', 'shop', '0', '--data', db);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('<days> must be a whole number');
});

it('privacy delete and suppress on the database file: the person is gone, the suppressed ids are refused', async () => {
  await withApp(async (t) => {
    await t.post('/v1/events', { event_name: 'signup', user_id: 'hal-ext', email: 'hal@example.com', visitor_id: 'v-hal' }, shop.secret_key);
  });
  const res = await cli('privacy', 'delete', '--workspace', 'shop', '--email', 'HAL@example.com', '--data', db, '--json');
  expect(res.code, res.stderr).toBe(0);
  expect(JSON.parse(res.stdout)).toMatchObject({ status: 'done', counts: { persons: 1, visitors: 1, events: 1 } });
  const ids = join(dir, 'ids.csv');
  writeFileSync(ids, 'external_id,visitor_id\nivy-ext,\n,v-ivy\n');
  const suppressed = await cli('privacy', 'suppress', '--workspace', 'shop', '--file', ids, '--data', db);
  expect(suppressed.code, suppressed.stderr).toBe(0);
  expect(suppressed.stdout).toContain('done');
  await withApp(async (t) => {
    const people = await t.app.inject({ method: 'GET', url: '/people?q=hal', headers: { authorization: `Bearer ${shop.secret_key}` } });
    expect(people.json().data).toEqual([]);
    const events = await t.post('/v1/events', { batch: [{ event_name: 'signup', user_id: 'ivy-ext' }, { event_name: 'signup', visitor_id: 'v-ivy' }] }, shop.secret_key);
    expect(events.json()).toMatchObject({ accepted: 0, suppressed: 2 });
  });
  expect((await cli('privacy', 'delete', '--workspace', 'shop', '--data', db)).code).toBe(2);
});
