// Reads on the DuckDB store (Store.query) keep their connections and prepared statements between
// calls: each read still sees every commit before it, reads at once never share a connection, and a
// failed read leaves the next ones answering.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../src/store/duckdb/db.js';

let store: Store;
const COUNT = 'SELECT count(*) AS n, max(external_id) AS last FROM persons WHERE workspace_id = $1';
const addPerson = (key: number) => store.transaction((tx) => tx.run(`INSERT INTO persons (workspace_id, person_key, person_id, external_id, traits, created_at, updated_at)
  VALUES ('ws_reads', $1, 'per_' || $1, 'ext_' || $1, '{}', now(), now())`, [key]));

describe('reads on kept connections', () => {
  beforeAll(async () => {
    store = await Store.open(':memory:', { threads: 1 });
  });
  afterAll(async () => {
    await store.close();
  });

  it('see every commit made before them, by a statement prepared before it', async () => {
    expect(await store.query(COUNT, ['ws_reads'])).toEqual([{ n: 0n, last: null }]);
    for (const key of [1, 2, 3]) {
      await addPerson(key);
      expect(await store.query(COUNT, ['ws_reads'])).toEqual([{ n: BigInt(key), last: `ext_${key}` }]);
    }
  });

  it('answer each its own parameters when many run at once', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => (i % 3) + 1);
    const read = (key: number) => store.query('SELECT external_id FROM persons WHERE workspace_id = $1 AND person_key = $2', ['ws_reads', key]);
    expect(await Promise.all(keys.map(read))).toEqual(keys.map((key) => [{ external_id: `ext_${key}` }]));
  });

  it('answer after a read that failed on the same statement', async () => {
    const sql = 'SELECT CAST($1 AS INTEGER) + 1 AS n';
    await expect(store.query(sql, ['not a number'])).rejects.toThrow();
    expect(await store.query(sql, ['41'])).toEqual([{ n: 42 }]);
  });
});
