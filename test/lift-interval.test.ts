// Coverage of the lift report's 95 % interval (reports/interval.ts) by simulation: per-member
// revenue mostly zeros with heavy-tailed (lognormal) payments, two arms with different true means,
// the interval computed from sums alone as the report does, and how often it holds the true difference.

import { describe, expect, it } from 'vitest';
import { differenceOfMeans, type Sums } from '../src/reports/interval.js';
import { tierRuns } from './support/tier.js';
import { seededRandom } from './support/random.js';

/** A member's revenue: 0 with probability 1 − pay, else a lognormal(mu, sigma) amount. */
interface Arm { n: number; pay: number; mu: number; sigma: number }
const trueMean = (a: Arm) => a.pay * Math.exp(a.mu + (a.sigma * a.sigma) / 2);

function draw(arm: Arm, next: () => number): Sums {
  let sum = 0;
  let squares = 0;
  for (let i = 0; i < arm.n; i++) {
    if (next() >= arm.pay) continue;
    const z = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    const x = Math.round(Math.exp(arm.mu + arm.sigma * z));
    sum += x;
    squares += x * x;
  }
  return { n: arm.n, sum, squares };
}

function coverage(treatment: Arm, holdout: Arm, trials: number, seed: number): number {
  const next = seededRandom(seed);
  const truth = trueMean(treatment) - trueMean(holdout);
  let held = 0;
  for (let k = 0; k < trials; k++) {
    const d = differenceOfMeans(draw(treatment, next), draw(holdout, next))!;
    if (d.low <= truth && truth <= d.high) held++;
  }
  return held / trials;
}

describe('the lift interval', () => {
  it('is the difference of the means with Welch\'s standard error', () => {
    const a = { n: 4, sum: 10, squares: 30 }; // 1, 2, 3, 4: mean 2.5, variance 5/3
    const b = { n: 3, sum: 3, squares: 5 }; // 0, 1, 2: mean 1, variance 1
    const d = differenceOfMeans(a, b)!;
    expect(d.estimate).toBeCloseTo(1.5, 12);
    expect(d.high - d.estimate).toBeCloseTo(1.959963984540054 * Math.sqrt(5 / 3 / 4 + 1 / 3), 12);
    expect(differenceOfMeans({ n: 1, sum: 1, squares: 1 }, b)).toBeNull();
  });

  // 5 % of members pay, lognormal amounts (sigma 1.2: a long right tail), a 20 % lift in paying rate.
  const trials = tierRuns(1000);
  // The floor each case is held to: about 95 % with some 100 payers a side; a holdout of about 50
  // payers under-covers (measured 0.903 over 1,000 trials: docs/reports.md says so).
  it.each([
    ['2,000 against 2,000', 2000, 2000, 0.93],
    ['9,000 against 1,000', 9000, 1000, 0.88],
  ])('holds the true difference near 95 %% of the time with heavy-tailed, mostly-zero revenue (%s)', (_, nt, nh, floor) => {
    const treatment = { n: nt, pay: 0.06, mu: 8, sigma: 1.2 };
    const holdout = { n: nh, pay: 0.05, mu: 8, sigma: 1.2 };
    const covered = coverage(treatment, holdout, trials, 38 + nt);
    // Binomial noise of the trials: 3 standard errors.
    const noise = 3 * Math.sqrt((0.95 * 0.05) / trials);
    expect(covered).toBeGreaterThan(floor - noise);
    expect(covered).toBeLessThan(0.97 + noise);
  });
});
