// The 95 % interval of a difference of means from sums alone (n, Σx, Σx²): Welch's unequal-variance
// standard error with the normal quantile. The lift statement returns these sums per split, so no
// member's revenue leaves the database; docs/reports.md says why this and not a bootstrap, and
// test/lift-interval.test.ts measures its coverage on heavy-tailed, mostly-zero revenue.

/** The two-sided 95 % quantile of the standard normal distribution. */
export const Z_95 = 1.959963984540054;

export interface Sums {
  n: number;
  sum: number;
  squares: number;
}

export interface Difference {
  estimate: number;
  low: number;
  high: number;
}

/** The sample variance (n − 1 in the denominator); 0 for fewer than two values. */
function variance({ n, sum, squares }: Sums): number {
  if (n < 2) return 0;
  return Math.max(0, (squares - (sum * sum) / n) / (n - 1));
}

/** mean(a) − mean(b) with its 95 % interval; null when either side has fewer than two members. */
export function differenceOfMeans(a: Sums, b: Sums): Difference | null {
  if (a.n < 2 || b.n < 2) return null;
  const estimate = a.sum / a.n - b.sum / b.n;
  const half = Z_95 * Math.sqrt(variance(a) / a.n + variance(b) / b.n);
  return { estimate, low: estimate - half, high: estimate + half };
}
