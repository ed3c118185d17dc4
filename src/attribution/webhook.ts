// Payment-processor notifications: verified, then applied once each (payer link, subscription and
// invoice state, payments and refunds, lifecycle events). Notifications of a workspace that arrive
// together share one unit of work (ingest's group commit), applied in arrival order as one by one;
// a failing one is retried apart and fails alone, keeping nothing, so the processor's retry starts clean.

import { AppError } from '../errors.js';
import { GroupCommit } from '../ingest/group-commit.js';
import type { Ingest } from '../ingest/ingest.js';
import type { Staged, UnitOfWork, VisitorLink } from '../store/analytics.js';
import { claimNotifications, linkDeferredCustomers, webhookSettings } from '../store/control/payments.js';
import { settingsGeneration } from '../store/control/workspaces.js';
import type { Stores } from '../store/open.js';
import { invoiceOf, PAID_INVOICE_TYPES, type Plan, planOf, subscriptionOf } from './facts.js';
import { PaymentGroup } from './group.js';
import { suppressionCheck, withoutSuppressed } from '../privacy/suppression.js';
import { updateCustomer } from './link.js';
import { type Notification, parseNotification } from './notification.js';
import { verifyNotification } from './signature.js';

export interface Receipt {
  duplicate: boolean;
  /** Set when the notification was acknowledged and stored nowhere: it is of the other payments mode. */
  ignored?: 'livemode';
}

/** The most notifications one unit of work takes. */
const GROUP_MAX = 500;

type Settings = Awaited<ReturnType<typeof webhookSettings>>;

export class PaymentWebhook {
  private readonly writes = new GroupCommit<Notification, { duplicate: boolean }>((ws, ns) => this.applyGroup(ws, ns), GROUP_MAX);
  /** Settings reads under way per workspace: deliveries arriving meanwhile share the read. */
  private readonly settingsReads = new Map<string, Promise<Settings>>();
  /**
   * Settings of existing workspaces as last read, on a control store no other process writes, with
   * the generation of settings changes they were read at (store/control/workspaces.ts); on a shared
   * store (PostgreSQL behind many nodes) nothing is kept.
   */
  private readonly settings = new Map<string, { generation: number; value: NonNullable<Settings> }>();

  constructor(private readonly stores: Stores, ingest: Ingest, private readonly clock: () => Date = () => new Date()) {
    // Deferred customers resolve as soon as their visitor is linked to a person.
    ingest.onVisitorLinked((work, links) => this.visitorsLinked(work, links));
  }

  /** Verifies and applies one delivery; `duplicate` when its id was processed before. */
  async receive(ws: string, rawBody: Buffer, signature: unknown): Promise<Receipt> {
    const settings = ws.length <= 256 ? await this.settingsOf(ws) : null;
    if (!settings?.secret) throw new AppError('invalid_signature', 'unknown workspace, or no webhook secret set for it');
    const notification = parseNotification(verifyNotification(rawBody, signature, settings.secret));
    // A notification that does not say its mode is applied: only a holder of the secret could sign it.
    if (notification.livemode !== null && notification.livemode !== (settings.mode === 'live')) return { duplicate: false, ignored: 'livemode' };
    return this.apply(ws, notification);
  }

  /** Applies a verified notification with those of the workspace waiting; `duplicate` when its id was processed before. */
  async apply(ws: string, n: Notification): Promise<{ duplicate: boolean }> {
    const [receipt] = await this.writes.submit(ws, [n]);
    return receipt!;
  }

  /** Applies verified notifications in order, as one request (backfill.ts: a page of listed objects). */
  applyAll(ws: string, ns: Notification[]): Promise<{ duplicate: boolean }[]> {
    return this.writes.submit(ws, ns);
  }

  /**
   * One unit of work for a group: the ids claimed in one statement, what the claimed notifications
   * read loaded at once, each applied in arrival order on that state, what they changed written at
   * once (group.ts). An id twice in the group is claimed by its first delivery; the later ones are duplicates.
   */
  private async applyGroup(ws: string, ns: Notification[]): Promise<Staged<{ duplicate: boolean }[]>> {
    const now = this.clock();
    const check = await suppressionCheck(this.stores.control, ws);
    return this.stores.analytics.stage(async (work) => {
      // In one order on every node: two groups claiming the same ids never wait for each other crosswise.
      const fresh = await claimNotifications(work.control, ws, [...new Set(ns.map((n) => n.id))].sort());
      const receipts = ns.map((n) => ({ duplicate: !fresh.delete(n.id) }));
      const plans = ns.flatMap((n, i) => (receipts[i]!.duplicate ? [] : [planOf(n)])).filter((p): p is Plan => p !== null)
        .map((p) => withoutSuppressed(check, p));
      if (plans.length === 0) return receipts;
      const group = await PaymentGroup.load(this.stores.control, work, ws, plans, now);
      for (const p of plans) await applyEffects(group, p, now);
      await group.save();
      return receipts;
    });
  }

  private settingsOf(ws: string): Promise<Settings> {
    const control = this.stores.control;
    const kept = this.settings.get(ws);
    if (kept && kept.generation === settingsGeneration(control)) return Promise.resolve(kept.value);
    let read = this.settingsReads.get(ws);
    if (!read) {
      const generation = settingsGeneration(control);
      read = webhookSettings(control, ws).then((value) => {
        // Kept only where every change goes through this process (it moves the generation); a read
        // that overlapped a change is kept under the old generation, so the next delivery reads again.
        if (value && !control.shared) this.settings.set(ws, { generation, value });
        return value;
      }).finally(() => this.settingsReads.delete(ws));
      this.settingsReads.set(ws, read);
    }
    return read;
  }

  private async visitorsLinked(work: UnitOfWork, links: VisitorLink[]): Promise<void> {
    const byWorkspace = new Map<string, number[]>();
    // A visitor new in this unit of work has no customer yet: a batch of new users runs no statement.
    for (const l of links) {
      if (l.created) continue;
      const keys = byWorkspace.get(l.workspaceId);
      if (keys) keys.push(l.visitorKey);
      else byWorkspace.set(l.workspaceId, [l.visitorKey]);
    }
    const now = this.clock();
    for (const [ws, keys] of byWorkspace) await linkDeferredCustomers(work.control, ws, keys, now);
  }
}

async function applyEffects(group: PaymentGroup, p: Plan, now: Date): Promise<void> {
  const { n, facts, family } = p;
  if (family === 'invoice_payment') return applyInvoicePayment(group, p.invoicePayment);
  const payer = p.customerId ?? group.customerOfObject(facts.related) ?? facts.guestKey;
  for (const refund of facts.refunds) group.saveRefund({ ...refund, customer_id: payer }, n.created);
  if (facts.refunded) group.recordRefundedLevel({ ...facts.refunded, customer_id: payer }, n.created);
  if (facts.invoiceLink) group.linkPaymentsToInvoice(facts.invoiceLink.payments, facts.invoiceLink.invoice);
  if (payer === null) return; // a refund of a payment not seen yet waits for it; an unpaid guest is no payer

  const visitorId = p.metadata.visitorId ?? (p.reference !== null && group.visitorSeen(p.reference) ? p.reference : null);
  await updateCustomer(group, payer, { ...p.metadata, visitorId, email: p.email, customerEmail: p.customerEmail }, n.created, now);
  group.rememberObjects(payer, facts.related);
  group.attributeRefunds(payer, facts.related);
  if (facts.payment) group.recordPayment({ ...facts.payment, customer_id: payer });

  const objectId = p.objectId;
  if (!objectId) return;
  if (family === 'customer.subscription') {
    group.saveSubscription(subscriptionOf(n, objectId, payer), n.created);
    if (n.type === 'customer.subscription.deleted') group.addPaymentEvent(payer, 'subscription_canceled', n.created, objectId);
  } else if (family === 'invoice') {
    const invoice = invoiceOf(n, objectId, payer);
    group.saveInvoice(invoice, n.created);
    // $0 invoices (a trial's start, a 100 % coupon) are no payment.
    if (PAID_INVOICE_TYPES.has(n.type) && invoice.amount_paid > 0) {
      group.recordPaidInvoice(payer, invoice.paid_at ?? n.created, objectId, { amount: invoice.amount_paid, currency: invoice.currency || null });
    }
  }
}

/** `invoice_payment.paid` (API versions from 2025-03-31): which payment paid which invoice. */
function applyInvoicePayment(group: PaymentGroup, paid: Plan['invoicePayment']): void {
  if (!paid) return;
  group.linkPaymentsToInvoice(paid.payments, paid.invoice);
  const customer = group.customerOfInvoice(paid.invoice);
  if (customer) {
    group.rememberObjects(customer, paid.payments);
    group.attributeRefunds(customer, paid.payments);
  }
}
