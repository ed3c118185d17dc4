// Refresh cadences written as `15m`, `1h`, `1d`.

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export const DEFAULT_REFRESH_EVERY = '1h';
export const MIN_REFRESH_MS = 5 * UNIT_MS.m;
/** A year: beyond it a cadence is more likely a typo than a plan. */
export const MAX_REFRESH_MS = 365 * UNIT_MS.d;

/** Milliseconds of a duration such as `15m`, or null when it is not one. */
export function durationMs(text: string): number | null {
  const match = /^([1-9]\d{0,5})([mhd])$/.exec(text);
  if (!match) return null;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
