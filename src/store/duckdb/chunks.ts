// Bulk appends through data chunks: a table's rows written column by column into DuckDB data
// chunks of up to 2,048 rows, then appended whole. Integer and timestamp columns are filled in JS
// typed arrays and copied in with one native call per column and chunk, a constant column (the
// workspace) references one value; text of at most 12 ASCII characters is copied in the same way
// (DuckDB keeps such strings inline), only longer text takes a call per value. The appender's call
// per value and per row cost more (bench/RESULTS.md, "Ingest over HTTP").

import duckdb from '@duckdb/node-bindings';
import { type DuckDBConnection, DuckDBDataChunk } from '@duckdb/node-api';

/** How one column of a row is written (`get` has the row and its index in the rows appended). */
export type ChunkColumn<R> =
  | { kind: 'text'; get: (row: R, index: number) => string | null }
  | { kind: 'int64'; get: (row: R, index: number) => number | null }
  | { kind: 'double'; get: (row: R, index: number) => number | null }
  | { kind: 'boolean'; get: (row: R, index: number) => boolean | null }
  /** An instant as TIMESTAMP (naive UTC, microseconds). */
  | { kind: 'timestamp'; get: (row: R, index: number) => Date | null }
  /** The same value on every row. */
  | { kind: 'constant'; value: () => duckdb.Value };

export const text = <R>(get: (row: R, index: number) => string | null): ChunkColumn<R> => ({ kind: 'text', get });
export const int64 = <R>(get: (row: R) => number | null): ChunkColumn<R> => ({ kind: 'int64', get });
export const instant = <R>(get: (row: R) => Date | null): ChunkColumn<R> => ({ kind: 'timestamp', get });
export const double = <R>(get: (row: R, index: number) => number | null): ChunkColumn<R> => ({ kind: 'double', get });
export const boolean = <R>(get: (row: R, index: number) => boolean | null): ChunkColumn<R> => ({ kind: 'boolean', get });
export const constantText = <R>(value: string): ChunkColumn<R> => ({ kind: 'constant', value: () => duckdb.create_varchar(value) });
export const constantInstant = <R>(at: Date): ChunkColumn<R> =>
  ({ kind: 'constant', value: () => duckdb.create_timestamp({ micros: BigInt(at.getTime()) * 1000n }) });

const TWO_32 = 2 ** 32;

/** An integer within ±2^53 as a little-endian int64 at `i` of `words` (two uint32 per value). */
function putInt64(words: Uint32Array, i: number, v: number): void {
  const hi = Math.floor(v / TWO_32);
  words[2 * i] = v - hi * TWO_32;
  words[2 * i + 1] = hi >>> 0;
}

/** Milliseconds as int64 microseconds, exact for every Date (ms × 1000 can pass 2^53, so by halves). */
function putMicros(words: Uint32Array, i: number, ms: number): void {
  if (!Number.isFinite(ms)) throw new RangeError('an invalid date has no timestamp');
  const hi = Math.floor(ms / TWO_32);
  const low = (ms - hi * TWO_32) * 1000;
  const carry = Math.floor(low / TWO_32);
  words[2 * i] = low - carry * TWO_32;
  words[2 * i + 1] = (hi * 1000 + carry) >>> 0;
}

/**
 * A string of DuckDB's C API (`duckdb_string_t`): 16 bytes, its length (uint32) then, up to 12
 * bytes, the text itself, zero-padded; a longer text is held elsewhere (a pointer).
 */
const STRING_BYTES = 16;
const INLINE_BYTES = 12;

/**
 * Writes `v` as the inline string at `i` when it is at most 12 ASCII characters (its UTF-8 bytes
 * are its characters); false otherwise. A native call per value costs more (bench/RESULTS.md,
 * "Ingest over HTTP"); most ids, names and short values fit.
 */
function putInline(bytes: Uint8Array, lengths: Uint32Array, i: number, v: string): boolean {
  const length = v.length;
  if (length > INLINE_BYTES) return false;
  const at = STRING_BYTES * i + 4;
  for (let k = 0; k < length; k++) {
    const c = v.charCodeAt(k);
    if (c >= 0x80) {
      bytes.fill(0, at, at + k);
      return false;
    }
    bytes[at + k] = c;
  }
  lengths[4 * i] = length;
  return true;
}

/**
 * Appends `rows` to `table` on `conn` (inside the caller's transaction): `columns` in the table's
 * column order, one for each of its columns.
 */
export async function appendRows<R>(conn: DuckDBConnection, table: string, columns: readonly ChunkColumn<R>[], rows: readonly R[]): Promise<void> {
  if (rows.length === 0) return;
  const appender = await conn.createAppender(table);
  if (appender.columnCount !== columns.length) throw new Error(`${table} has ${appender.columnCount} columns; ${columns.length} are written`);
  const chunk = DuckDBDataChunk.create(Array.from({ length: columns.length }, (_, i) => appender.columnType(i)));
  const constants = columns.map((c) => (c.kind === 'constant' ? c.value() : null));
  const size = duckdb.vector_size();
  for (let start = 0; start < rows.length; start += size) {
    const n = Math.min(size, rows.length - start);
    duckdb.data_chunk_reset(chunk.chunk);
    columns.forEach((column, c) => writeColumn(duckdb.data_chunk_get_vector(chunk.chunk, c), column, constants[c]!, rows, start, n));
    duckdb.data_chunk_set_size(chunk.chunk, n);
    appender.appendDataChunk(chunk);
  }
  appender.closeSync();
}

function writeColumn<R>(vector: duckdb.Vector, column: ChunkColumn<R>, constant: duckdb.Value | null, rows: readonly R[], start: number, n: number): void {
  if (column.kind === 'constant') return duckdb.vector_reference_value(vector, constant!);
  const validity = new Uint8Array(Math.ceil(n / 64) * 8).fill(0xff);
  const unset = (i: number) => { validity[i >> 3]! &= ~(1 << (i & 7)); };
  if (column.kind === 'text') {
    const inline = new Uint8Array(STRING_BYTES * n);
    const lengths = new Uint32Array(inline.buffer);
    const longer: number[] = [];
    const longerValues: string[] = [];
    for (let i = 0; i < n; i++) {
      const v = column.get(rows[start + i]!, start + i);
      if (v === null) unset(i);
      else if (!putInline(inline, lengths, i, v)) {
        longer.push(i);
        longerValues.push(v);
      }
    }
    duckdb.copy_data_to_vector(vector, 0, inline.buffer, 0, inline.byteLength);
    // Each writes the whole string of its row (over the zeros copied there), its text in the vector's heap.
    for (let k = 0; k < longer.length; k++) duckdb.vector_assign_string_element(vector, longer[k]!, longerValues[k]!);
  } else if (column.kind === 'double' || column.kind === 'boolean') {
    const values = column.kind === 'double' ? new Float64Array(n) : new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const v = column.get(rows[start + i]!, start + i);
      if (v === null) unset(i);
      else values[i] = Number(v);
    }
    duckdb.copy_data_to_vector(vector, 0, values.buffer, 0, values.byteLength);
  } else {
    const words = new Uint32Array(2 * n);
    for (let i = 0; i < n; i++) {
      const v = column.get(rows[start + i]!, start + i);
      if (v === null) unset(i);
      else if (column.kind === 'int64') putInt64(words, i, v as number);
      else putMicros(words, i, (v as Date).getTime());
    }
    duckdb.copy_data_to_vector(vector, 0, words.buffer, 0, words.byteLength);
  }
  // Written whole, nulls or not: the copy goes into the validity mask, which a vector only has once
  // made writable, and nothing of a previous chunk's mask is left.
  duckdb.vector_ensure_validity_writable(vector);
  duckdb.copy_data_to_vector_validity(vector, 0, validity.buffer, 0, validity.byteLength);
}
