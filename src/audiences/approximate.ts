// The approximate count of an audience whose exact count missed its budget: the same query over a
// deterministic sample of profiles (a hash of the profile key, criteria/plan.ts Sample), scaled by
// the sample's fraction, with a 95 % interval.

import { type Sample, type SetPlan, sampleFraction } from '../criteria/index.js';
import type { EstimateTurn } from '../store/analytics.js';
import type { Approximate } from './schema.js';

const Z_95 = 1.959964;

/**
 * The audience size N from `sampled` of its profiles, each in the sample with probability p: the
 * sampled count is binomial (N, p), and the interval is every N whose expected count p·N lies within
 * 1.96 standard deviations √(N·p·(1 − p)) of it (the score interval, inverted for N; sound at 0
 * sampled, where a normal interval around 0 is empty). It never goes below the profiles counted.
 */
export function approximate(sampled: number, p: number): Approximate {
  const spread = Z_95 * Math.sqrt(p * (1 - p));
  const root = Math.sqrt(spread * spread + 4 * p * sampled);
  const low = ((root - spread) / (2 * p)) ** 2;
  const high = ((root + spread) / (2 * p)) ** 2;
  return { count: Math.round(sampled / p), low: Math.max(sampled, Math.floor(low)), high: Math.ceil(high), sample_fraction: p };
}

/** The sampled count within what is left of the turn's budget, scaled; null when it missed too. */
export async function approximateCount(turn: EstimateTurn, plan: SetPlan, ws: string, sample: Sample): Promise<Approximate | null> {
  const sampled = await turn.count(plan, ws, { sample });
  return sampled === null ? null : approximate(sampled, sampleFraction(sample));
}
