// Numbers that only increase, for the versions of ClickHouse's mutable rows and the builds of work
// lists: from the wall clock, so they keep increasing across restarts, and one more than the last
// given whenever the clock has not moved (or went back). One per store instance.

export class RisingClock {
  private last = 0n;

  /** `unitsPerMs`: the clock's resolution (1,000,000: nanoseconds; 1,000: microseconds). */
  constructor(private readonly unitsPerMs: bigint) {}

  /** A number above every one given before, and above any moved past. */
  next(): bigint {
    const now = BigInt(Date.now()) * this.unitsPerMs;
    this.last = now > this.last ? now : this.last + 1n;
    return this.last;
  }

  /** Moves the clock past `stored` (a number written before this process started). */
  movePast(stored: bigint): void {
    if (stored > this.last) this.last = stored;
  }
}
