// The generated dataset of the estimate benchmarks, imported once into a DuckDB file per size:
// data/fixtures/<people>-<events>-<pageviews>/ and data/bench/<same>.duckdb.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_NOW, generateFixtures } from '../../fixtures/generate.js';
import { Store } from '../../src/store/duckdb/db.js';
import { importParquetDir } from '../../src/store/duckdb/import.js';

export const WS = 'ws_bench';
export const AT = DEFAULT_NOW;

export interface BenchSizes {
  people: number;
  events: number;
  pageviews: number;
}

/** The sizes from `--people`, `--events`, `--pageviews` (default 1 M, 10 M, 2 M), and the other flags. */
export function benchArgs(extra: Record<string, { type: 'boolean' | 'string'; default?: boolean | string }> = {}) {
  const { values } = parseArgs({
    options: {
      people: { type: 'string', default: '1000000' },
      events: { type: 'string', default: '10000000' },
      pageviews: { type: 'string', default: '2000000' },
      ...extra,
    },
    strict: true,
  });
  const sizes: BenchSizes = { people: Number(values.people), events: Number(values.events), pageviews: Number(values.pageviews) };
  return { sizes, values: values as Record<string, string | boolean | undefined> };
}

export const sizeTag = (s: BenchSizes) => `${s.people}-${s.events}-${s.pageviews}`;
export const fixtureDir = (s: BenchSizes) => join('data', 'fixtures', sizeTag(s));

/** The DuckDB file of the dataset, generating and importing it on first use; `fresh` when just imported. */
export async function openBenchDatabase(sizes: BenchSizes, log: (line: string) => void): Promise<{ store: Store; fresh: boolean }> {
  const dir = fixtureDir(sizes);
  const dbPath = join('data', 'bench', `${sizeTag(sizes)}.duckdb`);
  if (!existsSync(join(dir, 'payment_events.parquet'))) {
    log(`generating fixtures in ${dir}`);
    await generateFixtures({ ...sizes, seed: 1, out: dir, log });
  }
  const fresh = !existsSync(dbPath);
  const store = await Store.open(dbPath);
  if (fresh) {
    const t0 = performance.now();
    await importParquetDir(store, WS, dir);
    log(`imported into ${dbPath} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  return { store, fresh };
}
