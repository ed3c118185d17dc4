// Several API processes behind one PostgreSQL (the control state) and one ClickHouse (the analytical
// data: the embedded chDB behind its HTTP interface, test/support/chdb-server.ts, since chDB lives in
// one process). A client spreads concurrent traffic over the nodes, the way a load balancer would:
// the same new users on every node at once, each message id and each Stripe notification delivered
// to every node, audiences falling due on every node's scheduler at the same time; then one node is
// killed with SIGKILL while it delivers, and the others finish its work once its lease expires.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { ClickHouseClient } from '@clickhouse/client';
import pg from 'pg';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClickHouse } from '../src/store/clickhouse/client.js';
import { type ChdbServer, startChdbServer } from './support/chdb-server.js';
import { CHDB_INSTALLED } from './support/engines.js';
import { createDatabase, postgresRunning, type TestDatabase } from './support/postgres.js';
import { type Receiver, startReceiver } from './support/receiver.js';
import { checkoutSession, notification } from './support/stripe.js';
import { freePort } from './support/ports.js';

const SECRET = 'sk_multi_node_test';
const WEBHOOK_SECRET = 'whsec_multi_node_test';
const DATABASE = 'multi_node';
const LEASE_TTL_MS = 1500;
const stripe = new Stripe('sk_test_dummy');

interface Node {
  url: string;
  child: ChildProcess;
  output: () => string;
}


const running = new Set<ChildProcess>();

async function startNode(env: Record<string, string>): Promise<Node> {
  const port = await freePort();
  // Each node's ingest log is its own directory.
  const ingestLogDir = join(dirname(env.DATABASE_PATH!), `ingest-log-${port}`);
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, INGEST_LOG_DIR: ingestLogDir, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => { output += chunk; });
  child.stderr!.on('data', (chunk) => { output += chunk; });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600 && child.exitCode === null; i++) {
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) return { url, child, output: () => output };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`a node did not start:\n${output}`);
}

const post = (node: Node, path: string, body: unknown) => fetch(`${node.url}${path}`, {
  method: 'POST', headers: { authorization: `Bearer ${SECRET}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
});

/** What a load balancer does for an idempotent request: the next node when one does not answer. */
async function postAnyNode(nodes: Node[], first: number, path: string, body: unknown): Promise<Response> {
  for (let i = 0; i < nodes.length; i++) {
    const res = await post(nodes[(first + i) % nodes.length]!, path, body).catch(() => null);
    if (res && res.status < 500) return res;
  }
  throw new Error(`no node answered ${path}`);
}

describe.skipIf(!CHDB_INSTALLED || !await postgresRunning())('three API nodes on one PostgreSQL and one ClickHouse', () => {
  let dir: string;
  let chdb: ChdbServer;
  let database: TestDatabase;
  let nodes: Node[];
  let control: pg.Client;
  let clickhouse: ClickHouseClient;
  let hook: Receiver;
  let workspaceId: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'multi-node-'));
    chdb = await startChdbServer(join(dir, 'clickhouse'));
    database = await createDatabase();
    hook = await startReceiver('answer');
    const env = {
      DATABASE_URL: database.url, ANALYTICS_STORE: 'clickhouse', CLICKHOUSE_URL: chdb.url, CLICKHOUSE_DATABASE: DATABASE,
      BOOTSTRAP_SECRET_KEY: SECRET, BOOTSTRAP_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, ALLOW_PRIVATE_DESTINATIONS: '1',
      SCHEDULER_INTERVAL_MS: '200', LEASE_TTL_MS: String(LEASE_TTL_MS), DELIVERY_TIMEOUT_MS: '60000',
      DATABASE_PATH: join(dir, 'unused.duckdb'),
    };
    // Started together: they migrate and bootstrap the one workspace at the same time.
    nodes = await Promise.all([0, 1, 2].map(() => startNode(env)));
    control = new pg.Client({ connectionString: database.url });
    await control.connect();
    clickhouse = await connectClickHouse({ url: chdb.url, path: '', database: DATABASE });
    workspaceId = ((await (await fetch(`${nodes[0]!.url}/v1/workspace`, { headers: { authorization: `Bearer ${SECRET}` } })).json()) as { id: string }).id;
  }, 180_000);

  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    await control?.end();
    await clickhouse?.close();
    hook?.close();
    await chdb?.stop();
    await database?.release();
    await rm(dir, { recursive: true, force: true });
  });

  const count = async (sql: string, params: unknown[] = []) => Number((await control.query<{ n: string }>(sql, params)).rows[0]!.n);
  const events = async (name: string) => Number((await (await clickhouse.query({
    query: `SELECT count() AS n FROM ${DATABASE}.events WHERE event_name = {name:String}`, query_params: { name }, format: 'JSONEachRow',
  })).json<{ n: string }>())[0]!.n);

  /** Users `from`..`to`-1: each user's events sent to every node at once, with their message ids. */
  async function sendUsers(from: number, to: number, live: Node[]): Promise<void> {
    const sends: Promise<Response>[] = [];
    for (let i = from; i < to; i++) {
      for (let n = 0; n < live.length; n++) {
        sends.push(postAnyNode(live, n, '/v1/events', { batch: [
          { event_name: 'signup', external_id: `u_${i}`, email: `u_${i}@example.com`, message_id: `m_signup_${i}` },
          { event_name: 'login', external_id: `u_${i}`, visitor_id: `v_${i}`, message_id: `m_login_${i}` },
        ] }));
        sends.push(postAnyNode(live, n + 1, '/v1/pageviews', { visitor_id: `v_${i}`, url: 'https://shop.example/pricing', referrer: 'https://www.google.com/' }));
      }
    }
    for (const res of await Promise.all(sends)) expect(res.status, await res.clone().text()).toBe(200);
  }

  it('stores each new user once, each event once and each notification once, whatever node gets them', async () => {
    expect(await count('SELECT count(*) AS n FROM workspaces')).toBe(1);
    await sendUsers(0, 20, nodes);
    expect(await count("SELECT count(*) AS n FROM persons WHERE external_id LIKE 'u\\_%'")).toBe(20);
    expect(await count("SELECT count(DISTINCT external_id) AS n FROM persons WHERE external_id LIKE 'u\\_%'")).toBe(20);
    expect(await count("SELECT count(*) AS n FROM visitors WHERE visitor_id LIKE 'v\\_%'")).toBe(20);
    expect(await events('signup')).toBe(20);
    expect(await events('login')).toBe(20);

    // Each notification delivered to every node at once: applied once, the customer linked to its user.
    const deliveries: Promise<Response>[] = [];
    for (let i = 0; i < 8; i++) {
      const payload = JSON.stringify(notification('checkout.session.completed', checkoutSession(`cus_multi_${i}`, { tr_user_id: `u_${i}` }, `u_${i}@example.com`)));
      for (const node of nodes) {
        deliveries.push(fetch(`${node.url}/v1/webhooks/stripe/${workspaceId}`, {
          method: 'POST', body: payload,
          headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
        }));
      }
    }
    for (const res of await Promise.all(deliveries)) expect(res.status, await res.clone().text()).toBe(200);
    expect(await count('SELECT count(*) AS n FROM processed_notifications')).toBe(8);
    expect(await count("SELECT count(*) AS n FROM payment_customers WHERE link_state = 'linked'")).toBe(8);
  }, 120_000);

  it('resolves Segment batches sent to every node at once, each from its own log: each user once, each message once', async () => {
    const auth = `Basic ${Buffer.from(`${SECRET}:`).toString('base64')}`;
    const sends: Promise<Response>[] = [];
    for (let i = 0; i < 15; i++) {
      const batch = [
        { type: 'identify', userId: `s_${i}`, anonymousId: `sv_${i}`, traits: { email: `s_${i}@example.com` }, messageId: `sm_identify_${i}` },
        { type: 'track', event: 'segment_signup', userId: `s_${i}`, anonymousId: `sv_${i}`, messageId: `sm_signup_${i}` },
        { type: 'page', anonymousId: `sv_${i}`, properties: { url: 'https://shop.example/', referrer: 'https://www.google.com/' }, messageId: `sm_page_${i}` },
      ];
      for (const node of nodes) {
        sends.push(fetch(`${node.url}/v1/batch`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ batch }) }));
      }
    }
    for (const res of await Promise.all(sends)) expect(res.status, await res.clone().text()).toBe(200);
    for (const node of nodes) {
      for (let i = 0; i < 300; i++) {
        const status = await (await fetch(`${node.url}/v1/ingest/status`, { headers: { authorization: `Bearer ${SECRET}` } })).json() as { backlog_events: number };
        if (status.backlog_events === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(await count("SELECT count(*) AS n FROM persons WHERE external_id LIKE 's\\_%'")).toBe(15);
    expect(await count("SELECT count(*) AS n FROM visitors v JOIN persons p ON p.person_key = v.person_key WHERE v.visitor_id LIKE 'sv\\_%' AND p.external_id = 's_' || substr(v.visitor_id, 4)")).toBe(15);
    expect(await events('segment_signup')).toBe(15);
    const pageviews = await (await clickhouse.query({ query: `SELECT count() AS n FROM ${DATABASE}.pageviews WHERE url = 'https://shop.example/'`, format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(pageviews[0]!.n)).toBe(15);
  }, 120_000);

  it('refreshes an audience due on every node once, and delivers its diff once, in order', async () => {
    const res = await post(nodes[0]!, '/v1/audiences', {
      name: 'signups', refresh_every: '1h', destinations: [{ type: 'webhook', url: hook.url, secret: 'shh' }],
      criteria_json: { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const id = ((await res.json()) as { id: string }).id;
    // Due at once: every node's scheduler (200 ms) sees it; one refresh, one delivery.
    await hook.when(() => hook.accepted.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await count('SELECT count(*) AS n FROM audience_snapshots WHERE audience_id = $1', [id])).toBe(1);
    expect(hook.accepted.map((p) => [p.snapshot_id, p.page, p.added.length, p.removed.length])).toEqual([[hook.accepted[0]!.snapshot_id, 0, 20, 0]]);
    expect(await count("SELECT count(*) AS n FROM audience_deliveries WHERE audience_id = $1 AND status = 'delivered'", [id])).toBe(1);
  }, 60_000);

  it('loses nothing acknowledged when a node is killed mid-run, and its delivery resumes on another node once its lease expires', async () => {
    const [id] = (await control.query<{ audience_id: string }>('SELECT audience_id FROM audiences')).rows.map((r) => r.audience_id);
    // Traffic over all three nodes while node 2 is killed: requests it dropped go to the next node.
    const traffic = sendUsers(20, 40, nodes);
    await new Promise((resolve) => setTimeout(resolve, 50));
    nodes[2]!.child.kill('SIGKILL');
    await traffic;
    const live = nodes.slice(0, 2);
    expect(await count("SELECT count(DISTINCT external_id) AS n FROM persons WHERE external_id LIKE 'u\\_%'")).toBe(40);
    expect(await count("SELECT count(*) AS n FROM persons WHERE external_id LIKE 'u\\_%'")).toBe(40);
    // A unit the dead node committed but had not inserted into ClickHouse is in the outbox: a live
    // node's sweeper inserts it (every 30 s), once.
    for (let i = 0; i < 80 && (await events('signup') < 40 || await events('login') < 40); i++) await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await events('signup')).toBe(40);
    expect(await events('login')).toBe(40);

    // A refresh and its delivery; the receiver holds the delivery's request, and the node holding the
    // delivery's lease is killed.
    hook.mode = 'hang';
    const refreshed = await post(live[1]!, `/v1/audiences/${id}/refresh`, {});
    expect(refreshed.status, await refreshed.clone().text()).toBe(200);
    await hook.when(() => hook.held.length === 1);
    const holders = (await control.query<{ holder: string }>("SELECT holder FROM leases WHERE name LIKE 'deliver:%'")).rows;
    expect(holders).toHaveLength(1);
    const pid = Number(holders[0]!.holder.split(':')[1]);
    const holder = live.find((n) => n.child.pid === pid)!;
    expect(holder).toBeDefined();
    holder.child.kill('SIGKILL');
    hook.held.splice(0).forEach(({ res }) => res.destroy());
    hook.mode = 'answer';
    // The other node's scheduler takes the pending delivery once the dead node's lease has expired.
    await hook.when(() => hook.accepted.length === 2);
    const [first, second] = hook.accepted;
    expect(second!.snapshot_id).toBeGreaterThan(first!.snapshot_id);
    expect([second!.page, second!.added.length, second!.removed.length]).toEqual([0, 20, 0]);
    expect(new Set(hook.members()).size).toBe(40);
    await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_TTL_MS));
    expect(await count("SELECT count(*) AS n FROM audience_deliveries WHERE audience_id = $1 AND status = 'pending'", [id])).toBe(0);
    expect(hook.accepted).toHaveLength(2);
    // Nothing is held by the dead nodes once their leases ran out.
    expect(await count('SELECT count(*) AS n FROM leases WHERE expires_at > now()')).toBe(0);
  }, 120_000);
});
