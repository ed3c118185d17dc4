// A paying customer's link to a person (spec "States and transitions"): the latest non-null
// tr_user_id / tr_visitor_id by notification time, then the email fallback. Decided on the state of
// the notification's group (group.ts), in arrival order.

import type { CustomerRecord } from '../store/control/payments.js';
import type { PaymentGroup } from './group.js';

export interface Signals {
  userId: string | null;
  visitorId: string | null;
  /** The email a payment object carries (null: none). */
  email: string | null;
  /** The Customer object's email: null when it has none, undefined when the notification shows none. */
  customerEmail: string | null | undefined;
}

const newer = (stored: Date | null, created: Date) => stored === null || stored.getTime() <= created.getTime();

/** Merges one notification's signals into the customer and re-decides its link when they changed. */
export async function updateCustomer(group: PaymentGroup, customerId: string, signals: Signals, created: Date, now: Date): Promise<void> {
  const existing = group.customer(customerId);
  const c: CustomerRecord = existing ?? {
    customer_id: customerId, email: null, customer_email: null, customer_email_created: null, payment_email: null,
    payment_email_created: null, person_key: null, visitor_key: null, tr_user_id: null, tr_visitor_id: null,
    tr_user_id_created: null, tr_visitor_id_created: null, link_state: 'unmatched',
  };
  let changed = existing === null;
  let dirty = changed;
  if (signals.userId !== null && newer(c.tr_user_id_created, created)) {
    changed ||= c.tr_user_id !== signals.userId;
    c.tr_user_id = signals.userId;
    c.tr_user_id_created = created;
    dirty = true;
  }
  if (signals.visitorId !== null && newer(c.tr_visitor_id_created, created)) {
    changed ||= c.tr_visitor_id !== signals.visitorId;
    c.tr_visitor_id = signals.visitorId;
    c.tr_visitor_id_created = created;
    dirty = true;
  }
  if (signals.email !== null && newer(c.payment_email_created, created)) {
    c.payment_email = signals.email;
    c.payment_email_created = created;
    dirty = true;
  }
  if (signals.customerEmail !== undefined && newer(c.customer_email_created, created)) {
    c.customer_email = signals.customerEmail;
    c.customer_email_created = created;
    dirty = true;
  }
  // The Customer object is where the processor keeps the email current; the copies on invoices and
  // charges are snapshots (or a card's billing email), used only while the Customer shows none.
  const email = c.customer_email ?? c.payment_email;
  const emailChanged = email !== c.email;
  c.email = email;
  // Unchanged signals keep the decided link: re-deciding could undo a visitor's later move.
  if (changed) await decideLink(group, c, now);
  else if (emailChanged) await emailMoved(group, c, now);
  if (dirty || emailChanged) group.saveCustomer(c);
}

/**
 * A new email re-decides only a customer without metadata: metadata wins over email (spec rule 5),
 * and re-running a metadata link would pull its visitor back from a later move. A tr_user_id's
 * person is offered the email, as when it was linked.
 */
async function emailMoved(group: PaymentGroup, c: CustomerRecord, now: Date): Promise<void> {
  if (c.tr_user_id !== null) {
    if (c.email !== null) group.resolve({ external_id: c.tr_user_id, email: c.email, at: now });
  } else if (c.tr_visitor_id === null) {
    await decideLink(group, c, now);
  }
}

async function decideLink(group: PaymentGroup, c: CustomerRecord, now: Date): Promise<void> {
  c.person_key = null;
  c.visitor_key = null;
  if (c.tr_user_id !== null) {
    // As POST /v1/persons with external_id (+ visitor_id, email): find or create, link the visitor,
    // record the payer's email when the person has none and nobody else holds it.
    c.link_state = 'linked';
    group.resolve({ external_id: c.tr_user_id, visitor_id: c.tr_visitor_id ?? undefined, email: c.email ?? undefined, at: now }, { customer: c, via: 'user' });
  } else if (c.tr_visitor_id !== null) {
    // The customer follows its visitor's link; the resolution sets it (linked, or deferred while anonymous).
    group.resolve({ visitor_id: c.tr_visitor_id, at: now }, { customer: c, via: 'visitor' });
  } else {
    group.settled(c);
    const person = c.email === null ? null : await group.personByEmail(c.email);
    c.person_key = person;
    c.link_state = person !== null ? 'email_matched' : 'unmatched';
  }
}
