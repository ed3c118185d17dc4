// The criteria language as data: node shapes after validation, and the whitelists that
// validation, planning and the reference evaluator all read. See docs/criteria.md.

export const CRITERIA_VERSION = 1;

export const PREDICATE_OPS = [
  '=', '!=', '>', '>=', '<', '<=', 'in', 'not_in',
  'contains', 'not_contains', 'starts_with', 'ends_with', 'is_set', 'is_not_set',
] as const;
export type PredicateOp = (typeof PREDICATE_OPS)[number];

export const COUNT_OPS = ['>=', '>', '=', '<=', '<', '!='] as const;
export type CountOp = (typeof COUNT_OPS)[number];

/** Ops that match exactly where their positive counterpart does not (absent values included). */
export const NEGATED_OPS: Partial<Record<PredicateOp, PredicateOp>> = {
  '!=': '=',
  not_in: 'in',
  not_contains: 'contains',
  is_not_set: 'is_set',
};

export type Scalar = string | number | boolean;

export interface Predicate {
  /** The field as written by the caller (`payload.plan`, `channel`, `status`). */
  field: string;
  op: PredicateOp;
  /** Absent for is_set / is_not_set; an array for in / not_in. */
  value?: Scalar | Scalar[];
}

export type Window =
  | { kind: 'ever' }
  | { kind: 'last_n_days'; n: number }
  /**
   * Bounds resolved to UTC instants. `from` is inclusive; `to` is inclusive for a datetime and,
   * for a date-only `to`, the next day's midnight with `toExclusive` (so the whole day counts).
   */
  | { kind: 'between'; from: Date; to: Date; toExclusive: boolean };

export interface Count {
  op: CountOp;
  value: number;
}

export interface Occurrence {
  op: 'did' | 'did_not';
  /** null for did_not; for did, `count: null` means at least once ({ op: '>=', value: 1 }). */
  count: Count | null;
  window: Window;
}

export interface ProductEventLeaf {
  source: 'product_event';
  name: string;
  filter: Predicate[];
  occurrence: Occurrence;
}

export interface PageviewLeaf {
  source: 'pageview';
  filter: Predicate[];
  occurrence: Occurrence;
}

export const PAYMENT_EVENT_KINDS = ['first_paid_invoice', 'subscription_canceled', 'refund_issued'] as const;
export type PaymentEventKind = (typeof PAYMENT_EVENT_KINDS)[number];

export interface PaymentsEventLeaf {
  source: 'payments';
  event: PaymentEventKind;
  window: Window;
}

export type PaymentsEntity = 'subscription' | 'invoice';

export interface PaymentsStateLeaf {
  source: 'payments';
  entity: PaymentsEntity;
  predicate: Predicate[];
}

/** The persons whose current traits match every predicate (a state leaf: no occurrence, no window). */
export interface PersonLeaf {
  source: 'person';
  filter: Predicate[];
}

export type Leaf = ProductEventLeaf | PageviewLeaf | PaymentsEventLeaf | PaymentsStateLeaf | PersonLeaf;

export type CriteriaNode =
  | { op: 'and'; children: CriteriaNode[] }
  | { op: 'or'; children: CriteriaNode[] }
  | { op: 'not'; child: CriteriaNode }
  | Leaf;

export interface AudienceCriteria {
  version: 1;
  root: CriteriaNode;
}

export const CHANNEL_CATEGORIES = [
  'Organic Search', 'AI', 'Organic Social', 'Paid Search', 'Paid Social',
  'Email', 'Direct', 'Referral', 'Other',
] as const;
export type ChannelCategory = (typeof CHANNEL_CATEGORIES)[number];

export type FieldType = 'string' | 'number' | 'boolean';

/** A whitelisted, typed column. `enum` lists the only values `=`, `!=`, `in`, `not_in` accept. */
export interface FieldSpec {
  type: FieldType;
  enum?: readonly string[];
  /** Values are normalized like stored hosts before comparison. */
  host?: boolean;
}

export const PAGEVIEW_FIELDS: Record<string, FieldSpec> = {
  path: { type: 'string' },
  host: { type: 'string', host: true },
  channel: { type: 'string' },
  channel_category: { type: 'string', enum: CHANNEL_CATEGORIES },
  medium: { type: 'string' },
  campaign: { type: 'string' },
  referrer_host: { type: 'string', host: true },
};

export const SUBSCRIPTION_STATUSES = [
  'incomplete', 'incomplete_expired', 'trialing', 'active', 'past_due', 'canceled', 'unpaid', 'paused',
] as const;
export const INVOICE_STATUSES = ['draft', 'open', 'paid', 'uncollectible', 'void'] as const;

export const PAYMENTS_FIELDS: Record<PaymentsEntity, Record<string, FieldSpec>> = {
  subscription: {
    status: { type: 'string', enum: SUBSCRIPTION_STATUSES },
    price_id: { type: 'string' },
    product_id: { type: 'string' },
    interval: { type: 'string', enum: ['day', 'week', 'month', 'year'] },
    amount: { type: 'number' },
    currency: { type: 'string' },
    cancel_at_period_end: { type: 'boolean' },
  },
  invoice: {
    status: { type: 'string', enum: INVOICE_STATUSES },
    amount_due: { type: 'number' },
    amount_paid: { type: 'number' },
    currency: { type: 'string' },
  },
};

/** Ops each column type supports; payload (JSON) fields accept every op, typed by the value. */
export const OPS_BY_TYPE: Record<FieldType, readonly PredicateOp[]> = {
  string: PREDICATE_OPS,
  number: ['=', '!=', '>', '>=', '<', '<=', 'in', 'not_in', 'is_set', 'is_not_set'],
  boolean: ['=', '!=', 'is_set', 'is_not_set'],
};

/** The workspace's property definitions: the JSON paths its data has shown, which filters may name. */
export interface PropertyCatalog {
  /** Property paths seen per event name (`a.b` for `properties.a.b`): the payload whitelist. */
  readonly events: ReadonlyMap<string, ReadonlySet<string>>;
  /** Trait paths seen on the workspace's persons (`a.b` for `traits.a.b`): the person leaf's whitelist. */
  readonly traits: ReadonlySet<string>;
  /** Every event name received, with properties or not; absent where not known (parquet read in place): no warning then. */
  readonly eventNames?: ReadonlySet<string>;
}

export const PAYLOAD_PREFIX = 'payload.';
export const TRAITS_PREFIX = 'traits.';

export function isNegation(node: CriteriaNode): boolean {
  return ('op' in node && node.op === 'not') ||
    ('occurrence' in node && node.occurrence.op === 'did_not');
}

export function isTimeWindowed(node: CriteriaNode): boolean {
  if ('op' in node) {
    return node.op === 'not' ? isTimeWindowed(node.child) : node.children.some(isTimeWindowed);
  }
  if ('occurrence' in node) return node.occurrence.window.kind !== 'ever';
  if ('event' in node) return node.window.kind !== 'ever';
  return false;
}
