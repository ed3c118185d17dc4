// The acknowledging path's reading of a Segment body straight from its bytes, for its common shape:
// a batch of track calls (or one track call) whose text has no escape. JSON.parse, the string of a
// 500 KB body and the mapping cost most of that path (bench/RESULTS.md, "Segment"), and none is
// needed to know that a body maps: this one pass checks the JSON and, for each message, what
// mapMessages and fastEvent would check (ids, event, messageId, properties' limits, times, size).
// It only ever accepts what they accept: anything else (every fault, to be worded; any rarer
// shape) is left to them (null). The resolver maps the stored bytes later, to the same operations.

import { INGEST_LIMITS } from '../limits.js';
import type { SegmentKind } from './body.js';

/** A body this pass accepted: its bytes, and what the log's record head needs. */
export class ScannedBody {
  constructor(
    readonly bytes: Buffer,
    readonly count: number,
    /** Each message's `timestamp` (else `originalTimestamp`) in ms, NaN when it has none. */
    readonly at: Float64Array,
    /** Each message's own `sentAt` in ms, NaN when it has none. */
    readonly sentAt: Float64Array,
    /** The body's `sentAt` (sentAtOf), for a batch. */
    readonly batchSentAt: number | undefined,
    /** Messages with no messageId: one is drawn for each when the body is acknowledged. */
    readonly withoutId: number[],
    /** When asked for: SPAN_FIELDS [start, end) pairs a message (Span), -1 for a field it lacks. */
    readonly spans?: number[],
  ) {}
}

/** The years 0001–9999, which a corrected timestamp's ISO text (YYYY-…) can name. */
const EARLIEST_MS = -62135596800000;
const LATEST_MS = 253402300799999;

/** Whether every message's time, corrected as correctedTime does, is within EARLIEST_MS..LATEST_MS. */
export function correctedTimesInRange({ at, sentAt, batchSentAt, count }: ScannedBody, received: number): boolean {
  for (let i = 0; i < count; i++) {
    if (Number.isNaN(at[i]!)) continue;
    const sent = Number.isNaN(sentAt[i]!) ? batchSentAt : sentAt[i]!;
    const ms = sent === undefined ? at[i]! : at[i]! + (received - sent);
    if (!(ms >= EARLIEST_MS && ms <= LATEST_MS)) return false;
  }
  return true;
}

class Bail extends Error {}
const BAIL = new Bail();

const QUOTE = 0x22, COMMA = 0x2c, COLON = 0x3a, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
/** Deeper than this, outside properties, the body is left to JSON.parse. */
const MAX_DEPTH = 64;
/** Bytes an event's own JSON may take beyond its message's text: renamed keys, a drawn id, a timestamp. */
const EVENT_OVERHEAD = 256;
const MESSAGE_BYTES = 32 * 1024;

const enum Field { Other, Type, UserId, AnonymousId, Event, MessageId, Properties, Context, Timestamp, OriginalTimestamp, SentAt, WriteKey }
const FIELDS: [string, Field][] = [
  ['type', Field.Type], ['userId', Field.UserId], ['anonymousId', Field.AnonymousId], ['event', Field.Event], ['messageId', Field.MessageId],
  ['properties', Field.Properties], ['context', Field.Context], ['timestamp', Field.Timestamp], ['originalTimestamp', Field.OriginalTimestamp],
  ['sentAt', Field.SentAt], ['writeKey', Field.WriteKey],
];
const NAMES = FIELDS.map(([name, field]) => ({ bytes: Buffer.from(name), field }));
const TRACK = Buffer.from('track');
const BATCH = Buffer.from('batch');
const TRAITS = Buffer.from('traits');
const PROTO = Buffer.from('__proto__');
const CONSTRUCTOR = Buffer.from('constructor');

/** The messages' facts gathered while scanning. */
interface Gathered {
  at: number[];
  sentAt: number[];
  withoutId: number[];
  /** When given: each message's SPAN_FIELDS strings, [start, end) byte offsets, -1 for none. */
  spans?: number[];
}

/** The strings a message's span entry locates, in this order (properties is its JSON text). */
export const enum Span { Event, UserId, AnonymousId, MessageId, Properties }
export const SPAN_FIELDS = 5;

class Scanner {
  pos = 0;
  /** Bytes of 0x80 and above in the current message (each may decode to U+FFFD, 3 bytes). */
  high = 0;
  /** Characters a number's JSON may add to its text (exponents). */
  extra = 0;
  paths = 0;
  /** Where the current message's spans start in Gathered.spans. */
  span = -1;

  constructor(private readonly b: Buffer) {}

  ws(): void {
    const b = this.b;
    let c = b[this.pos];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++this.pos];
  }

  expect(byte: number): void {
    this.ws();
    if (this.b[this.pos] !== byte) throw BAIL;
    this.pos++;
  }

  /** Whether the next token is `byte` (taken). */
  take(byte: number): boolean {
    this.ws();
    if (this.b[this.pos] !== byte) return false;
    this.pos++;
    return true;
  }

  /** A string at pos: the offset of its first byte (its end is pos - 1). Counts its high bytes. */
  string(): number {
    this.expect(QUOTE);
    const b = this.b;
    const start = this.pos;
    for (;;) {
      const c = b[this.pos++];
      if (c === QUOTE) return start;
      if (c === undefined || c < 0x20) throw BAIL;
      if (c >= 0x80) this.high++;
    }
  }

  /** An object's key: its offset, as string(); the keys the JSON parser's prototype checks refuse are left to it. */
  key(): number {
    const start = this.string();
    if (this.equals(start, PROTO) || this.equals(start, CONSTRUCTOR)) throw BAIL;
    return start;
  }

  /** A string of ASCII only (its length is its UTF-16 length), its length. */
  asciiString(): number {
    const high = this.high;
    const start = this.string();
    if (this.high !== high) throw BAIL;
    return this.pos - 1 - start;
  }

  /** Whether the string that ends at pos (opened at `start`) is `name`; a loop here costs less than a native compare. */
  equals(start: number, name: Buffer): boolean {
    if (this.pos - 1 - start !== name.length) return false;
    for (let i = 0; i < name.length; i++) if (this.b[start + i] !== name[i]) return false;
    return true;
  }

  literal(text: string): void {
    for (let i = 0; i < text.length; i++) if (this.b[this.pos++] !== text.charCodeAt(i)) throw BAIL;
  }

  isNull(): boolean {
    this.ws();
    if (this.b[this.pos] !== 0x6e) return false;
    this.literal('null');
    return true;
  }

  digits(): void {
    const b = this.b;
    const from = this.pos;
    while (b[this.pos]! >= 0x30 && b[this.pos]! <= 0x39) this.pos++;
    if (this.pos === from) throw BAIL;
  }

  number(): void {
    const b = this.b;
    if (b[this.pos] === 0x2d) this.pos++;
    if (b[this.pos] === 0x30) this.pos++;
    else this.digits();
    if (b[this.pos] === 0x2e) {
      this.pos++;
      this.digits();
    }
    if (b[this.pos] === 0x65 || b[this.pos] === 0x45) {
      this.pos++;
      if (b[this.pos] === 0x2b || b[this.pos] === 0x2d) this.pos++;
      this.digits();
      this.extra += 25;
    }
  }

  /**
   * Any JSON value at pos. Inside properties (`pathChars` ≥ 0 or -1 below an array, `payload`), the
   * limits payloadFault checks: no non-empty container at the depth limit, at most so many
   * property paths, each at most so long (counted as written: a repeated key only counts more).
   */
  value(depth: number, pathChars: number, payload: boolean): void {
    this.ws();
    const c = this.b[this.pos];
    if (c === QUOTE) this.string();
    else if (c === LBRACE) this.object(depth, pathChars, payload);
    else if (c === LBRACKET) this.array(depth, payload);
    else if (c === 0x74) this.literal('true');
    else if (c === 0x66) this.literal('false');
    else if (c === 0x6e) this.literal('null');
    else if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) this.number();
    else throw BAIL;
  }

  object(depth: number, pathChars: number, payload: boolean): void {
    this.expect(LBRACE);
    if (this.take(RBRACE)) return;
    if (payload ? depth === INGEST_LIMITS.depth : depth > MAX_DEPTH) throw BAIL;
    do {
      let chars = -1;
      if (payload && pathChars >= 0) {
        // Its length in UTF-16 units is its length in bytes: ASCII only.
        const high = this.high;
        const start = this.key();
        chars = pathChars + (depth > 0 ? 1 : 0) + this.pos - 1 - start;
        if (this.high !== high || chars > INGEST_LIMITS.propertyPathChars || ++this.paths > INGEST_LIMITS.propertyPaths) throw BAIL;
      } else this.key();
      this.expect(COLON);
      this.value(depth + 1, chars, payload);
    } while (this.take(COMMA));
    this.expect(RBRACE);
  }

  array(depth: number, payload: boolean): void {
    this.expect(LBRACKET);
    if (this.take(RBRACKET)) return;
    if (payload ? depth === INGEST_LIMITS.depth : depth > MAX_DEPTH) throw BAIL;
    do this.value(depth + 1, -1, payload);
    while (this.take(COMMA));
    this.expect(RBRACKET);
  }

  field(): Field {
    const start = this.key();
    const length = this.pos - 1 - start;
    for (const { bytes, field } of NAMES) if (bytes.length === length && this.equals(start, bytes)) return field;
    return Field.Other;
  }

  /** An id as mapMessages reads it and fastEvent keeps it: null or '' is none (-1), else 1..256 ASCII characters (its offset). */
  id(): number {
    if (this.isNull()) return -1;
    const length = this.asciiString();
    if (length > 256) throw BAIL;
    return length > 0 ? this.pos - 1 - length : -1;
  }

  /** A date-time Date.parse reads (instant()), or null: its ms, NaN for null. */
  instant(): number {
    if (this.isNull()) return NaN;
    const high = this.high;
    const start = this.string();
    const ms = this.utcMs(start, this.pos - 1);
    if (!Number.isNaN(ms)) return ms;
    const parsed = Date.parse(this.b.toString('latin1', start, this.pos - 1));
    if (Number.isNaN(parsed) || this.high !== high) throw BAIL;
    return parsed;
  }

  /** The `digits` decimal digits at `at`, NaN when one is not a digit. */
  decimal(at: number, digits: number): number {
    let n = 0;
    for (let i = at; i < at + digits; i++) {
      const d = this.b[i]! - 0x30;
      if (!(d >= 0 && d <= 9)) return NaN;
      n = n * 10 + d;
    }
    return n;
  }

  /**
   * `YYYY-MM-DDTHH:MM:SS[.sss]Z`, the form the clients send, read without making a string: what
   * Date.parse gives for it, by the ISO format's definition. NaN for any other text, and for the
   * few days and years (day 29 and after, years before 1000) left to Date.parse.
   */
  utcMs(start: number, end: number): number {
    const b = this.b;
    const length = end - start;
    if ((length !== 20 && length !== 24) || b[end - 1] !== 0x5a || b[start + 4] !== 0x2d || b[start + 7] !== 0x2d || b[start + 10] !== 0x54
      || b[start + 13] !== COLON || b[start + 16] !== COLON || (length === 24 && b[start + 19] !== 0x2e)) return NaN;
    const year = this.decimal(start, 4), month = this.decimal(start + 5, 2), day = this.decimal(start + 8, 2);
    const hour = this.decimal(start + 11, 2), minute = this.decimal(start + 14, 2), second = this.decimal(start + 17, 2);
    const ms = length === 24 ? this.decimal(start + 20, 3) : 0;
    if (!(year >= 1000 && month >= 1 && month <= 12 && day >= 1 && day <= 28 && hour <= 23 && minute <= 59 && second <= 59 && ms >= 0)) return NaN;
    return Date.UTC(year, month - 1, day, hour, minute, second, ms);
  }

  /** `context`: an object without `traits` (its email and traits take checks left to mapMessages). */
  context(): void {
    if (this.isNull()) return;
    this.expect(LBRACE);
    if (this.take(RBRACE)) return;
    do {
      if (this.equals(this.key(), TRAITS)) throw BAIL;
      this.expect(COLON);
      this.value(2, -1, false);
    } while (this.take(COMMA));
    this.expect(RBRACE);
  }

  /** `properties`: null (-1), or an object within payloadFault's limits (its offset). */
  properties(): number {
    if (this.isNull()) return -1;
    this.ws();
    if (this.b[this.pos] !== LBRACE) throw BAIL;
    const start = this.pos;
    this.paths = 0;
    this.object(0, 0, true);
    return start;
  }

  /** Where the string (or properties) just read from `from` is, when `out` gathers spans. */
  mark(out: Gathered, field: Span, from: number): void {
    if (!out.spans || from === -1) return;
    out.spans[this.span + 2 * field] = from;
    out.spans[this.span + 2 * field + 1] = field === Span.Properties ? this.pos : this.pos - 1;
  }

  /** One track call, its facts added to `out`; throws BAIL for anything mapMessages or fastEvent might refuse. */
  message(index: number, inBatch: boolean, out: Gathered): void {
    this.ws();
    const start = this.pos;
    this.high = 0;
    this.extra = 0;
    this.expect(LBRACE);
    let seen = 0;
    let identified = false;
    let named = false;
    let at = NaN;
    let original = NaN;
    let sentAt = NaN;
    const spans = out.spans;
    this.span = spans ? spans.length : -1;
    if (spans) for (let i = 0; i < 2 * SPAN_FIELDS; i++) spans.push(-1);
    let hasId = false;
    if (!this.take(RBRACE)) {
      do {
        const field = this.field();
        if (field !== Field.Other) {
          if (seen & (1 << field)) throw BAIL;
          seen |= 1 << field;
        }
        this.expect(COLON);
        switch (field) {
          case Field.Type:
            if (!inBatch) this.value(1, -1, false);
            else if (!this.equals(this.string(), TRACK)) throw BAIL;
            break;
          case Field.UserId: case Field.AnonymousId: {
            const from = this.id();
            identified = from !== -1 || identified;
            this.mark(out, field === Field.UserId ? Span.UserId : Span.AnonymousId, from);
            break;
          }
          case Field.Event: {
            const length = this.asciiString();
            if (length < 1 || length > 200) throw BAIL;
            named = true;
            this.mark(out, Span.Event, this.pos - 1 - length);
            break;
          }
          case Field.MessageId: {
            const from = this.id();
            hasId = from !== -1;
            this.mark(out, Span.MessageId, from);
            break;
          }
          case Field.Properties: this.mark(out, Span.Properties, this.properties()); break;
          case Field.Context: this.context(); break;
          case Field.Timestamp: at = this.instant(); break;
          case Field.OriginalTimestamp: original = this.instant(); break;
          case Field.SentAt: sentAt = this.instant(); break;
          case Field.WriteKey: if (!inBatch) throw BAIL; this.value(1, -1, false); break;
          default: this.value(1, -1, false);
        }
      } while (this.take(COMMA));
      this.expect(RBRACE);
    }
    if (!identified || !named || (inBatch && !(seen & (1 << Field.Type)))) throw BAIL;
    // The event's JSON (eventSizeFault) and a single call's (the route's 32 KB) are at most this.
    if (this.pos - start + 2 * this.high + this.extra + EVENT_OVERHEAD > Math.min(INGEST_LIMITS.eventBytes, MESSAGE_BYTES)) throw BAIL;
    out.at.push(Number.isNaN(at) ? original : at);
    out.sentAt.push(sentAt);
    if (!hasId) out.withoutId.push(index);
  }

  /** A batch body: `batch` (track calls only), `sentAt`, anything else skipped; a writeKey is left to the route. */
  batch(out: Gathered): number | undefined {
    this.expect(LBRACE);
    let batchSentAt: number | undefined;
    let seen = 0;
    do {
      const start = this.key();
      const isBatch = this.equals(start, BATCH);
      const field = isBatch ? Field.Other : this.fieldAt(start);
      const bit = isBatch ? 1 : field === Field.SentAt ? 2 : 0;
      if (field === Field.WriteKey || seen & bit) throw BAIL;
      seen |= bit;
      this.expect(COLON);
      if (isBatch) this.messages(out);
      else if (field === Field.SentAt) batchSentAt = this.batchSentAt();
      else this.value(1, -1, false);
    } while (this.take(COMMA));
    this.expect(RBRACE);
    if (!(seen & 1)) throw BAIL;
    return batchSentAt;
  }

  fieldAt(start: number): Field {
    for (const { bytes, field } of NAMES) if (this.equals(start, bytes)) return field;
    return Field.Other;
  }

  messages(out: Gathered): void {
    this.expect(LBRACKET);
    let index = 0;
    do this.message(index++, true, out);
    while (this.take(COMMA));
    this.expect(RBRACKET);
  }

  /** sentAtOf: a date-time string's ms; anything else is no sentAt (not a fault). */
  batchSentAt(): number | undefined {
    this.ws();
    if (this.b[this.pos] !== QUOTE) {
      this.value(1, -1, false);
      return undefined;
    }
    const start = this.string();
    const ms = Date.parse(this.b.toString('utf8', start, this.pos - 1));
    return Number.isNaN(ms) ? undefined : ms;
  }
}

const BACKSLASH = 0x5c;

/**
 * `bytes` read as a body of a route of `kind`, when this pass can vouch for it; null leaves it to
 * JSON.parse and mapMessages. With `spans`, where each message's strings are (scanned-events.ts).
 */
export function scanSegmentBody(bytes: Buffer, kind: SegmentKind, spans = false): ScannedBody | null {
  if (kind !== 'batch' && kind !== 'track') return null;
  // Escapes (lone surrogates, and key names spelled with them) take the full parse.
  if (bytes.indexOf(BACKSLASH) !== -1) return null;
  const scanner = new Scanner(bytes);
  const out: Gathered = { at: [], sentAt: [], withoutId: [], ...(spans ? { spans: [] } : {}) };
  try {
    let batchSentAt: number | undefined;
    if (kind === 'batch') batchSentAt = scanner.batch(out);
    else {
      scanner.message(0, false, out);
      batchSentAt = Number.isNaN(out.sentAt[0]!) ? undefined : out.sentAt[0];
    }
    scanner.ws();
    if (scanner.pos !== bytes.length) return null;
    return new ScannedBody(bytes, out.at.length, Float64Array.from(out.at), Float64Array.from(out.sentAt), batchSentAt, out.withoutId, out.spans);
  } catch (err) {
    if (err instanceof Bail || err instanceof RangeError) return null;
    throw err;
  }
}
