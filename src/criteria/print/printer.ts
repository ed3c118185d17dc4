// What a dialect prints of a plan: one statement per kind of query, with its bound parameters
// (`Q`: the dialect's statement). The store's query layer (store/query/) runs them through an
// engine's driver; a new kind of query is a method here, printed by each dialect.

import type { Breakdown, Sample, SetPlan } from '../plan.js';
import type { LiftPlan } from '../lift.js';
import type { ReportPlan } from '../report.js';

export interface Printer<Q> {
  /** `SELECT count … AS count`: the audience size, or of its sampled part. */
  count(plan: SetPlan, workspaceId: string, sample?: Sample): Q;
  /**
   * The audience's profiles per value of `breakdown`, most first, at most BREAKDOWN_TOP rows:
   * `{ value, count, total }`, total being the audience size.
   */
  breakdown(plan: SetPlan, workspaceId: string, breakdown: Breakdown): Q;
  /** The profiles of any of `plans` per membership mask (bit i: in plans[i]): `{ mask, count }`. */
  overlap(plans: SetPlan[], workspaceId: string): Q;
  /** The members as snapshot rows `{ profile, person_id, visitor_id, external_id, email }`, by profile. */
  members(plan: SetPlan, workspaceId: string): Q;
  /** The members' public ids `{ person_id, visitor_id, external_id, email }`, by person_id then visitor_id (people first). */
  membersByIds(plan: SetPlan, workspaceId: string): Q;
  /** `SELECT profile`: the members' profiles alone, for `INSERT … SELECT` of a snapshot inside the database. */
  profiles(plan: SetPlan, workspaceId: string): Q;
  /** The revenue report's rows at four levels (level = grouping(bucket, grp, currency)). */
  revenue(report: ReportPlan, workspaceId: string): Q;
  /**
   * `{ currency, day }` of the earliest money row of the report's range whose conversion to
   * `report.currency` lacks a rate (its own currency's, or the report's), none when every row has both.
   */
  missingRate(report: ReportPlan, workspaceId: string): Q;
  /**
   * Statements to run in order that freeze the revenue attribution of these payment customers
   * before their person goes (privacy deletes): the profile each is attributed through and its
   * touches, which `revenue` reads for a profile no longer stored. Harmless when run again.
   */
  freeze(workspaceId: string, customerIds: string[]): Q[];
  /**
   * `{ profile, value }` of these profiles (persons, and minus the key of anonymous visitors)
   * that have a first touch: its channel category (decisions §10, GET /people's first_touch_channel).
   */
  firstTouches(workspaceId: string, profiles: number[]): Q;
  /**
   * The lift report's rows (criteria/lift.ts LiftRow, with `level` 1 for a split's counts, 0 for
   * its money in a currency): a snapshot's members per split and their net revenue in the range.
   */
  lift(plan: LiftPlan, workspaceId: string): Q;
}
