// A Bloom filter that grows, for ids proven never stored (store/duckdb/known-ids.ts): no false
// negatives, and rare false positives whatever the number of ids added.

/** Bits per id and probes: a false positive about once in 60,000 checks of a new id (a full layer). */
const BITS_PER_ID = 24;
const PROBES = 16;
/** Small first: every workspace that ingests gets three filters (16 KB each at first). */
const FIRST_CAPACITY = 1 << 12;

/** murmur3's finalizer: every input bit reaches every output bit. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Two independent 32-bit hashes of the UTF-16 code units (two multiplicative hashes, mixed). */
function hashes(id: string): [number, number] {
  let a = 0x811c9dc5;
  let b = id.length;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b + c, 0x9e3779b1) ^ (b >>> 15);
  }
  // An odd step visits every bit position of a power-of-two table.
  return [mix(a), (mix(b ^ 0x5bd1e995) | 1) >>> 0];
}

/** One Bloom filter of fixed capacity (a power-of-two number of bits). */
class Layer {
  readonly bits: Uint32Array;
  private readonly mask: number;
  count = 0;

  constructor(readonly capacity: number) {
    const size = 2 ** Math.ceil(Math.log2(capacity * BITS_PER_ID));
    this.bits = new Uint32Array(size >>> 5);
    this.mask = size - 1;
  }

  add(h1: number, h2: number): void {
    for (let i = 0, h = h1; i < PROBES; i++, h = (h + h2) >>> 0) {
      const bit = h & this.mask;
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
    this.count++;
  }

  has(h1: number, h2: number): boolean {
    for (let i = 0, h = h1; i < PROBES; i++, h = (h + h2) >>> 0) {
      const bit = h & this.mask;
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/** A Bloom filter that grows: a full layer is kept and a new one twice its size takes the adds. */
export class GrowingBloom {
  private readonly layers: Layer[] = [new Layer(FIRST_CAPACITY)];

  add(id: string): void {
    let last = this.layers[this.layers.length - 1]!;
    if (last.count >= last.capacity) this.layers.push((last = new Layer(last.capacity * 2)));
    const [h1, h2] = hashes(id);
    last.add(h1, h2);
  }

  /** False only for an id never added. */
  mightHold(id: string): boolean {
    const [h1, h2] = hashes(id);
    for (const layer of this.layers) if (layer.has(h1, h2)) return true;
    return false;
  }

  get bytes(): number {
    return this.layers.reduce((sum, layer) => sum + layer.bits.byteLength, 0);
  }
}
