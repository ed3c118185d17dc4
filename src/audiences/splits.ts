// Splits of an audience (decisions §14): holdouts and arms placed by the audience's own salt
// (criteria/splits.ts). A split names the destinations it is pushed to by their positions in the
// audience's `destinations`; a split naming none is a holdout, never pushed anywhere.
//
// With splits, every destination must be named by a split: one that no split names would receive
// either nothing (a silent, useless destination) or every member (the holdout pushed to a platform,
// the experiment spoiled). Refusing it is the only choice that cannot go wrong unnoticed.

import { z } from 'zod';
import { placement, SPLIT_BUCKETS, type SplitPlacement, type SplitRoute, splitOf } from '../criteria/index.js';
import type { FieldError } from '../errors.js';
import type { DiffMember } from '../store/analytics.js';

export const MAX_SPLITS = 20;

export const splitInput = z.object({
  name: z.string().trim().min(1).max(100),
  percent: z.number().gt(0).max(100)
    .refine((v) => Math.abs(v * 100 - Math.round(v * 100)) < 1e-6, 'at most two decimals (members are placed to the hundredth of a percent)')
    .describe('the share of the members placed in this split; the percents add up to 100'),
  destinations: z.array(z.number().int().min(0)).max(10).optional()
    .describe('positions in the audience\'s destinations this split is pushed to; none: a holdout'),
});
export type Split = { name: string; percent: number; destinations: number[] };

export const splitsInput = z.array(splitInput).max(MAX_SPLITS)
  .describe('holdouts and arms: each member placed by a hash of its profile and the audience\'s salt, the same split at every refresh; [] removes them');

export const splitSchema = z.object({ name: z.string(), percent: z.number(), destinations: z.array(z.number().int()) });

export const storedSplits = (json: string): Split[] => JSON.parse(json) as Split[];

/** Every fault of the splits beside the audience's destinations; `given` says which the request sent (faults point there). */
export function splitFaults(splits: Split[], destinationCount: number, given: { splits: boolean; destinations: boolean }): FieldError[] {
  if (splits.length === 0) return [];
  const errors: FieldError[] = [];
  const at = (path: string) => (given.splits ? `/splits${path}` : '/destinations');
  const buckets = splits.reduce((sum, s) => sum + Math.round(s.percent * (SPLIT_BUCKETS / 100)), 0);
  if (buckets !== SPLIT_BUCKETS) errors.push({ field: at(''), message: `the percents add up to ${buckets / 100}; they must add up to 100` });
  splits.forEach((s, i) => {
    if (splits.findIndex((o) => o.name === s.name) !== i) errors.push({ field: at(`/${i}/name`), message: `the name "${s.name}" is taken by an earlier split` });
    s.destinations.forEach((d, j) => {
      if (d >= destinationCount) errors.push({ field: at(`/${i}/destinations/${j}`), message: `no destination at position ${d}: the audience has ${destinationCount}` });
      else if (s.destinations.indexOf(d) !== j) errors.push({ field: at(`/${i}/destinations/${j}`), message: `destination ${d} is named twice` });
    });
  });
  for (let d = 0; d < destinationCount; d++) {
    if (!splits.some((s) => s.destinations.includes(d))) {
      errors.push({
        field: given.destinations ? `/destinations/${d}` : '/splits',
        message: `no split names destination ${d}: with splits, a destination receives only the splits that name it`,
      });
    }
  }
  return errors;
}

/** The audience's placement of its members. */
export const splitPlacement = (splits: Split[], salt: string): SplitPlacement => placement(salt, splits);

/** The audience's placement of its members; null without splits. */
export function audiencePlacement(row: { splits: string; split_salt: string }): SplitPlacement | null {
  const splits = storedSplits(row.splits);
  return splits.length === 0 ? null : splitPlacement(splits, row.split_salt);
}

/** A member of the audience's snapshots with its split, when the audience has splits. */
export function withSplit(row: { splits: string; split_salt: string }): <M extends { profile: number }>(member: M) => M & { split?: string } {
  const p = audiencePlacement(row);
  if (!p) return (member) => member;
  return (member) => ({ ...member, split: splitOf(p, member.profile)! });
}

/** A delivery page's members that go to a destination, each with its split; `filtered` when some may not. */
export type SplitRouting = ((members: DiffMember[]) => DiffMember[]) & { filtered: boolean };

/**
 * The routing of the audience's members to its destination `destinationId`: all of them without
 * splits; else the members of the splits naming it. A member's split is a function of its profile,
 * so the destination's state is the acknowledged state's members of its splits, and a work list
 * filtered the same way carries exactly the changes it lacks.
 */
export function splitRouting(row: AudienceRouting, destinationId: string): SplitRouting {
  const route = splitRoute(row, destinationId);
  if (!route) return Object.assign((members: DiffMember[]) => members, { filtered: false });
  const names = new Set(route.names);
  const routed = (members: DiffMember[]) => members.flatMap((m) => {
    const split = splitOf(route.placement, m.profile)!;
    return names.has(split) ? [{ ...m, split }] : [];
  });
  return Object.assign(routed, { filtered: true });
}

type AudienceRouting = { splits: string; split_salt: string; destinations: string };

/** The splits sent to destination `destinationId`; null without splits (every member is). */
export function splitRoute(row: AudienceRouting, destinationId: string): SplitRoute | null {
  const splits = storedSplits(row.splits);
  if (splits.length === 0) return null;
  const position = (JSON.parse(row.destinations) as { id: string }[]).findIndex((d) => d.id === destinationId);
  return { placement: splitPlacement(splits, row.split_salt), names: splits.filter((s) => s.destinations.includes(position)).map((s) => s.name) };
}
