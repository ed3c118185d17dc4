// A trigram index held in memory: the owners (person keys, customer ids) under each trigram of their
// lowercased values. Each owner's values are added under an ordinal of its own, and ordinals only
// grow, so a trigram's list is ascending and kept as varint deltas (1–3 bytes an entry). Each
// ordinal's lowercased values are kept too, as UTF-8 in one buffer outside the JS heap, so that the
// rarest trigram's entries are checked for the whole term here: trigrams alone cannot tell
// `user_777777` from the thousand `user_777…` (bench/RESULTS.md, "People lookup").

/**
 * Lowercased as DuckDB's lower() does it, a code point at a time (JavaScript's toLowerCase maps a
 * few letters to two, or by context, as DuckDB does not): the check of a candidate is DuckDB's.
 */
export function lowerAsDuckDB(value: string): string {
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(value)) return value.toLowerCase();
  let out = '';
  for (const c of value) out += String.fromCodePoint(c.toLowerCase().codePointAt(0)!);
  return out;
}

/** The distinct trigrams (three UTF-16 units, as a lowercased term is cut) of a lowercased text; none holds a line feed. */
export function gramsOf(text: string, into = new Set<string>()): Set<string> {
  for (let i = 0; i + 3 <= text.length; i++) {
    const gram = text.slice(i, i + 3);
    if (!gram.includes('\n')) into.add(gram);
  }
  return into;
}

const LINE_FEED = 0x0a;

/**
 * The index's key of the trigram of `text` at `i`: three ASCII units as one small integer (no
 * string to make and hash: adding a new person's trigrams cost most of its search index's time),
 * any other as its text; null for a trigram holding a line feed.
 */
function gramKey(text: string, i: number): number | string | null {
  const a = text.charCodeAt(i), b = text.charCodeAt(i + 1), c = text.charCodeAt(i + 2);
  if (a === LINE_FEED || b === LINE_FEED || c === LINE_FEED) return null;
  return (a | b | c) < 0x80 ? (a << 14) | (b << 7) | c : text.slice(i, i + 3);
}

/** Ascending ordinals as varint deltas. */
class Postings {
  private bytes = new Uint8Array(4);
  private size = 0;
  private last = -1;
  count = 0;

  /** Adds `ordinal`, once: a trigram met again for the ordinal being added adds nothing. */
  add(ordinal: number): void {
    if (ordinal === this.last) return;
    let delta = ordinal - this.last;
    this.last = ordinal;
    this.count++;
    if (this.size + 5 > this.bytes.length) {
      const grown = new Uint8Array(this.bytes.length * 2);
      grown.set(this.bytes);
      this.bytes = grown;
    }
    while (delta >= 0x80) {
      this.bytes[this.size++] = (delta & 0x7f) | 0x80;
      delta = Math.floor(delta / 0x80);
    }
    this.bytes[this.size++] = delta;
  }

  /** Calls `fn` with each ordinal, in ascending order. */
  each(fn: (ordinal: number) => void): void {
    let ordinal = -1;
    for (let i = 0; i < this.size;) {
      let delta = 0;
      let scale = 1;
      let byte: number;
      do {
        byte = this.bytes[i++]!;
        delta += (byte & 0x7f) * scale;
        scale *= 0x80;
      } while (byte & 0x80);
      ordinal += delta;
      fn(ordinal);
    }
  }

  /** The ordinals of `sorted` (ascending) that this list holds too. */
  keep(sorted: number[]): number[] {
    const kept: number[] = [];
    let j = 0;
    this.each((ordinal) => {
      while (j < sorted.length && sorted[j]! < ordinal) j++;
      if (sorted[j] === ordinal) kept.push(ordinal);
    });
    return kept;
  }
}

/** The lowercased values of each ordinal, one after another (a line feed between an ordinal's values). */
class Texts {
  private bytes = Buffer.alloc(1 << 16);
  private ends = new Uint32Array(1 << 12);
  private size = 0;
  private count = 0;

  /** Appends the next ordinal's values. */
  push(values: readonly string[]): void {
    const text = values.join('\n');
    // At most 3 bytes a UTF-16 unit: no need to count them first.
    const length = 3 * text.length;
    if (this.size + length > this.bytes.length) {
      const grown = Buffer.alloc(Math.max(this.bytes.length * 2, this.size + length));
      this.bytes.copy(grown, 0, 0, this.size);
      this.bytes = grown;
    }
    if (this.count === this.ends.length) {
      const grown = new Uint32Array(this.ends.length * 2);
      grown.set(this.ends);
      this.ends = grown;
    }
    this.size += this.bytes.write(text, this.size);
    this.ends[this.count++] = this.size;
  }

  /** Whether the ordinal's values hold `term` (UTF-8). */
  holds(ordinal: number, term: Buffer): boolean {
    const start = ordinal === 0 ? 0 : this.ends[ordinal - 1]!;
    return this.bytes.subarray(start, this.ends[ordinal]).indexOf(term) >= 0;
  }
}

/**
 * Whether a text's UTF-8 bytes hold a term's exactly when the text holds the term: not for a term
 * with a surrogate (alone, it is encoded as U+FFFD, never as half of a pair).
 */
const checkableAsBytes = (term: string) => !/[\uD800-\uDFFF]/.test(term);

/** How many more entries than the candidates a trigram's list may hold and still be read to narrow them. */
const NARROWING = 64;
/** Candidates few enough that the check of each costs less than reading another list. */
const FEW = 32;

export class GramIndex<Owner> {
  private readonly grams = new Map<number | string, Postings>();
  private readonly owners: Owner[] = [];
  private readonly texts = new Texts();

  /** Indexes `owner` under the trigrams of its values (null for a value it has not), lowercased here. */
  add(owner: Owner, values: readonly (string | null | undefined)[]): void {
    const ordinal = this.owners.length;
    const lowered: string[] = [];
    let indexed = false;
    for (const value of values) {
      if (!value) continue;
      const lower = lowerAsDuckDB(value);
      lowered.push(lower);
      for (let i = 0; i + 3 <= lower.length; i++) {
        const key = gramKey(lower, i);
        if (key === null) continue;
        let postings = this.grams.get(key);
        if (!postings) this.grams.set(key, postings = new Postings());
        postings.add(ordinal);
        indexed = true;
      }
    }
    if (!indexed) return;
    this.owners.push(owner);
    this.texts.push(lowered);
  }

  /**
   * The owners whose values hold `term` (lowercased, with its trigrams `grams`), found by the rarest
   * trigram, each of its entries checked for the term; where the term cannot be checked as bytes, by
   * the rarest trigrams narrowed by the next rarest while their lists are short. A superset of the
   * owners holding the term now (a value replaced since stays indexed), to be checked. Null where the
   * rarest trigram has more than `common` entries or the candidates number more than `most`:
   * scanning is then cheaper than checking each.
   */
  find(term: string, grams: ReadonlySet<string>, common: number, most: number): Owner[] | null {
    const lists: Postings[] = [];
    for (const gram of grams) {
      const postings = this.grams.get(gramKey(gram, 0)!);
      // A trigram nobody holds: nobody holds the term.
      if (!postings) return [];
      lists.push(postings);
    }
    lists.sort((a, b) => a.count - b.count);
    const [rarest, ...others] = lists;
    if (!rarest || rarest.count > common) return null;
    const ordinals = checkableAsBytes(term) ? this.holding(rarest, Buffer.from(term)) : narrowed(rarest, others);
    const owners = [...new Set(ordinals.map((ordinal) => this.owners[ordinal]!))];
    return owners.length > most ? null : owners;
  }

  /** The ordinals of `list` whose values hold `term`. */
  private holding(list: Postings, term: Buffer): number[] {
    const ordinals: number[] = [];
    list.each((ordinal) => {
      if (this.texts.holds(ordinal, term)) ordinals.push(ordinal);
    });
    return ordinals;
  }
}

/** The ordinals of `rarest` that the next rarest lists hold too, while those are short beside them. */
function narrowed(rarest: Postings, others: Postings[]): number[] {
  let ordinals: number[] = [];
  rarest.each((ordinal) => ordinals.push(ordinal));
  for (const list of others) {
    if (ordinals.length <= FEW || list.count > NARROWING * ordinals.length) break;
    ordinals = list.keep(ordinals);
  }
  return ordinals;
}
