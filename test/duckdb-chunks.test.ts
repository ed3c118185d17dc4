// Bulk appends through data chunks (src/store/duckdb/chunks.ts) read back as written: nulls in any
// chunk, several chunks, integers to 2^53 and instants from year 1 to 9999 exact.

import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { appendRows, constantInstant, constantText, instant, int64, text } from '../src/store/duckdb/chunks.js';

interface Row { id: string; note: string | null; n: number | null; at: Date | null }

describe('appends through data chunks', () => {
  it('reads back every value, null and extreme, over several chunks', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    await conn.run('CREATE TABLE t (ws VARCHAR NOT NULL, id VARCHAR NOT NULL, note VARCHAR, n BIGINT, seen TIMESTAMP, received TIMESTAMP NOT NULL)');
    const instants = [new Date('0001-01-01T00:00:00.001Z'), new Date('1969-12-31T23:59:59.999Z'), new Date('2026-06-15T12:34:56.789Z'), new Date('9999-12-31T23:59:59.999Z')];
    const numbers = [0, 1, -1, 2 ** 32, 2 ** 32 - 1, -(2 ** 32), Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER];
    // Nulls only in the second chunk for `note`, in every chunk for the others.
    const rows: Row[] = Array.from({ length: 5000 }, (_, i) => ({
      id: `r${i}`,
      note: i >= 2048 && i < 4096 && i % 3 === 0 ? null : `note ${i} é\u{1F600}`,
      n: i % 5 === 0 ? null : numbers[i % numbers.length]!,
      at: i % 7 === 0 ? null : instants[i % instants.length]!,
    }));
    const received = new Date('2026-06-15T12:00:00.000Z');
    await appendRows<Row>(conn, 't', [constantText('ws1'), text((r) => r.id), text((r) => r.note), int64((r) => r.n), instant((r) => r.at), constantInstant(received)], rows);
    const read = (await conn.runAndReadAll(`SELECT ws, id, note, CAST(n AS VARCHAR) AS n, CAST(epoch_us(seen) AS VARCHAR) AS at,
      CAST(epoch_us(received) AS VARCHAR) AS received FROM t ORDER BY CAST(substr(id, 2) AS INTEGER)`)).getRowObjectsJS();
    expect(read).toEqual(rows.map((r) => ({
      ws: 'ws1', id: r.id, note: r.note, n: r.n === null ? null : String(r.n),
      at: r.at === null ? null : String(BigInt(r.at.getTime()) * 1000n), received: String(BigInt(received.getTime()) * 1000n),
    })));
    conn.closeSync();
    instance.closeSync();
  });

  it('stores short ASCII text (written inline) and longer or non-ASCII text alike, and compares them as text', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    await conn.run('CREATE TABLE t (i BIGINT, s VARCHAR)');
    const samples = ['', 'a', 'abcdefghijkl', 'abcdefghijklm', 'a\u0000b', '\u007f', 'é', 'abcdefghijké', '\u{1F600}', 'x'.repeat(300), null];
    const rows = Array.from({ length: 4500 }, (_, i) => ({ i, s: samples[i % samples.length]! }));
    await appendRows<{ i: number; s: string | null }>(conn, 't', [int64((r) => r.i), text((r) => r.s)], rows);
    const read = (await conn.runAndReadAll('SELECT i, s, length(s) AS n FROM t ORDER BY i')).getRowObjectsJS();
    expect(read).toEqual(rows.map((r) => ({ i: BigInt(r.i), s: r.s, n: r.s === null ? null : BigInt([...r.s].length) })));
    // Equality, prefixes and grouping read the inline strings as DuckDB's own.
    const [counts] = (await conn.runAndReadAll(`SELECT count(*) FILTER (s = 'abcdefghijkl') AS exact, count(*) FILTER (s LIKE 'abc%') AS prefixed,
      count(DISTINCT s) AS distinct FROM t`)).getRowObjectsJS();
    const count = (keep: (s: string) => boolean) => BigInt(rows.filter((r) => r.s !== null && keep(r.s)).length);
    expect(counts).toEqual({ exact: count((s) => s === 'abcdefghijkl'), prefixed: count((s) => s.startsWith('abc')), distinct: BigInt(samples.length - 1) });
    conn.closeSync();
    instance.closeSync();
  });

  it('refuses columns that do not match the table', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const conn = await instance.connect();
    await conn.run('CREATE TABLE t (a VARCHAR, b VARCHAR)');
    await expect(appendRows(conn, 't', [text((r: { a: string }) => r.a)], [{ a: 'x' }])).rejects.toThrow('t has 2 columns; 1 are written');
    conn.closeSync();
    instance.closeSync();
  });
});
