// The export layout: one parquet file (or one in-memory array) per table, with public string ids.
// The fixture generator writes it, the loader and the CLI read it, tests build datasets in it.
// Inside the store the same rows carry integer keys instead (see duckdb/migrations.ts).

export interface PersonRow {
  person_id: string;
  external_id: string | null;
  email: string | null;
  name: string | null;
  /** JSON object text. */
  traits: string | null;
  created_at: Date;
}

export interface VisitorRow {
  visitor_id: string;
  /** The person this visitor is linked to now, or null for an anonymous visitor. */
  person_id: string | null;
  first_seen_at: Date;
}

export interface EventRow {
  event_id: string;
  event_name: string;
  ts: Date;
  /** Set when the event was sent with an identifier that resolved to a person. */
  person_id: string | null;
  visitor_id: string | null;
  /** JSON object text. */
  properties: string;
}

export interface PageviewRow {
  pageview_id: string;
  visitor_id: string;
  ts: Date;
  url: string;
  referrer: string | null;
  host: string;
  path: string;
  referrer_host: string | null;
  source: string | null;
  medium: string | null;
  campaign: string | null;
  channel: string;
  channel_category: string;
}

export interface CustomerRow {
  customer_id: string;
  email: string | null;
  person_id: string | null;
  visitor_id: string | null;
  link_state: 'linked' | 'deferred' | 'email_matched' | 'unmatched';
}

export interface SubscriptionRow {
  subscription_id: string;
  customer_id: string;
  status: string;
  price_id: string | null;
  product_id: string | null;
  interval: string | null;
  amount: number | null;
  currency: string | null;
  cancel_at_period_end: boolean;
  created_at: Date;
}

export interface InvoiceRow {
  invoice_id: string;
  customer_id: string;
  subscription_id: string | null;
  status: string;
  amount_due: number;
  amount_paid: number;
  currency: string;
  created_at: Date;
}

export interface PaymentEventRow {
  customer_id: string;
  kind: 'first_paid_invoice' | 'subscription_canceled' | 'refund_issued';
  ts: Date;
  object_id: string;
}

export interface Dataset {
  persons: PersonRow[];
  visitors: VisitorRow[];
  events: EventRow[];
  pageviews: PageviewRow[];
  customers: CustomerRow[];
  subscriptions: SubscriptionRow[];
  invoices: InvoiceRow[];
  payment_events: PaymentEventRow[];
}

export const DATASET_TABLES = [
  'persons', 'visitors', 'events', 'pageviews', 'customers', 'subscriptions', 'invoices', 'payment_events',
] as const satisfies readonly (keyof Dataset)[];
export type DatasetTable = (typeof DATASET_TABLES)[number];

export type LayoutType = 'VARCHAR' | 'TIMESTAMP' | 'BIGINT' | 'BOOLEAN';

/** Column names and types of each export file, in order. */
export const LAYOUT_COLUMNS: { [T in DatasetTable]: readonly (readonly [keyof Dataset[T][number], LayoutType])[] } = {
  persons: [['person_id', 'VARCHAR'], ['external_id', 'VARCHAR'], ['email', 'VARCHAR'], ['name', 'VARCHAR'],
    ['traits', 'VARCHAR'], ['created_at', 'TIMESTAMP']],
  visitors: [['visitor_id', 'VARCHAR'], ['person_id', 'VARCHAR'], ['first_seen_at', 'TIMESTAMP']],
  events: [['event_id', 'VARCHAR'], ['event_name', 'VARCHAR'], ['ts', 'TIMESTAMP'], ['person_id', 'VARCHAR'],
    ['visitor_id', 'VARCHAR'], ['properties', 'VARCHAR']],
  pageviews: [['pageview_id', 'VARCHAR'], ['visitor_id', 'VARCHAR'], ['ts', 'TIMESTAMP'], ['url', 'VARCHAR'],
    ['referrer', 'VARCHAR'], ['host', 'VARCHAR'], ['path', 'VARCHAR'], ['referrer_host', 'VARCHAR'],
    ['source', 'VARCHAR'], ['medium', 'VARCHAR'], ['campaign', 'VARCHAR'], ['channel', 'VARCHAR'],
    ['channel_category', 'VARCHAR']],
  customers: [['customer_id', 'VARCHAR'], ['email', 'VARCHAR'], ['person_id', 'VARCHAR'], ['visitor_id', 'VARCHAR'],
    ['link_state', 'VARCHAR']],
  subscriptions: [['subscription_id', 'VARCHAR'], ['customer_id', 'VARCHAR'], ['status', 'VARCHAR'],
    ['price_id', 'VARCHAR'], ['product_id', 'VARCHAR'], ['interval', 'VARCHAR'], ['amount', 'BIGINT'],
    ['currency', 'VARCHAR'], ['cancel_at_period_end', 'BOOLEAN'], ['created_at', 'TIMESTAMP']],
  invoices: [['invoice_id', 'VARCHAR'], ['customer_id', 'VARCHAR'], ['subscription_id', 'VARCHAR'], ['status', 'VARCHAR'],
    ['amount_due', 'BIGINT'], ['amount_paid', 'BIGINT'], ['currency', 'VARCHAR'], ['created_at', 'TIMESTAMP']],
  payment_events: [['customer_id', 'VARCHAR'], ['kind', 'VARCHAR'], ['ts', 'TIMESTAMP'], ['object_id', 'VARCHAR']],
};
