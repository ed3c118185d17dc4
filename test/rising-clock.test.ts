// The clock of ClickHouse's row versions and work-list builds (src/store/clickhouse/clock.ts): one
// per store instance, always rising.

import { afterEach, describe, expect, it, vi } from 'vitest';
import { RisingClock } from '../src/store/clickhouse/clock.js';

describe('rising clock', () => {
  afterEach(() => vi.useRealTimers());

  it('counts up by one while the wall clock stands still or goes back', () => {
    vi.useFakeTimers({ now: new Date('2026-06-15T12:00:00Z'), toFake: ['Date'] });
    const clock = new RisingClock(1000n);
    const first = clock.next();
    expect(first).toBe(BigInt(Date.parse('2026-06-15T12:00:00Z')) * 1000n);
    expect(clock.next()).toBe(first + 1n);
    vi.setSystemTime(new Date('2026-06-15T11:00:00Z'));
    expect(clock.next()).toBe(first + 2n);
  });

  it('moves past a number stored before, and never back', () => {
    const clock = new RisingClock(1_000_000n);
    const stored = BigInt(Date.now() + 3_600_000) * 1_000_000n;
    clock.movePast(stored);
    clock.movePast(1n);
    expect(clock.next()).toBe(stored + 1n);
  });

  it('keeps a count of its own for each store', () => {
    vi.useFakeTimers({ now: new Date('2026-06-15T12:00:00Z'), toFake: ['Date'] });
    const [a, b] = [new RisingClock(1000n), new RisingClock(1000n)];
    a.movePast(a.next() + 10n);
    expect(b.next()).toBe(BigInt(Date.now()) * 1000n);
  });
});
