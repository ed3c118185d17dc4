// An Arrow IPC stream of text columns from the CSV that DuckDB's COPY writes. @duckdb/node-api has
// no Arrow output and the arrow extension is not bundled; reading DuckDB's result chunks costs a
// native call per string longer than 12 bytes, which is slower than COPY. COPY's CSV is written
// by DuckDB's threads, and one pass over its bytes fills each column's offsets, data and validity
// buffers directly: no string or row object per value.

import { AsyncByteQueue, Field, makeData, RecordBatch, RecordBatchStreamWriter, Schema, Struct, Utf8 } from 'apache-arrow';

/**
 * The COPY options of the CSV this reads. COPY quotes a value holding a comma, a quote or a line
 * break, and the empty string (`""`); NULL is an empty field.
 */
export const ARROW_CSV_OPTIONS = "FORMAT csv, HEADER false, DELIMITER ',', QUOTE '\"', ESCAPE '\"', NULLSTR '', NEW_LINE '\\n'";

/** Rows per record batch. */
const BATCH_ROWS = 65_536;

const QUOTE = 0x22;
const COMMA = 0x2c;
const NEWLINE = 0x0a;

/** Where the parser is between two bytes (a chunk may end anywhere). */
const enum At { FieldStart, Unquoted, InQuotes, QuoteInQuotes }

/** One Utf8 column of the batch under way. */
class Column {
  offsets: Int32Array;
  validity: Uint8Array;
  data: Uint8Array = Buffer.allocUnsafe(1 << 16);
  size = 0;
  nulls = 0;

  constructor(private readonly batchRows: number) {
    this.offsets = new Int32Array(batchRows + 1);
    this.validity = new Uint8Array((batchRows + 7) >> 3);
  }

  reserve(bytes: number): void {
    if (this.size + bytes <= this.data.length) return;
    // Not zeroed: only the bytes up to `size` are ever read.
    const grown = Buffer.allocUnsafe(Math.max(this.data.length * 2, this.size + bytes));
    grown.set(this.data.subarray(0, this.size));
    this.data = grown;
  }

  /** The column's rows as Arrow data; the buffers then belong to it, and the column starts over. */
  take(rows: number) {
    const data = makeData({
      type: new Utf8(), length: rows, nullCount: this.nulls,
      nullBitmap: this.nulls === 0 ? null : this.validity.subarray(0, (rows + 7) >> 3),
      valueOffsets: this.offsets.subarray(0, rows + 1), data: this.data.subarray(0, this.size),
    });
    this.offsets = new Int32Array(this.batchRows + 1);
    this.validity = new Uint8Array((this.batchRows + 7) >> 3);
    // The next batch's values are about as long as this one's.
    this.data = Buffer.allocUnsafe(Math.max(1 << 16, this.size + (this.size >> 3)));
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
 * Fills columns from CSV bytes fed in chunks of any size, writing a record batch each `batchRows`
 * rows. One loop over local variables, a field at a time: most fields are a few bytes (or none), so
 * what each field costs besides its bytes decides the speed (a method call per field was slower,
 * bench/RESULTS.md, "Member exports over HTTP").
 */
class Transcoder {
  private readonly schema: Schema;
  private readonly struct: Struct;
  private readonly columns: Column[];
  private at = At.FieldStart;
  private row = 0;
  private col = 0;
  private valid = false;

  constructor(names: readonly string[], private readonly batchRows: number, private readonly writer: RecordBatchStreamWriter, sink: AsyncByteQueue) {
    this.schema = new Schema(names.map((name) => new Field(name, new Utf8(), true)));
    this.struct = new Struct(this.schema.fields);
    this.columns = names.map(() => new Column(batchRows));
    writer.reset(sink, this.schema);
  }

  feed(bytes: Uint8Array): void {
    const { columns, batchRows } = this;
    const width = columns.length;
    const n = bytes.length;
    // No value of this chunk can then outgrow its column: the copy loops check nothing else.
    for (const c of columns) c.reserve(n);
    let { at, row, col, valid } = this;
    let column = columns[col]!;
    let { data, size, offsets, validity } = column;
    let i = 0;
    while (i < n) {
      let b = bytes[i]!;
      if (at === At.FieldStart) {
        if (b === QUOTE) {
          valid = true;
          at = At.InQuotes;
          i++;
          continue;
        }
        // An unquoted value, or none (NULL): up to the comma or line break.
        valid = b !== COMMA && b !== NEWLINE;
        at = At.Unquoted;
      }
      if (at === At.Unquoted) {
        while (b !== COMMA && b !== NEWLINE && b !== QUOTE) {
          data[size++] = b;
          if (++i === n) break;
          b = bytes[i]!;
        }
        if (i === n) break;
        if (b === QUOTE) throw malformed('a quote in an unquoted value');
      } else if (at === At.InQuotes) {
        while (b !== QUOTE) {
          data[size++] = b;
          if (++i === n) break;
          b = bytes[i]!;
        }
        if (i === n) break;
        at = At.QuoteInQuotes;
        i++;
        continue;
      } else if (b === QUOTE) {
        // After a quote in quotes: a doubled quote is one quote of the value.
        data[size++] = QUOTE;
        at = At.InQuotes;
        i++;
        continue;
      }
      // `b` ends the field (the byte after its value, or after its closing quote).
      i++;
      column.size = size;
      offsets[row + 1] = size;
      if (valid) validity[row >> 3]! |= 1 << (row & 7);
      else column.nulls++;
      if (b === COMMA) {
        if (++col === width) throw malformed(`more than ${width} fields in a row`);
      } else if (b === NEWLINE) {
        if (col !== width - 1) throw malformed(`${col + 1} fields in a row of ${width}`);
        col = 0;
        if (++row === batchRows) {
          this.batch(row);
          row = 0;
          // The next batch's columns are new: room again for the rest of the chunk.
          for (const c of columns) c.reserve(n - i);
        }
      } else {
        throw malformed(`byte ${b} after a field`);
      }
      column = columns[col]!;
      ({ data, size, offsets, validity } = column);
      at = At.FieldStart;
    }
    column.size = size;
    this.at = at;
    this.row = row;
    this.col = col;
    this.valid = valid;
  }

  /** Writes the last batch, if any rows are left, and the end marker. */
  finish(): void {
    if (this.at !== At.FieldStart || this.col !== 0) throw malformed('the last row is incomplete');
    // An empty result is the schema alone.
    if (this.row > 0) this.batch(this.row);
    this.writer.finish();
  }

  private batch(rows: number): void {
    const children = this.columns.map((c) => c.take(rows));
    this.writer.write(new RecordBatch(this.schema, makeData({ type: this.struct, length: rows, nullCount: 0, children })));
  }
}

/**
 * The Arrow IPC stream (schema, a record batch per `batchRows` rows, end marker) of `csv`, written
 * by COPY with ARROW_CSV_OPTIONS, each column a nullable Utf8 named by `names`.
 */
export async function* arrowFromCsv(
  csv: Iterable<Uint8Array> | AsyncIterable<Uint8Array>, names: readonly string[], batchRows = BATCH_ROWS,
): AsyncGenerator<Buffer> {
  const sink = new Collected();
  const writer = new RecordBatchStreamWriter();
  const transcoder = new Transcoder(names, batchRows, writer, sink);
  for await (const bytes of csv) {
    transcoder.feed(bytes);
    if (sink.chunks.length > 0) yield sink.take();
  }
  transcoder.finish();
  yield sink.take();
}
