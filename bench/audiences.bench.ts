// Audience refresh, snapshot diff and member exports on the 10 M-event estimate fixture (run
// `npm run bench` once first). An audience of ~500 k people (viewed an item in 120 days), refreshed twice (the
// second time 30 days later, so its window rolls and the diff is real), then exported.
//   npx tsx bench/audiences.bench.ts

import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { exportMembers, type ExportFormat } from '../src/audiences/export.js';
import { Refresher } from '../src/audiences/refresh.js';
import { AudienceResource } from '../src/audiences/resource.js';
import { DEFAULT_NOW } from '../fixtures/generate.js';
import { openStores } from '../src/store/open.js';

const dbPath = join('data', 'bench', '1000000-10000000-2000000.duckdb');
if (!existsSync(dbPath)) throw new Error(`no ${dbPath}: run \`npm run bench\` first`);
const WS = 'ws_bench';
const stores = await openStores({ analyticsStore: 'duckdb', databasePath: dbPath });
const DAY = 86_400_000;
console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}; node ${process.version}; dataset: ${dbPath}\n`);

const resource = new AudienceResource(stores, () => DEFAULT_NOW);
const audience = await resource.create(WS, {
  name: 'bench: viewed an item in the last 120 days',
  criteria_json: { version: 1, root: {
    source: 'product_event', name: 'view_item', occurrence: { op: 'did', count: null, window: { kind: 'last_n_days', n: 120 } },
  } },
  refresh_every: '1h',
});
const refresher = new Refresher(stores, 600_000);

console.log('| refresh | evaluated at | members | added | removed | seconds |');
console.log('|---|---|---:|---:|---:|---:|');
let snapshotId = 0;
for (const [label, at] of [['first (all added)', DEFAULT_NOW], ['second, 30 days later (window rolled)', new Date(DEFAULT_NOW.getTime() + 30 * DAY)]] as const) {
  const t0 = performance.now();
  const outcome = await refresher.refresh(WS, audience.id, at);
  const seconds = (performance.now() - t0) / 1000;
  if (!outcome.ok) throw new Error(outcome.error);
  snapshotId = outcome.snapshot.snapshot_id;
  const s = outcome.snapshot;
  console.log(`| ${label} | ${at.toISOString().slice(0, 10)} | ${s.member_count.toLocaleString('en-US')} | ${s.added.toLocaleString('en-US')} | ${s.removed.toLocaleString('en-US')} | ${seconds.toFixed(2)} |`);
}

console.log('\n| export | rows | bytes | seconds | rows/s |');
console.log('|---|---:|---:|---:|---:|');
const members = (await resource.get(WS, audience.id)).member_count ?? 0;
for (const format of ['csv', 'parquet', 'arrow'] as ExportFormat[]) {
  const t0 = performance.now();
  let bytes = 0;
  for await (const chunk of await exportMembers(stores.analytics, WS, snapshotId, format, null)) bytes += (chunk as Buffer).length;
  const seconds = (performance.now() - t0) / 1000;
  console.log(`| ${format} | ${members.toLocaleString('en-US')} | ${(bytes / 2 ** 20).toFixed(1)} MiB | ${seconds.toFixed(2)} | ${Math.round(members / seconds).toLocaleString('en-US')} |`);
}

await resource.remove(WS, audience.id);
await stores.close();
