// The people bench's persons and customers written the way the service writes them: persons and
// their visitors through identity resolution (on DuckDB the ingest feature itself, events of 500
// with the groups' commits; on PostgreSQL identity resolution in a transaction of its own, since
// PostgreSQL control state runs beside ClickHouse only), customers through the payment writes.
// Nothing here is bulk SQL, so whatever the writes keep (search columns, indexes) is as live data has it.

import { createHash } from 'node:crypto';
import { Ingest } from '../../src/ingest/ingest.js';
import { resolveIdentities, type IdentityInput } from '../../src/ingest/identity.js';
import type { UnitOfWork } from '../../src/store/analytics.js';
import { type CustomerRecord, writeCustomers } from '../../src/store/control/payments.js';
import type { ControlStore } from '../../src/store/control/store.js';
import { NO_COPIES } from '../../src/store/mirror.js';
import type { Stores } from '../../src/store/open.js';

export const DOMAINS = ['example.com', 'gmail.com', 'acme.io', 'mail.org', 'corp.net'];
export const emailOf = (g: number) => `user${g}@${DOMAINS[g % 5]}`;
/** A 14-character id from g, as unique as g (as the bulk rows' `'cus_' || substr(md5(g), 1, 14)`). */
export const customerIdOf = (g: number) => `cus_${createHash('md5').update(String(g)).digest('hex').slice(0, 14)}`;
const BATCH = 500;
const IN_FLIGHT = 8;

/** Sends `count` batches made by `batch(i)` with IN_FLIGHT in flight, reporting progress now and then. */
async function send(count: number, batch: (i: number) => Promise<unknown>, log: (line: string) => void): Promise<void> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < count) {
      const i = next++;
      await batch(i);
      if (i > 0 && i % 200 === 0) log(`  ${(i * BATCH).toLocaleString('en-US')} written, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  }));
}

/** Person g's identity as an event carries it (a user id, an email, its visitor), and the deferred payers' own visitors. */
const identityOf = (g: number, persons: number): { user_id?: string; email?: string; visitor_id: string } => (g <= persons
  ? { user_id: `user_${g}`, email: emailOf(g), visitor_id: `v_${g}` }
  : { visitor_id: `v_${g}` });

/** The deferred payers' anonymous visitors: one per person g with g % 120 = 60, numbered past the persons. */
const deferredVisitors = (persons: number) => Array.from({ length: Math.floor((persons + 60) / 120) }, (_, i) => persons + 60 + i * 120);

/** Persons 1..persons and their visitors through the ingest feature's events (DuckDB's stores). */
export async function ingestPersons(stores: Stores, ws: string, persons: number, log: (line: string) => void): Promise<void> {
  const ingest = new Ingest(stores);
  const all = [...Array.from({ length: persons }, (_, i) => i + 1), ...deferredVisitors(persons)];
  await send(Math.ceil(all.length / BATCH), (i) => ingest.events(ws, all.slice(i * BATCH, (i + 1) * BATCH)
    .map((g) => ({ event_name: 'signup', ...identityOf(g, persons) }))), log);
}

/** The same persons through identity resolution, a transaction a batch (PostgreSQL's control store). */
export async function resolvePersons(control: ControlStore, ws: string, persons: number, log: (line: string) => void): Promise<void> {
  const all = [...Array.from({ length: persons }, (_, i) => i + 1), ...deferredVisitors(persons)];
  await send(Math.ceil(all.length / BATCH), (i) => control.transaction(async (tx) => {
    const now = new Date();
    const inputs = all.slice(i * BATCH, (i + 1) * BATCH).map((g): IdentityInput => {
      const { user_id, email, visitor_id } = identityOf(g, persons);
      return { external_id: user_id, email, visitor_id, at: now, event: true };
    });
    // Identity resolution writes the control rows and their copies only: no analytical writes here.
    await resolveIdentities(control, { control: tx, mirror: NO_COPIES } as unknown as UnitOfWork, ws, inputs, now);
  }), log);
}

/**
 * The customers of ~8 % of the persons (g % 12 = 0) through the payment writes, as the bulk rows:
 * 1 in 10 attributed to no one (`payer…@example.com`), 1 in 10 deferred on a visitor of its own,
 * 4 in 10 owned through their visitor only (linked), the others with their person (linked).
 */
export async function writePayers(control: ControlStore, ws: string, persons: number): Promise<void> {
  const keys = new Map<string, number>();
  // By key ranges: a million visitors in one statement ran past PostgreSQL's statement timeout.
  const [top] = await control.all('SELECT coalesce(max(visitor_key), 0) AS top FROM visitors WHERE workspace_id = $1', [ws]);
  for (let from = 0; from <= Number(top!.top); from += 100_000) {
    const rows = await control.all(`SELECT visitor_id, visitor_key, person_key FROM visitors WHERE workspace_id = $1 AND visitor_key BETWEEN $2 AND $3`,
      [ws, from, from + 99_999]);
    for (const r of rows) {
      keys.set(r.visitor_id as string, Number(r.visitor_key));
      if (r.person_key !== null) keys.set(`p${r.visitor_id as string}`, Number(r.person_key));
    }
  }
  const customers = Array.from({ length: Math.floor(persons / 12) }, (_, i): CustomerRecord => {
    const g = (i + 1) * 12;
    const [unowned, deferred, throughVisitor] = [g % 120 === 0, g % 120 === 60, g % 24 === 0];
    return {
      customer_id: customerIdOf(g), email: unowned ? `payer${g}@example.com` : emailOf(g),
      customer_email: null, customer_email_created: null, payment_email: null, payment_email_created: null,
      person_key: unowned || deferred || throughVisitor ? null : keys.get(`pv_${g}`)!,
      visitor_key: unowned ? null : keys.get(deferred ? `v_${persons + g}` : `v_${g}`) ?? null,
      tr_user_id: null, tr_visitor_id: null, tr_user_id_created: null, tr_visitor_id_created: null,
      link_state: unowned ? 'unmatched' : deferred ? 'deferred' : 'linked',
    };
  });
  for (let i = 0; i < customers.length; i += 1000) {
    await control.transaction((tx) => writeCustomers({ control: tx, mirror: NO_COPIES }, ws, customers.slice(i, i + 1000), [], [], new Date()));
  }
}
