// The Arrow export against the CSV one, through the app on each engine: awkward values (quotes,
// commas, line breaks, non-ASCII, empty strings beside NULLs) and a snapshot larger than one record
// batch; DuckDB's CSV-to-Arrow reading on its own, fed in pieces of any size; and DuckDB's COPY
// read while it writes.

import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { RecordBatchReader, tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARROW_CSV_OPTIONS, arrowFromCsv } from '../src/store/duckdb/arrow.js';
import { Store } from '../src/store/duckdb/db.js';
import type { Dataset, EventRow } from '../src/store/layout.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-01T00:00:00Z');
const COLUMNS = ['person_id', 'visitor_id', 'external_id', 'email'];
/** Values that CSV quotes, escapes or could confuse with NULL, and a long one. */
const AWKWARD = ['a,b', 'say "hi"', '', 'Ärger über 🎉', null, 'line\nbreak\r\nend', '"', ',', 'x'.repeat(300), 'plain'];
/** More members than one record batch of either engine (65,536 rows on DuckDB, a 65,409-row block on ClickHouse). */
const PERSONS = 70_000;
const ANONYMOUS = 500;

type Row = Record<string, string | null>;

function dataset(): Partial<Dataset> {
  const persons = Array.from({ length: PERSONS }, (_, i) => ({
    person_id: `p${i}`, external_id: AWKWARD[i % AWKWARD.length]!, email: i % 7 === 0 ? null : `${AWKWARD[(i >> 1) % AWKWARD.length] ?? ''}${i}@exämple.com`,
    name: null, traits: null, created_at: AT,
  }));
  const visitors = Array.from({ length: ANONYMOUS }, (_, i) => ({ visitor_id: i % 2 ? `v${i}` : `v "${i}", ü`, person_id: null, first_seen_at: AT }));
  const owners = [...persons.map((p) => ({ person_id: p.person_id, visitor_id: null })), ...visitors.map((v) => ({ person_id: null, visitor_id: v.visitor_id }))];
  const events = owners.map((owner, i): EventRow => ({ event_id: `e${i}`, event_name: 'signup', ts: AT, properties: '{}', ...owner }));
  return { persons, visitors, events };
}

/** Rows of a CSV file as DuckDB reads them, a quoted empty string kept apart from NULL. */
async function csvRows(csv: Buffer, header: boolean, columns = COLUMNS): Promise<Row[]> {
  const dir = await mkdtemp(join(tmpdir(), 'member-export-'));
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await writeFile(join(dir, 'm.csv'), csv);
    const read = `read_csv('${join(dir, 'm.csv')}', all_varchar = true, allow_quoted_nulls = false, header = ${header},
      columns = {${columns.map((c) => `'${c}': 'VARCHAR'`).join(', ')}})`;
    return (await conn.runAndReadAll(`SELECT * FROM ${read}`)).getRowObjectsJS() as Row[];
  } finally {
    conn.closeSync();
    db.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Rows of a Parquet file as DuckDB reads them. */
async function parquetRows(parquet: Buffer): Promise<Row[]> {
  const dir = await mkdtemp(join(tmpdir(), 'member-export-'));
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await writeFile(join(dir, 'm.parquet'), parquet);
    return (await conn.runAndReadAll(`SELECT * FROM read_parquet('${join(dir, 'm.parquet')}')`)).getRowObjectsJS() as Row[];
  } finally {
    conn.closeSync();
    db.closeSync();
    await rm(dir, { recursive: true, force: true });
  }
}

const arrowRows = (ipc: Uint8Array): Row[] => tableFromIPC(ipc).toArray().map((r) => ({ ...r.toJSON() }) as Row);

describe.each(ENGINES)('%s: member exports', (engine) => {
  let t: TestApp;
  let audience: string;
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });

  beforeAll(async () => {
    t = await startTestApp({ engine, at: AT });
    await importRows(t, dataset());
    const created = await t.post('/v1/audiences', {
      name: 'signed up', refresh_every: '1d',
      criteria_json: { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
    });
    audience = created.json().id;
    expect((await t.post(`/v1/audiences/${audience}/refresh`, {})).json()).toMatchObject({ status: 'ready', member_count: PERSONS + ANONYMOUS });
  }, 60_000);
  afterAll(() => t?.close());

  it('exports the same rows as Arrow as CSV, in record batches of nullable Utf8 columns', async () => {
    const arrow = await get(`/v1/audiences/${audience}/members?format=arrow`);
    expect(arrow.statusCode).toBe(200);
    const batches = [...RecordBatchReader.from(arrow.rawPayload)];
    expect(batches.length).toBeGreaterThan(1);
    const table = tableFromIPC(arrow.rawPayload);
    expect(table.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual(COLUMNS.map((c) => [c, 'Utf8', true]));

    const rows = arrowRows(arrow.rawPayload);
    expect(rows).toEqual(await csvRows((await get(`/v1/audiences/${audience}/members?format=csv`)).rawPayload, true));
    // What the CSV could hide: empty strings and NULLs apart, the values byte for byte.
    const persons = new Map(dataset().persons!.map((p) => [p.person_id, p]));
    for (const row of rows.filter((r) => r.person_id !== null).slice(0, 2 * AWKWARD.length)) {
      const person = persons.get(row.person_id!)!;
      // Emails are stored lower-cased.
      expect([row.external_id, row.email]).toEqual([person.external_id, person.email?.toLowerCase() ?? null]);
    }
    expect(rows.filter((r) => r.person_id === null).map((r) => r.visitor_id).sort()).toEqual(dataset().visitors!.map((v) => v.visitor_id).sort());
    // In the order of the JSON listing.
    expect(rows.slice(0, 600)).toEqual((await get(`/v1/audiences/${audience}/members?limit=600`)).json().data);
  });

  it('carries each member\'s split in every format once the audience has splits, as the members pages place it', async () => {
    const patched = await t.app.inject({
      method: 'PATCH', url: `/v1/audiences/${audience}`, headers: { authorization: `Bearer ${t.ws.secret_key}` },
      payload: { splits: [{ name: 'arm', percent: 90 }, { name: 'holdout', percent: 10 }] },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const arrow = await get(`/v1/audiences/${audience}/members?format=arrow`);
    expect(tableFromIPC(arrow.rawPayload).schema.fields.map((f) => f.name)).toEqual([...COLUMNS, 'split']);
    const rows = arrowRows(arrow.rawPayload);
    expect(rows).toEqual(await csvRows((await get(`/v1/audiences/${audience}/members?format=csv`)).rawPayload, true, [...COLUMNS, 'split']));
    expect(rows).toEqual(await parquetRows((await get(`/v1/audiences/${audience}/members?format=parquet`)).rawPayload));
    expect(rows.slice(0, 1000)).toEqual((await get(`/v1/audiences/${audience}/members?limit=1000`)).json().data);
    const holdout = rows.filter((r) => r.split === 'holdout').length;
    expect(holdout + rows.filter((r) => r.split === 'arm').length).toBe(PERSONS + ANONYMOUS);
    // 10 % of 70,500 within about five standard deviations (√(70,500 · 0.1 · 0.9) ≈ 80).
    expect(Math.abs(holdout - 7050)).toBeLessThan(400);
  });
});

describe('DuckDB COPY read into Arrow', () => {
  let dir: string;
  let csv: Buffer;
  let expected: Row[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'arrow-csv-'));
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const values = AWKWARD.map((v) => (v === null ? 'NULL' : `'${v.replace(/'/g, "''")}'`));
      // 97 rows of every pairing of the awkward values, and one value longer than a read chunk.
      await conn.run(`CREATE TABLE t AS SELECT i, list_value(${values.join(', ')})[i % ${values.length} + 1] AS a,
        list_value(${values.join(', ')})[(i // ${values.length}) % ${values.length} + 1] AS b,
        CASE WHEN i = 50 THEN repeat('é', 40000) ELSE NULL END AS c, 'r' || i AS d FROM range(97) r(i)`);
      await conn.run(`COPY (SELECT a, b, c, d FROM t ORDER BY i) TO '${join(dir, 't.csv')}' (${ARROW_CSV_OPTIONS})`);
      expected = (await conn.runAndReadAll('SELECT a, b, c, d FROM t ORDER BY i')).getRowObjectsJS() as Row[];
    } finally {
      conn.closeSync();
      db.closeSync();
    }
    csv = await readFile(join(dir, 't.csv'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  async function transcode(pieces: Iterable<Uint8Array> | AsyncIterable<Uint8Array>, batchRows?: number): Promise<Buffer> {
    const out: Buffer[] = [];
    for await (const bytes of arrowFromCsv(pieces, ['a', 'b', 'c', 'd'], batchRows)) out.push(bytes);
    return Buffer.concat(out);
  }
  const split = (bytes: Buffer, size: number) => Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size));

  it('reads the same rows whatever the size of the pieces the file arrives in', async () => {
    expect(arrowRows(await transcode(createReadStream(join(dir, 't.csv'))))).toEqual(expected);
    for (const size of [1, 2, 3, 5, 16, 4096]) expect(arrowRows(await transcode(split(csv, size), 10))).toEqual(expected);
  });

  it('keeps every byte of a piece that holds several batches and a value longer than a batch\'s first buffer', async () => {
    // Row 50's value (80 kB) opens a batch in the middle of the piece: its column starts at 64 kB.
    expect(arrowRows(await transcode([csv], 10))).toEqual(expected);
  });

  it('writes a record batch per batchRows rows, and the last one shorter', async () => {
    const batches = [...RecordBatchReader.from(await transcode([csv], 10))];
    expect(batches.map((b) => b.numRows)).toEqual([...Array(9).fill(10), 7]);
  });

  it('writes the schema alone for no rows', async () => {
    const table = tableFromIPC(await transcode([]));
    expect([table.numRows, table.schema.fields.map((f) => f.name)]).toEqual([0, ['a', 'b', 'c', 'd']]);
  });

  it('refuses what COPY with these options does not write', async () => {
    for (const bad of ['"a","b","c"\n', 'a,b,c,d,e\n', '"a"x,"b","c","d"\n', 'a"x,b,c,d\n', '"a","b","c","d"']) {
      await expect(transcode([Buffer.from(bad)])).rejects.toThrow(/unexpected CSV from COPY/);
    }
  });
});

describe('DuckDB COPY read while it writes', () => {
  let store: Store;
  const ROWS = 'SELECT i, md5(i::VARCHAR) AS h FROM range(500000) r(i) ORDER BY i';
  const openFiles = async () => (await readdir('/proc/self/fd')).length;

  beforeAll(async () => {
    store = await Store.open(':memory:');
  });
  afterAll(() => store.close());

  it('streams every byte COPY writes, in order', async () => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of await store.copyStream(ROWS, [], 'FORMAT csv, HEADER false')) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    const lines = Buffer.concat(chunks).toString().split('\n');
    expect(lines).toHaveLength(500_001);
    expect(lines[0]).toBe('0,cfcd208495d565ef66e7dff9f98764da');
    expect(lines.findIndex((line, i) => !line.startsWith(`${i},`))).toBe(500_000);
  });

  it('throws a failed query before any byte', async () => {
    const before = await openFiles();
    await expect(store.copyStream('SELECT * FROM no_such_table', [], 'FORMAT csv')).rejects.toThrow(/no_such_table/);
    expect(await openFiles()).toBe(before);
  });

  it('stops COPY and lets its file go when the reader stops early', async () => {
    const before = await openFiles();
    const iterator = (await store.copyStream(ROWS, [], 'FORMAT csv'))[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    await iterator.return!();
    expect(await openFiles()).toBe(before);
    // The store is free for the next statement.
    expect(await store.query('SELECT 42 AS n')).toEqual([{ n: 42 }]);
  });
});
