// Refunds a charge announces only by its cumulative `amount_refunded` (API versions from 2022-11-15
// send charges without their `refunds` list; decisions §10). Each level of `amount_refunded` a
// notification reports is kept as a stand-in refund of the charge, at that notification's time;
// the refunds with ids of the charge cover the lowest levels first, and each stand-in counts only
// what its level adds above the level below it and above the refunds with ids. So the charge's
// refunds total max(refunds with ids, highest level): never more, and nothing counted twice.

/** The stand-in id of a level: no processor id holds `#`, so it never names a refund with an id. */
export const standInId = (chargeId: string, level: number) => `${chargeId}#amount_refunded=${level}`;

const STAND_IN = /#amount_refunded=(\d+)$/;

/** The level of a stand-in id; null for a refund with an id. */
export function levelOf(refundId: string): number | null {
  const m = STAND_IN.exec(refundId);
  return m ? Number(m[1]) : null;
}

/** A refund of one charge as reconciliation reads it. */
export interface ChargeRefund {
  refund_id: string;
  amount: number | null;
  /** `canceled` on a stand-in: a later notification reported a lower amount_refunded. */
  status: string | null;
}

/**
 * What each stand-in of a charge counts, by id. Refunds with ids count whatever their status: a
 * failed one did raise the level it explains, and the processor lowers amount_refunded itself.
 */
export function standInAmounts(refunds: ChargeRefund[]): Map<string, number> {
  let identified = 0;
  const levels: { id: string; level: number }[] = [];
  const out = new Map<string, number>();
  for (const r of refunds) {
    const level = levelOf(r.refund_id);
    if (level === null) identified += r.amount ?? 0;
    else if (r.status === 'canceled') out.set(r.refund_id, 0);
    else levels.push({ id: r.refund_id, level });
  }
  levels.sort((a, b) => a.level - b.level);
  let below = 0;
  for (const { id, level } of levels) {
    out.set(id, Math.max(0, level - Math.max(below, identified)));
    below = level;
  }
  return out;
}
