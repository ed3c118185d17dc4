// Validation latency of a 50-node tree (an `and` of 49 leaves with filters and windows).
//   npx tsx bench/validate.bench.ts

import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';
import { type PropertyCatalog, validateCriteria } from '../src/criteria/index.js';

const leaves = Array.from({ length: 49 }, (_, i) => {
  if (i % 3 === 0) {
    return { source: 'pageview', filter: { channel_category: { op: 'in', value: ['AI', 'Email'] }, path: { op: 'starts_with', value: '/blog' } },
      occurrence: { op: 'did', count: { op: '>=', value: 2 }, window: { kind: 'last_n_days', n: 30 } } };
  }
  if (i % 3 === 1) {
    return { source: 'product_event', name: 'view_item',
      filter: { 'payload.item.category': { op: '=', value: 'books' }, 'payload.item.price': { op: '>', value: 10 } },
      occurrence: { op: 'did', count: null, window: { kind: 'between', from: '2026-01-01', to: '2026-06-30T12:00:00Z' } } };
  }
  return { op: 'not', child: { source: 'payments', entity: 'subscription', predicate: { status: { op: 'in', value: ['canceled', 'unpaid'] } } } };
});
export const FIFTY_NODE_TREE = { version: 1, root: { op: 'and', children: leaves } };

export async function benchValidation(
  catalog: PropertyCatalog = { events: new Map([['view_item', new Set(['item', 'item.category', 'item.price'])]]), traits: new Set() },
): Promise<{ p50: string; p99: string; runs: number }> {
  if (!validateCriteria(FIFTY_NODE_TREE, catalog).ok) throw new Error('the 50-node tree should be valid');
  const bench = new Bench({ time: 3000 });
  bench.add('validate 50-node tree', () => { validateCriteria(FIFTY_NODE_TREE, catalog); });
  await bench.run();
  const r = bench.tasks[0]!.result;
  if (r.state !== 'completed') throw new Error(`validation bench ${r.state}`);
  return { p50: (r.latency.p50 * 1000).toFixed(1), p99: (r.latency.p99 * 1000).toFixed(1), runs: r.latency.samplesCount };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const r = await benchValidation();
  console.log(`validation of a 50-node tree: p50 ${r.p50} µs, p99 ${r.p99} µs (${r.runs} runs)`);
}
