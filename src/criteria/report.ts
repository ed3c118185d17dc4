// The revenue report's plan (issue 18 §2): dialect-free, the only input of the printers' revenue
// statements (print/duckdb.ts printRevenue, print/clickhouse.ts clickhousePrinter.revenue). Pure:
// the range, the buckets, the dimension a paying customer is grouped by, the attribution model and
// the people the report is restricted to, as a set plan of the criteria language.

import { type AttributionModel, isTouchModel, type TouchModel } from './attribution.js';
import { type CriteriaError, pointer } from './errors.js';
import type { SetPlan } from './plan.js';
import { type Predicate, type PropertyCatalog, TRAITS_PREFIX } from './schema.js';

export const REPORT_INTERVALS = ['day', 'week', 'month'] as const;
export type ReportInterval = (typeof REPORT_INTERVALS)[number];


/** group_by values read from the touching page view, and the page-view column of each. */
export const TOUCH_DIMENSIONS = {
  channel_category: 'channel_category',
  channel: 'channel',
  campaign: 'campaign',
  medium: 'medium',
  referrer_host: 'referrer_host',
  landing_path: 'path',
} as const;
export type TouchDimension = keyof typeof TOUCH_DIMENSIONS;

/** What a paying customer is grouped by: a column of its touch, or a trait of its person. */
export type ReportGroup = { touch: TouchDimension } | { trait: string };

/** An interval of day gives at most this many buckets (about 2.7 years). */
export const MAX_REPORT_BUCKETS = 1000;

export interface ReportPlan {
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  interval: ReportInterval;
  model: AttributionModel;
  /** The touches that count before each payment (every model but first_touch): this many days back. */
  lookbackDays: number;
  /** time_decay's half-life. */
  halfLifeDays: number;
  group: ReportGroup;
  /** The profiles the report is restricted to; null: every paying customer. */
  audience: SetPlan | null;
  /** Every amount in this currency (lowercase), converted at its day's rate (currency.ts); unset or null: per currency. */
  currency?: string | null;
}

const DAY_MS = 86_400_000;

/** The start of the bucket holding `at`, UTC: the day, the Monday of its week, the 1st of its month. */
export function bucketStart(at: Date, interval: ReportInterval): Date {
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  if (interval === 'day') return new Date(day);
  if (interval === 'week') return new Date(day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS);
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
}

/** The number of buckets [from, to) touches. */
export function bucketCount(from: Date, to: Date, interval: ReportInterval): number {
  if (to.getTime() <= from.getTime()) return 0;
  const first = bucketStart(from, interval);
  const last = bucketStart(new Date(to.getTime() - 1), interval);
  if (interval === 'month') {
    return (last.getUTCFullYear() - first.getUTCFullYear()) * 12 + last.getUTCMonth() - first.getUTCMonth() + 1;
  }
  return Math.round((last.getTime() - first.getTime()) / (interval === 'day' ? DAY_MS : 7 * DAY_MS)) + 1;
}

/** A group_by value: a touch dimension, `traits.<path>` of a trait defined in the workspace, or a fault at `/group_by`. */
export function reportGroup(groupBy: string, catalog: PropertyCatalog): ReportGroup | CriteriaError {
  if (Object.hasOwn(TOUCH_DIMENSIONS, groupBy)) return { touch: groupBy as TouchDimension };
  const path = groupBy.startsWith(TRAITS_PREFIX) ? groupBy.slice(TRAITS_PREFIX.length) : null;
  if (path !== null && catalog.traits.has(path)) return { trait: path };
  return {
    code: 'unknown_field',
    path: pointer('', 'group_by'),
    message: `unknown group_by "${groupBy}": allowed are ${Object.keys(TOUCH_DIMENSIONS).join(', ')}, or traits.<path> with a trait path seen on this workspace's persons`,
  };
}

/**
 * The people of the report: the audience's (criteria planned at the report's evaluation time), and
 * the persons matching every trait predicate of the filter. An empty filter restricts nothing.
 */
export function reportAudience(criteria: SetPlan | null, filter: Predicate[]): SetPlan | null {
  const persons: SetPlan | null = filter.length > 0 ? { kind: 'scan', scan: { table: 'persons', predicates: filter } } : null;
  if (criteria && persons) return { kind: 'intersect', inputs: [criteria, persons] };
  return criteria ?? persons;
}

/** A report split per payment: its model and the touch column grouped by; null for first_touch or a trait group. */
export function perPayment(report: ReportPlan): { model: TouchModel; touch: TouchDimension } | null {
  return 'touch' in report.group && isTouchModel(report.model) ? { model: report.model, touch: report.group.touch } : null;
}
