// What ads consent costs a delivery run: the consent pass that follows each refresh of an audience
// with an ad platform (audiences/consent.ts), which reads every member of the held snapshot with its
// `$consent.ads` from the control store.
//   npx tsx bench/consent.bench.ts [--persons 20000] [--rounds 7] [--withdrawals 100]
// Persons are written through the API (batches of 500 signup events with email and traits), 1 % of
// them refusing ads. One audience (signed up) delivers to the Meta double (test/support/platforms)
// on in-memory DuckDB. Rounds alternate: *unchanged* is a refresh and its delivery run when nobody's
// consent changed (the audience does not change: the pass alone); *withdrawals* the same after
// `--withdrawals` persons withdrew ads consent (the pass sends one removal request).

import { parseArgs } from 'node:util';
import { buildApp } from '../src/http/app.js';
import { openStores } from '../src/store/open.js';
import { Workspaces } from '../src/store/control/workspaces.js';
import { AUDIENCE_DEFAULTS } from '../src/audiences/service.js';
import { CREDENTIALS, startAdPlatforms } from '../test/support/platforms/index.js';

const { values: args } = parseArgs({ options: {
  persons: { type: 'string', default: '20000' },
  rounds: { type: 'string', default: '7' },
  withdrawals: { type: 'string', default: '100' },
} });
const [persons, rounds, withdrawals] = [Number(args.persons), Number(args.rounds), Number(args.withdrawals)];

const platforms = await startAdPlatforms({ metaAudiences: ['9001'], customer: '1234567890', lists: ['1'] });
const stores = await openStores({ analyticsStore: 'duckdb', databasePath: ':memory:' });
const ws = await new Workspaces(stores.control).create('bench');
const app = await buildApp({ stores, estimateBudgetMs: 5000, audiences: { delivery: { ...AUDIENCE_DEFAULTS.delivery, ...platforms.delivery, allowPrivateDestinations: true } } });
const inject = async (method: 'POST', url: string, body: unknown) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${ws.secret_key}`, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};

const event = (i: number, ads: boolean | null) => ({
  event_name: 'signup', user_id: `u_${i}`, email: `p${i}@example.com`, ...(ads === null ? {} : { traits: { $consent: { ads, analytics: true } } }),
});
for (let from = 0; from < persons; from += 500) {
  await inject('POST', '/v1/events', { batch: Array.from({ length: Math.min(500, persons - from) }, (_, k) => event(from + k, (from + k) % 100 === 0 ? false : null)) });
}
const audience = await inject('POST', '/v1/audiences', {
  name: 'signed up', criteria_json: { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
  destinations: [{ type: 'meta_custom_audience', audience_id: '9001', access_token: CREDENTIALS.meta }],
}) as { id: string };

async function refreshAndDeliver(): Promise<number> {
  const t0 = performance.now();
  await inject('POST', `/v1/audiences/${audience.id}/refresh`, {});
  const t1 = performance.now();
  await app.audiences.deliverer.idle();
  if (process.env.SPLIT) console.log(`refresh ${(t1 - t0).toFixed(0)} ms, delivery run ${(performance.now() - t1).toFixed(0)} ms`);
  return performance.now() - t0;
}
await refreshAndDeliver(); // the first delivery: every member with consent
console.log(`members on Meta after the first delivery: ${platforms.meta.audiences.get('9001')!.size} of ${persons}`);

const times = { unchanged: [] as number[], withdrawals: [] as number[] };
let next = 1;
for (let round = 0; round < rounds; round++) {
  times.unchanged.push(await refreshAndDeliver());
  const batch = Array.from({ length: withdrawals }, () => event(next++ % persons, false));
  for (let from = 0; from < batch.length; from += 500) await inject('POST', '/v1/events', { batch: batch.slice(from, from + 500) });
  times.withdrawals.push(await refreshAndDeliver());
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`persons ${persons}, rounds ${rounds}: refresh + delivery run p50 unchanged ${median(times.unchanged).toFixed(0)} ms, `
  + `after ${withdrawals} withdrawals ${median(times.withdrawals).toFixed(0)} ms; Meta now holds ${platforms.meta.audiences.get('9001')!.size}`);
await app.close();
await stores.close();
await platforms.close();
