// A paying customer's link to a person (spec "States and transitions"): the latest non-null
// tr_user_id / tr_visitor_id by notification time, then the email fallback.

import { resolveIdentities } from '../ingest/identity.js';
import type { Store } from '../store/db.js';
import { type CustomerRecord, getCustomer, linkDeferredCustomers, saveCustomer } from '../store/payments.js';
import { personsBy, type Tx } from '../store/people.js';

export interface Signals {
  userId: string | null;
  visitorId: string | null;
  email: string | null;
}

const newer = (stored: Date | null, created: Date) => stored === null || stored.getTime() <= created.getTime();

/** Merges one notification's signals into the customer and re-decides its link when they changed. */
export async function updateCustomer(store: Store, tx: Tx, ws: string, customerId: string, signals: Signals, created: Date, now: Date): Promise<void> {
  const existing = await getCustomer(tx, ws, customerId);
  const c: CustomerRecord = existing ?? {
    customer_id: customerId, email: null, person_key: null, visitor_key: null, tr_user_id: null, tr_visitor_id: null,
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
  if (signals.email !== null && signals.email !== c.email) {
    c.email = signals.email;
    changed = dirty = true;
  }
  // Unchanged signals keep the decided link: re-deciding could undo a visitor's later move.
  if (changed) await decideLink(store, tx, ws, c, now);
  if (dirty) await saveCustomer(tx, ws, c, existing === null, now);
}

async function decideLink(store: Store, tx: Tx, ws: string, c: CustomerRecord, now: Date): Promise<void> {
  c.person_key = null;
  c.visitor_key = null;
  if (c.tr_user_id !== null) {
    // As POST /v1/persons with external_id (+ visitor_id, email): find or create, link the visitor,
    // record the payer's email when the person has none and nobody else holds it.
    const { resolved, links } = await resolveIdentities(store, tx, ws,
      [{ external_id: c.tr_user_id, visitor_id: c.tr_visitor_id ?? undefined, email: c.email ?? undefined, at: now }], now);
    c.person_key = resolved[0]!.person_key;
    c.visitor_key = resolved[0]!.visitor_key;
    c.link_state = 'linked';
    await linkDeferredCustomers(tx, ws, links.map((l) => l.visitorKey), now);
  } else if (c.tr_visitor_id !== null) {
    // The customer follows its visitor's link (current at read time); anonymous for now: deferred.
    const { resolved } = await resolveIdentities(store, tx, ws, [{ visitor_id: c.tr_visitor_id, at: now }], now);
    c.visitor_key = resolved[0]!.visitor_key;
    c.link_state = resolved[0]!.person_key !== null ? 'linked' : 'deferred';
  } else if (c.email !== null) {
    const [person] = await personsBy(tx, ws, 'email', [c.email]);
    c.person_key = person?.person_key ?? null;
    c.link_state = person ? 'email_matched' : 'unmatched';
  } else {
    c.link_state = 'unmatched';
  }
}
