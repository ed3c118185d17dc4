// A verified processor notification, read defensively: the processor's objects are loosely typed
// JSON, and a field of an unexpected shape is treated as absent rather than failing the delivery.

import { AppError } from '../errors.js';
import { normalizeEmail } from '../ingest/identity.js';

export type Json = Record<string, unknown>;

export interface Notification {
  id: string;
  type: string;
  created: Date;
  /** The processor's mode (live or test); null when the notification does not say. */
  livemode: boolean | null;
  object: Json;
}

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A non-empty string, else null. */
export const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

export const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);

/** An id field: the id string, or an expanded object's `id`. */
export const idOf = (v: unknown): string | null => str(v) ?? (isObject(v) ? str(v.id) : null);

export const field = (v: unknown, ...path: string[]): unknown => path.reduce<unknown>((at, key) => (isObject(at) ? at[key] : undefined), v);

const seconds = (v: unknown): Date | null => {
  const n = int(v);
  return n === null || n < 0 || n > 253_402_300_799 ? null : new Date(n * 1000);
};

export const timeOf = seconds;

export function parseNotification(event: unknown): Notification {
  const id = isObject(event) ? str(event.id) : null;
  const type = isObject(event) ? str(event.type) : null;
  const created = isObject(event) ? seconds(event.created) : null;
  const object = field(event, 'data', 'object');
  if (!id || id.length > 256 || !type || !created || !isObject(object)) {
    throw new AppError('invalid_request', 'a notification needs id, type, created (unix seconds) and data.object');
  }
  const livemode = isObject(event) && typeof event.livemode === 'boolean' ? event.livemode : null;
  return { id, type, created, livemode, object };
}

/** The object family of a notification type: `customer.subscription.updated` → `customer.subscription`. */
export const familyOf = (type: string): string => type.slice(0, Math.max(0, type.lastIndexOf('.')));

/** Attribution metadata is read from these object families only (spec: never charges, refunds, invoices). */
const METADATA_FAMILIES = new Set(['checkout.session', 'payment_intent', 'customer.subscription']);

export function metadataOf(n: Notification): { userId: string | null; visitorId: string | null } {
  if (!METADATA_FAMILIES.has(familyOf(n.type))) return { userId: null, visitorId: null };
  const metadata = n.object.metadata;
  return { userId: str(field(metadata, 'tr_user_id')), visitorId: str(field(metadata, 'tr_visitor_id')) };
}

/** Families whose objects carry no payer email of their own (a Customer's is customerEmailOf's). */
const NO_EMAIL_FAMILIES = new Set(['refund', 'charge.refund', 'customer', 'invoice_payment']);

/** The email copied onto a payment object, normalized. */
export function emailOf(n: Notification): string | null {
  if (NO_EMAIL_FAMILIES.has(familyOf(n.type))) return null;
  const o = n.object;
  const raw = str(field(o, 'customer_details', 'email')) ?? str(o.customer_email) ?? str(o.receipt_email)
    ?? str(field(o, 'billing_details', 'email'));
  return raw === null ? null : normalizedOrNull(raw);
}

/**
 * The Customer object's own email: the object of a `customer.*` notification, or an expanded
 * `customer`. null when the Customer has none; undefined when the notification shows no Customer
 * email (a customer id, a deleted Customer, an `email` that is not a string).
 */
export function customerEmailOf(n: Notification): string | null | undefined {
  const customer = familyOf(n.type) === 'customer' ? n.object : n.object.customer;
  if (!isObject(customer) || customer.deleted === true) return undefined;
  if (customer.email === null) return null;
  return typeof customer.email === 'string' ? normalizedOrNull(customer.email) : undefined;
}

/** The id of the Customer a notification is about: its object for `customer.*`, else its `customer` field. */
export const customerIdOf = (n: Notification): string | null =>
  (familyOf(n.type) === 'customer' ? str(n.object.id) : idOf(n.object.customer));

const normalizedOrNull = (raw: string): string | null => normalizeEmail(raw) || null;
