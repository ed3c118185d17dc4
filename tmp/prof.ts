import { connectClickHouse } from '../src/store/clickhouse/client.js';
const c = await connectClickHouse({ path: 'data/bench/1000000-10000000-2000000.chdb', database: 'bench' });
async function t(label: string, q: string) {
  const t0 = performance.now();
  let r: unknown;
  for (let i = 0; i < 3; i++) r = await (await c.query({ query: q, format: 'JSONEachRow' })).json();
  console.log(label, ((performance.now() - t0) / 3).toFixed(1), 'ms', JSON.stringify(r).slice(0, 100));
}
await t('count visitors rows', "SELECT count() FROM bench.visitors");
await t('linked visitors argMax', "SELECT count() FROM (SELECT visitor_key, s.1 AS person_key FROM (SELECT visitor_key, argMax(tuple(person_key), version) AS s FROM bench.visitors WHERE workspace_id = 'ws_bench' GROUP BY visitor_key) WHERE person_key != 0)");
await t('linked visitors FINAL', "SELECT count() FROM bench.visitors FINAL WHERE workspace_id = 'ws_bench' AND person_key != 0");
await t('signup owners', "SELECT count() FROM (SELECT person_key, visitor_key FROM bench.events WHERE workspace_id = 'ws_bench' AND event_name = 'signup' GROUP BY person_key, visitor_key)");
await t('signup owners anon', "SELECT countIf(person_key = 0), count() FROM bench.events WHERE workspace_id = 'ws_bench' AND event_name = 'signup'");
await t('select 1', "SELECT 1");
await c.close();
