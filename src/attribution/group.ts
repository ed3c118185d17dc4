// The state a group of notifications reads and writes, inside its unit of work. Everything the group
// can read is loaded first, a statement per table for the whole group; each notification is then
// applied in arrival order against this state in memory, by the rules the stores applied one
// notification at a time, so the group ends exactly as one by one would; what changed is written
// last, a statement or two per table. Identity resolution is queued and run once for the group
// (earlier only where an email lookup must see it). A read of a key that was not loaded is a bug,
// and throws rather than answering from an incomplete state.

import { type IdentityInput, resolveIdentities } from '../ingest/identity.js';
import type {
  InvoiceState, PaymentEventKind, PaymentEventState, PaymentStateChanges, StoredPaymentState, SubscriptionState, UnitOfWork, VisitorLink,
} from '../store/analytics.js';
import { isOlder } from '../store/instants.js';
import {
  type CustomerRecord, linkDeferredCustomers, type Money, type PaymentState, readCustomers, readObjects, readPayments, readRefunds, type RefundState,
  SOURCE_RANK, type StoredPayment, type StoredRefund, writeCustomers, writeObjects, writePayments, writeRefunds,
} from '../store/control/payments.js';
import { personsByIdentifier } from '../store/control/merges.js';
import { lockPersons, visitorsById } from '../store/control/people.js';
import type { ControlStore } from '../store/control/store.js';
import { PAID_INVOICE_TYPES, type Plan, type RefundedLevel } from './facts.js';
import { levelOf, standInAmounts, standInId } from './refunds.js';

/** A refund stops counting when the processor reports it failed or canceled. */
const issued = (status: unknown) => status !== 'failed' && status !== 'canceled';

const unique = <T>(values: Iterable<T | null | undefined>): T[] => [...new Set([...values].filter((v): v is T => v !== null && v !== undefined))];
const byKey = <T>(rows: Map<string, T>) => [...rows].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
const eventKey = (e: { kind: string; customer_id: string; object_id: string }) => `${e.kind}\0${e.customer_id}\0${e.object_id}`;

/** A customer's link decision waiting for identity resolution: by its tr_user_id, or by its tr_visitor_id alone. */
export interface Decision {
  customer: CustomerRecord;
  via: 'user' | 'visitor';
}

/** Rows of one table: as loaded (keys of rows that exist), as now, and the keys changed. */
class Rows<T> {
  readonly stored: Set<string>;
  readonly changed = new Set<string>();

  constructor(private readonly what: string, private readonly keys: Set<string>, readonly now: Map<string, T>) {
    this.stored = new Set(now.keys());
  }

  get(key: string): T | undefined {
    if (!this.keys.has(key)) throw new Error(`payment group: ${this.what} ${key} was not loaded`);
    return this.now.get(key);
  }

  set(key: string, row: T): void {
    this.get(key);
    this.now.set(key, row);
    this.changed.add(key);
  }

  /** Forgets a row the group created: it is not written. */
  discard(key: string): void {
    if (this.stored.has(key)) throw new Error(`payment group: ${this.what} ${key} is stored`);
    this.now.delete(key);
    this.changed.delete(key);
  }

  /** Changed rows: new ones and stored ones, by key. */
  split(): { created: T[]; changed: T[] } {
    const rows = (stored: boolean) => byKey(new Map([...this.changed].filter((k) => this.stored.has(k) === stored).map((k) => [k, this.now.get(k)!])));
    return { created: rows(false), changed: rows(true) };
  }
}

export class PaymentGroup {
  /** Identity inputs queued, and the customer decision each one settles (null: its answer is not needed). */
  private readonly identities: IdentityInput[] = [];
  private readonly decisions: (Decision | null)[] = [];
  /** Each customer's latest decision: an earlier one still queued is superseded. */
  private readonly latest = new Map<CustomerRecord, Decision>();
  /** Visitors linked to a person by the group's resolutions: deferred customers of theirs become linked. */
  private readonly links: VisitorLink[] = [];
  /** Persons by email, for the email fallback; null until read, or after a resolution that may have moved an email. */
  private emailPersons: Map<string, number> | null = null;
  private readonly emailsRead = new Set<string>();
  private readonly newObjects = new Map<string, string>();
  /** Charges whose refunds changed: their stand-ins are reconciled before the group is written. */
  private readonly chargesToReconcile = new Set<string>();
  private readonly loadedEvents: PaymentEventState[];
  private events: PaymentEventState[];

  /** The customers' emails as loaded (the records change in place): a new one is indexed for the people lookup. */
  private readonly storedEmails: Map<string, string | null>;

  private constructor(
    private readonly store: ControlStore,
    private readonly work: UnitOfWork,
    private readonly ws: string,
    private readonly now: Date,
    private readonly customers: Rows<CustomerRecord>,
    private readonly objects: Rows<string>,
    private readonly refunds: Rows<StoredRefund>,
    private readonly payments: Rows<StoredPayment>,
    private readonly subscriptions: Rows<{ created: Date | null; state?: SubscriptionState }>,
    private readonly invoices: Rows<{ created: Date | null; customer_id: string; paid_at: Date | null; state?: InvoiceState }>,
    /** Visitors the workspace has seen, of the ids a client_reference_id may name (and those resolution creates). */
    private readonly seenVisitors: Set<string>,
    /** Emails the group may look a person up by. */
    private readonly emails: string[],
    stored: StoredPaymentState,
    private readonly eventKeys: Set<string>,
    private readonly firstPaidOf: Set<string>,
    /** Charges whose refunds were all loaded. */
    private readonly chargesLoaded: Set<string>,
  ) {
    this.storedEmails = new Map([...customers.now].map(([id, c]) => [id, c.email]));
    this.loadedEvents = stored.events;
    this.events = [...stored.events];
  }

  /** Reads what the notifications of `plans` can read: a statement per table. */
  static async load(store: ControlStore, work: UnitOfWork, ws: string, plans: Plan[], now: Date): Promise<PaymentGroup> {
    const tx = work.control;
    const objectIds = unique(plans.flatMap((p) => [...p.facts.related, ...p.invoicePayment?.payments ?? []]));
    const objects = await readObjects(tx, ws, objectIds);
    // The customers of stored invoices that invoice payments name: the owners of those payments from then on.
    const paidByPayments = unique(plans.map((p) => p.invoicePayment?.invoice));
    const owners = paidByPayments.length === 0 ? [] : [...(await work.analytics.readPaymentState(ws, {
      subscriptions: [], invoices: paidByPayments, events: [], firstPaidOf: [],
    })).invoices.values()].map((i) => i.customer_id);
    // A payer is named, a guest payment's key, or the customer of a payment object (stored, or
    // remembered by an earlier payer or from a stored invoice).
    const payers = unique([...plans.flatMap((p) => [p.customerId, p.facts.guestKey]), ...objects.values(), ...owners]);
    const customers = await readCustomers(tx, ws, payers);
    const refundIds = unique(plans.flatMap((p) => [
      ...p.facts.refunds.map((r) => r.refund_id), p.facts.refunded && p.facts.refunded.level > 0 ? standInId(p.facts.refunded.charge_id, p.facts.refunded.level) : null,
    ]));
    // Every refund of a charge a refund names too: the charge's refunds are reconciled together.
    const charges = unique([...objectIds, ...plans.flatMap((p) => p.facts.refunds.map((r) => r.charge_id))]);
    const refunds = new Map((await readRefunds(tx, ws, refundIds, charges)).map((r) => [r.refund_id, r]));
    const paymentIds = unique(plans.flatMap((p) => [
      p.facts.payment?.payment_id, ...p.facts.invoiceLink?.payments ?? [], ...p.invoicePayment?.payments ?? [],
    ]));
    const payments = await readPayments(tx, ws, paymentIds);
    const references = unique(plans.map((p) => p.reference));
    const seen = new Set((await visitorsById(tx, ws, references)).map((v) => v.visitor_id));

    const subscriptionIds = unique(plans.map((p) => (p.family === 'customer.subscription' ? p.objectId : null)));
    const invoiceIds = unique(plans.flatMap((p) => [p.family === 'invoice' ? p.objectId : null, p.invoicePayment?.invoice]));
    const paidInvoices = plans.filter((p) => p.family === 'invoice' && PAID_INVOICE_TYPES.has(p.n.type));
    const events = [
      ...plans.filter((p) => p.n.type === 'customer.subscription.deleted' && p.objectId !== null)
        .map((p) => ({ kind: 'subscription_canceled' as const, object_id: p.objectId! })),
      ...paidInvoices.filter((p) => p.objectId !== null).map((p) => ({ kind: 'first_paid_invoice' as const, object_id: p.objectId! })),
      ...unique([...refundIds, ...refunds.keys()]).map((id) => ({ kind: 'refund_issued' as const, object_id: id })),
    ];
    const firstPaidOf = paidInvoices.length > 0 ? payers : [];
    const state = await work.analytics.readPaymentState(ws, { subscriptions: subscriptionIds, invoices: invoiceIds, events, firstPaidOf });

    const emails = unique([
      ...plans.flatMap((p) => [p.email, p.customerEmail]),
      ...[...customers.values()].flatMap((c) => [c.email, c.customer_email, c.payment_email]),
    ]);
    return new PaymentGroup(
      store, work, ws, now,
      new Rows('customer', new Set(payers), customers),
      new Rows('payment object', new Set(objectIds), objects),
      new Rows('refund', new Set([...refundIds, ...refunds.keys()]), refunds),
      new Rows('payment', new Set(paymentIds), payments),
      new Rows('subscription', new Set(subscriptionIds), state.subscriptions),
      new Rows('invoice', new Set(invoiceIds), state.invoices),
      seen, emails, state,
      new Set(events.map((e) => `${e.kind}\0${e.object_id}`)), new Set(firstPaidOf), new Set(charges),
    );
  }

  // Payers and their links.

  /** The customer as it stands (null: none yet); the caller changes it in place and hands it to saveCustomer. */
  customer(customerId: string): CustomerRecord | null {
    return this.customers.get(customerId) ?? null;
  }

  saveCustomer(c: CustomerRecord): void {
    this.customers.set(c.customer_id, c);
  }

  /** Whether the workspace has seen this visitor (the client_reference_id of a plan), counting those the group created. */
  visitorSeen(visitorId: string): boolean {
    return this.seenVisitors.has(visitorId);
  }

  /**
   * Queues an identity resolution; `decision` is the customer link it settles (its person, visitor
   * and link state are set when it runs, before the group is written). Without one, the
   * resolution's effect on persons is all that counts.
   */
  resolve(input: IdentityInput, decision?: Decision): void {
    if (decision) this.latest.set(decision.customer, decision);
    this.identities.push(input);
    this.decisions.push(decision ?? null);
    if (input.visitor_id !== undefined) this.seenVisitors.add(input.visitor_id);
  }

  /** The customer's link is decided now, without resolution: a decision of it still queued no longer counts. */
  settled(customer: CustomerRecord): void {
    this.latest.delete(customer);
  }

  /** The key of the person holding `email`, as one by one would find it: after the resolutions queued before. */
  async personByEmail(email: string): Promise<number | null> {
    if (this.identities.some((i) => i.email !== undefined)) await this.resolveQueued();
    if (this.emailPersons === null) {
      this.emailPersons = new Map();
      this.emailsRead.clear();
    }
    if (!this.emailsRead.has(email)) {
      const wanted = this.emailsRead.size === 0 ? unique([...this.emails, email]) : [email];
      const found = await personsByIdentifier(this.work.control, this.ws, 'email', wanted);
      // A customer may be matched to them: not to a person a merge is taking away meanwhile.
      await lockPersons(this.work.control, this.ws, found.map((f) => f.person.person_key), 'write');
      for (const { value, person } of found) this.emailPersons.set(value, person.person_key);
      for (const e of wanted) this.emailsRead.add(e);
    }
    return this.emailPersons.get(email) ?? null;
  }

  private async resolveQueued(): Promise<void> {
    if (this.identities.length === 0) return;
    const inputs = this.identities.splice(0);
    const decisions = this.decisions.splice(0);
    const { resolved, links } = await resolveIdentities(this.store, this.work, this.ws, inputs, this.now);
    if (inputs.some((i) => i.email !== undefined)) this.emailPersons = null;
    this.links.push(...links);
    decisions.forEach((d, i) => {
      if (!d || this.latest.get(d.customer) !== d) return;
      this.latest.delete(d.customer);
      const r = resolved[i]!;
      d.customer.visitor_key = r.visitor_key;
      if (d.via === 'user') d.customer.person_key = r.person_key;
      // The customer follows its visitor's link (as it stands at this point of the group); anonymous for now: deferred.
      else d.customer.link_state = r.person_key !== null ? 'linked' : 'deferred';
    });
  }

  // Payment objects, refunds and payments.

  /** The customer of the first of these payment objects that has one. */
  customerOfObject(objectIds: string[]): string | null {
    for (const id of objectIds) {
      const customer = this.objects.get(id);
      if (customer !== undefined) return customer;
    }
    return null;
  }

  /** Remembers which customer a charge or payment intent belongs to (refunds name only those). */
  rememberObjects(customerId: string, objectIds: string[]): void {
    for (const id of objectIds) {
      if (this.objects.get(id) !== undefined) continue;
      this.objects.set(id, customerId);
      this.newObjects.set(id, customerId);
    }
  }

  /**
   * Records the refund, or overwrites it unless the stored state is newer than `created`; a payer,
   * charge or payment intent once known is kept. Its refund_issued event follows the stored state.
   */
  saveRefund(r: RefundState, created: Date): void {
    const found = this.refunds.get(r.refund_id);
    let next: StoredRefund;
    if (!found) {
      next = { ...r, source_created: created };
    } else if (isOlder(found.source_created, created)) {
      next = {
        ...r, customer_id: found.customer_id ?? r.customer_id, charge_id: r.charge_id ?? found.charge_id,
        payment_intent_id: r.payment_intent_id ?? found.payment_intent_id, amount: r.amount ?? found.amount, currency: r.currency ?? found.currency,
        source_created: created,
      };
    } else {
      next = {
        ...found, customer_id: found.customer_id ?? r.customer_id, charge_id: found.charge_id ?? r.charge_id,
        payment_intent_id: found.payment_intent_id ?? r.payment_intent_id,
      };
    }
    this.refunds.set(r.refund_id, next);
    this.syncRefundEvent(next);
  }

  /** Refunds kept without a payer whose charge or payment intent is one of `objectIds` now belong to `customerId`. */
  attributeRefunds(customerId: string, objectIds: string[]): void {
    const objects = new Set(objectIds);
    for (const [id, r] of this.refunds.now) {
      if (r.customer_id !== null || !(objects.has(r.charge_id!) || objects.has(r.payment_intent_id!))) continue;
      const next = { ...r, customer_id: customerId };
      this.refunds.set(id, next);
      this.syncRefundEvent(next);
    }
  }

  /**
   * A charge's `amount_refunded` as announced at `at`: a level not known yet becomes a stand-in
   * refund (its amount set when the charge is reconciled); known levels above it that were
   * announced before stop counting (a refund failed or was canceled since).
   */
  recordRefundedLevel(l: RefundedLevel & { customer_id: string | null }, at: Date): void {
    for (const r of this.refunds.now.values()) {
      const level = r.charge_id === l.charge_id ? levelOf(r.refund_id) : null;
      if (level !== null && level > l.level && r.created_at.getTime() < at.getTime() && r.status !== 'canceled') {
        this.refunds.set(r.refund_id, { ...r, status: 'canceled', source_created: at });
      }
    }
    this.chargesToReconcile.add(l.charge_id);
    if (l.level === 0) return;
    const id = standInId(l.charge_id, l.level);
    const found = this.refunds.get(id);
    // A level is reached at its earliest announcement.
    const created = found && found.created_at.getTime() < at.getTime() ? found.created_at : at;
    this.refunds.set(id, {
      refund_id: id, customer_id: found?.customer_id ?? l.customer_id, charge_id: l.charge_id, payment_intent_id: found?.payment_intent_id ?? l.payment_intent_id,
      amount: found?.amount ?? 0, currency: found?.currency ?? l.currency, created_at: created,
      // Reached again after a lower level was announced: it counts again.
      status: found?.status === 'canceled' && !isOlder(found.source_created, at) ? 'canceled' : 'succeeded',
      source_created: found && !isOlder(found.source_created, at) ? found.source_created : at,
    });
  }

  /** Sets the amount and event of each stand-in refund of the charges whose refunds changed. */
  private reconcileCharges(): void {
    for (const charge of this.chargesToReconcile) {
      // Only a charge whose refunds were all loaded (a refund without its charge in the notification keeps its stand-ins as they are).
      if (!this.chargesLoaded.has(charge)) continue;
      const refunds = [...this.refunds.now.values()].filter((r) => r.charge_id === charge);
      for (const [id, amount] of standInAmounts(refunds)) {
        const r = this.refunds.get(id)!;
        // A new level the refunds with ids already cover says nothing more: it is not kept.
        if (amount === 0 && !this.refunds.stored.has(id)) {
          this.refunds.discard(id);
          continue;
        }
        const next = r.amount === amount ? r : { ...r, amount };
        if (next !== r) this.refunds.set(id, next);
        if (next.customer_id === null) continue;
        this.withdrawPaymentEvent('refund_issued', id);
        if (amount > 0 && next.status !== 'canceled') this.addPaymentEvent(next.customer_id, 'refund_issued', next.created_at, id, { amount, currency: next.currency });
      }
    }
    this.chargesToReconcile.clear();
  }

  private syncRefundEvent(r: StoredRefund): void {
    if (r.charge_id !== null) this.chargesToReconcile.add(r.charge_id);
    if (r.customer_id === null || levelOf(r.refund_id) !== null) return;
    if (issued(r.status)) this.addPaymentEvent(r.customer_id, 'refund_issued', r.created_at, r.refund_id, { amount: r.amount, currency: r.currency });
    else this.withdrawPaymentEvent('refund_issued', r.refund_id);
  }

  /**
   * Records a payment, or merges a later announcement of it: the amount of the best source so far
   * (payment intent, then charge, then session), the earliest time, the invoice once one is named.
   */
  recordPayment(p: PaymentState): void {
    const found = this.payments.get(p.payment_id);
    if (!found) {
      this.payments.set(p.payment_id, { ...p });
      return;
    }
    const replaces = found.source === null || found.amount === null || SOURCE_RANK[p.source] >= SOURCE_RANK[found.source];
    this.payments.set(p.payment_id, {
      payment_id: p.payment_id, customer_id: found.customer_id ?? p.customer_id, amount: replaces ? p.amount : found.amount,
      currency: replaces ? p.currency : found.currency,
      paid_at: found.paid_at !== null && found.paid_at.getTime() < p.paid_at.getTime() ? found.paid_at : p.paid_at,
      source: replaces ? p.source : found.source, invoice_id: found.invoice_id ?? p.invoice_id,
    });
  }

  /** These payments paid `invoiceId` (named by the invoice, the payment or an invoice payment, in any order). */
  linkPaymentsToInvoice(paymentIds: string[], invoiceId: string): void {
    for (const id of paymentIds) {
      const found = this.payments.get(id);
      this.payments.set(id, found
        ? { ...found, invoice_id: invoiceId }
        : { payment_id: id, customer_id: null, amount: null, currency: null, paid_at: null, source: null, invoice_id: invoiceId });
    }
  }

  // Subscriptions, invoices and lifecycle events.

  /** Records the subscription unless the state stored is newer than `created` (equal: the later arrival wins). */
  saveSubscription(s: SubscriptionState, created: Date): void {
    const found = this.subscriptions.get(s.subscription_id);
    if (found && !isOlder(found.created, created)) return;
    this.subscriptions.set(s.subscription_id, { created, state: s });
  }

  /** Likewise for an invoice; a later update that does not show the payment time keeps the one known. */
  saveInvoice(i: InvoiceState, created: Date): void {
    const found = this.invoices.get(i.invoice_id);
    if (found && !isOlder(found.created, created)) return;
    const paidAt = i.paid_at ?? found?.paid_at ?? null;
    this.invoices.set(i.invoice_id, { created, customer_id: i.customer_id, paid_at: paidAt, state: { ...i, paid_at: paidAt } });
  }

  customerOfInvoice(invoiceId: string): string | null {
    return this.invoices.get(invoiceId)?.customer_id ?? null;
  }

  /** Records a lifecycle event once per (kind, object). */
  addPaymentEvent(customerId: string, kind: PaymentEventKind, at: Date, objectId: string, money: Money = { amount: null, currency: null }): void {
    this.checkEvent(kind, objectId);
    if (this.events.some((e) => e.kind === kind && e.object_id === objectId)) return;
    this.events.push({ kind, customer_id: customerId, object_id: objectId, ts: at, ...money });
  }

  withdrawPaymentEvent(kind: PaymentEventKind, objectId: string): void {
    this.checkEvent(kind, objectId);
    this.events = this.events.filter((e) => e.kind !== kind || e.object_id !== objectId);
  }

  /** Keeps one first_paid_invoice per customer: the earliest paid invoice seen, whatever the arrival order. */
  recordPaidInvoice(customerId: string, at: Date, invoiceId: string, money: Money): void {
    if (!this.firstPaidOf.has(customerId)) throw new Error(`payment group: the first paid invoice of ${customerId} was not loaded`);
    const found = this.events.filter((e) => e.kind === 'first_paid_invoice' && e.customer_id === customerId);
    if (found.some((e) => e.ts.getTime() <= at.getTime())) return;
    this.events = this.events.filter((e) => !found.includes(e));
    this.addPaymentEvent(customerId, 'first_paid_invoice', at, invoiceId, money);
  }

  private checkEvent(kind: PaymentEventKind, objectId: string): void {
    if (!this.eventKeys.has(`${kind}\0${objectId}`)) throw new Error(`payment group: the ${kind} event of ${objectId} was not loaded`);
  }

  /** Writes what the group changed: a statement or two per table. */
  async save(): Promise<void> {
    await this.resolveQueued();
    this.reconcileCharges();
    const tx = this.work.control;
    // Deferred customers of visitors the group linked (after deciding them: a visitor linked before
    // would have linked them at once, and a link is never undone), here and in the store.
    const linked = new Set(this.links.map((l) => l.visitorKey));
    for (const c of this.customers.now.values()) {
      if (c.link_state === 'deferred' && c.visitor_key !== null && linked.has(c.visitor_key)) c.link_state = 'linked';
    }
    await writeObjects(tx, this.ws, byKey(new Map([...this.newObjects].map(([object_id, customer_id]) => [object_id, { object_id, customer_id }]))));
    const customers = this.customers.split();
    const reemailed = customers.changed.filter((c) => c.email !== this.storedEmails.get(c.customer_id));
    await writeCustomers(this.work, this.ws, customers.created, customers.changed, reemailed, this.now);
    await linkDeferredCustomers(tx, this.ws, [...linked], this.now);
    const refunds = this.refunds.split();
    await writeRefunds(tx, this.ws, refunds.created, refunds.changed);
    const payments = this.payments.split();
    await writePayments(this.work, this.ws, payments.created, payments.changed);
    await this.work.analytics.writePaymentState(this.ws, this.paymentChanges());
  }

  private paymentChanges(): PaymentStateChanges {
    const states = <T extends { state?: unknown; created: Date | null }, S>(rows: Rows<T>, state: (row: T) => S) => byKey(new Map([...rows.changed]
      .map((k) => [k, { state: state(rows.now.get(k)!), created: rows.now.get(k)!.created!, stored: rows.stored.has(k) }])));
    const same = (a: PaymentEventState, b: PaymentEventState) => a.ts.getTime() === b.ts.getTime() && a.amount === b.amount && a.currency === b.currency;
    const before = new Map(this.loadedEvents.map((e) => [eventKey(e), e]));
    const after = new Map(this.events.map((e) => [eventKey(e), e]));
    return {
      subscriptions: states(this.subscriptions, (row) => row.state!),
      invoices: states(this.invoices, (row) => row.state!),
      removed: this.loadedEvents.filter((e) => { const a = after.get(eventKey(e)); return !a || !same(a, e); }),
      added: this.events.filter((e) => { const b = before.get(eventKey(e)); return !b || !same(b, e); }),
    };
  }
}
