// An Arrow IPC stream of text columns from the CSV that DuckDB's COPY writes. @duckdb/node-api has
// no Arrow output and the arrow extension is not bundled; reading DuckDB's result chunks costs a
// native call per string longer than 12 bytes, which is slower than COPY. COPY's CSV is written
// by DuckDB's threads, and one pass over its bytes fills each column's offsets, data and validity
// buffers directly: no string or row object per value.

import { AsyncByteQueue, Field, makeData, RecordBatch, RecordBatchStreamWriter, Schema, Struct, Utf8 } from 'apache-arrow';

/** The COPY options of the CSV this reads: every value quoted, so an unquoted empty field is NULL. */
export const ARROW_CSV_OPTIONS = "FORMAT csv, HEADER false, FORCE_QUOTE *, DELIMITER ',', QUOTE '\"', ESCAPE '\"', NEW_LINE '\\n'";

/** Rows per record batch. */
export const ARROW_BATCH_ROWS = 65_536;

const QUOTE = 0x22;
const COMMA = 0x2c;
const NEWLINE = 0x0a;

/** Where the parser is between two bytes (a chunk may end anywhere). */
const enum At { FieldStart, InQuotes, QuoteInQuotes, FieldEnd }

/** One Utf8 column of the batch under way. */
class Column {
  offsets = new Int32Array(ARROW_BATCH_ROWS + 1);
  validity = new Uint8Array(ARROW_BATCH_ROWS >> 3);
  data = new Uint8Array(1 << 16);
  size = 0;
  nulls = 0;

  reserve(bytes: number): void {
    if (this.size + bytes <= this.data.length) return;
    const grown = new Uint8Array(Math.max(this.data.length * 2, this.size + bytes));
    grown.set(this.data.subarray(0, this.size));
    this.data = grown;
  }

  end(row: number, valid: boolean): void {
    this.offsets[row + 1] = this.size;
    if (valid) this.validity[row >> 3]! |= 1 << (row & 7);
    else this.nulls++;
  }

  /** The column's rows as Arrow data; the buffers then belong to it, and the column starts over. */
  take(rows: number) {
    const data = makeData({
      type: new Utf8(), length: rows, nullCount: this.nulls,
      nullBitmap: this.nulls === 0 ? null : this.validity.subarray(0, (rows + 7) >> 3),
      valueOffsets: this.offsets.subarray(0, rows + 1), data: this.data.subarray(0, this.size),
    });
    this.offsets = new Int32Array(ARROW_BATCH_ROWS + 1);
    this.validity = new Uint8Array(ARROW_BATCH_ROWS >> 3);
    this.data = new Uint8Array(Math.max(1 << 16, this.size));
    this.size = 0;
    this.nulls = 0;
    return data;
  }
}

/** Collects what the writer emits, so each batch's bytes can be handed on as soon as it is written. */
class Collected extends AsyncByteQueue {
  readonly chunks: Uint8Array[] = [];

  override write(value: Uint8Array): void {
    if (value.byteLength > 0) this.chunks.push(value);
  }

  take(): Buffer {
    return Buffer.concat(this.chunks.splice(0));
  }
}

const malformed = (what: string) => new Error(`unexpected CSV from COPY: ${what}`);

/**
 * The Arrow IPC stream (schema, a record batch per ARROW_BATCH_ROWS rows, end marker) of `csv`,
 * written by COPY with ARROW_CSV_OPTIONS, each column a nullable Utf8 named by `names`.
 */
export async function* arrowFromCsv(csv: AsyncIterable<Uint8Array>, names: readonly string[]): AsyncGenerator<Buffer> {
  const schema = new Schema(names.map((name) => new Field(name, new Utf8(), true)));
  const struct = new Struct(schema.fields);
  const columns = names.map(() => new Column());
  const sink = new Collected();
  const writer = new RecordBatchStreamWriter();
  writer.reset(sink, schema);
  let at = At.FieldStart;
  let row = 0;
  let col = 0;
  let column = columns[0]!;
  let valid = false;
  const batch = () => {
    writer.write(new RecordBatch(schema, makeData({ type: struct, length: row, nullCount: 0, children: columns.map((c) => c.take(row)) })));
    row = 0;
  };

  for await (const bytes of csv) {
    const n = bytes.length;
    let i = 0;
    while (i < n) {
      if (at === At.FieldStart) {
        const b = bytes[i]!;
        if (b === QUOTE) {
          at = At.InQuotes;
          valid = true;
          i++;
        } else {
          at = At.FieldEnd;
          valid = false;
        }
      }
      if (at === At.InQuotes) {
        // The value is at most the rest of this chunk.
        column.reserve(n - i);
        const data = column.data;
        let size = column.size;
        while (i < n) {
          const b = bytes[i++]!;
          if (b === QUOTE) {
            at = At.QuoteInQuotes;
            break;
          }
          data[size++] = b;
        }
        column.size = size;
        continue;
      }
      if (at === At.QuoteInQuotes) {
        // A doubled quote is one quote of the value; any other byte follows the closing quote.
        if (bytes[i] === QUOTE) {
          column.reserve(1);
          column.data[column.size++] = QUOTE;
          at = At.InQuotes;
          i++;
          continue;
        }
        at = At.FieldEnd;
      }
      const b = bytes[i++]!;
      column.end(row, valid);
      if (b === COMMA) {
        if (++col === columns.length) throw malformed(`more than ${columns.length} fields in a row`);
      } else if (b === NEWLINE) {
        if (col !== columns.length - 1) throw malformed(`${col + 1} fields in a row of ${columns.length}`);
        col = 0;
        if (++row === ARROW_BATCH_ROWS) {
          batch();
          yield sink.take();
        }
      } else {
        throw malformed(`byte ${b} after a field`);
      }
      column = columns[col]!;
      at = At.FieldStart;
    }
  }
  if (at !== At.FieldStart || col !== 0) throw malformed('the last row is incomplete');
  // An empty result is the schema alone.
  if (row > 0) batch();
  writer.finish();
  yield sink.take();
}
