// The admission of estimates, shared by the engines: at most `size` run at once and `maxWaiting`
// more wait, each only until its deadline (the wait spends its budget); a full queue refuses at
// once. What runs an estimate is the engine's: a DuckDB connection, a ClickHouse run slot.

import { EstimatesBusy, type EstimateStats } from '../analytics.js';

interface Place {
  deadline: number;
}

interface Waiter<T> extends Place {
  grant: (value: T | null) => void;
  timer: NodeJS.Timeout;
}

export class EstimateAdmission<T> {
  private readonly places = new Set<Place>();
  private readonly waiters: Waiter<T>[] = [];
  private running = 0;
  private started = 0;
  private expired = 0;
  private refused = 0;

  constructor(readonly size: number, private readonly maxWaiting: number) {}

  /** A place for an estimate ending by `deadline`; EstimatesBusy when every place is taken. */
  admit(deadline: number): Place {
    if (this.places.size >= this.size + this.maxWaiting) {
      this.refused++;
      // Every estimate under way ends by its deadline (stopped if need be).
      throw new EstimatesBusy(Math.max(...[...this.places].map((p) => p.deadline)) - performance.now());
    }
    const place = { deadline };
    this.places.add(place);
    return place;
  }

  leave(place: Place): void {
    this.places.delete(place);
  }

  /**
   * What runs the estimate: `take()`'s value when it has one, else the next one released before
   * `deadline`; null once the deadline has passed (the estimate never runs).
   */
  async acquire(deadline: number, take: () => T | undefined | Promise<T | undefined>): Promise<T | null> {
    const now = performance.now();
    if (now >= deadline) {
      this.expired++;
      return null;
    }
    const value = this.running < this.size ? await take() : undefined;
    if (value !== undefined) return this.hand(value);
    return new Promise((grant) => {
      const waiter: Waiter<T> = {
        deadline,
        grant,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          this.expired++;
          grant(null);
        }, deadline - now),
      };
      this.waiters.push(waiter);
    });
  }

  /** An estimate has ended: its `value` goes to the oldest waiter still within its deadline; false when none took it. */
  release(value: T): boolean {
    this.running--;
    for (let next = this.waiters.shift(); next; next = this.waiters.shift()) {
      clearTimeout(next.timer);
      if (performance.now() < next.deadline) {
        next.grant(this.hand(value));
        return true;
      }
      // A deadline that passed before its timer ran: that waiter answers over budget.
      this.expired++;
      next.grant(null);
    }
    return false;
  }

  stats(): EstimateStats {
    return { running: this.running, waiting: this.places.size - this.running, started: this.started, expired: this.expired, refused: this.refused };
  }

  private hand(value: T): T {
    this.running++;
    this.started++;
    return value;
  }
}
