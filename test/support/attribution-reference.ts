// A plain TypeScript reference of the revenue report's per-payment models (decisions §14,
// docs/reports.md): the engines' statements must give, per month and touch value, what this gives.

export type Model = 'last_touch' | 'last_non_direct' | 'linear' | 'position_based' | 'time_decay';

export interface Touch { ms: number; id: string; group: string; direct: boolean }
export interface Money { customer: string; ms: number; amount: number; currency: string; payment: boolean }
export interface Settings { model: Model; lookbackDays: number; halfLifeDays: number; from: number; to: number }

const DAY_MS = 86_400_000;

function weights(model: Model, touches: Touch[], halfLifeDays: number): number[] {
  const n = touches.length;
  const latest = touches[n - 1]!.ms;
  return touches.map((t, i) => {
    switch (model) {
      case 'last_touch': return i === n - 1 ? 1 : 0;
      case 'last_non_direct': {
        const nonDirect = touches.map((x) => !x.direct).lastIndexOf(true);
        return i === (nonDirect === -1 ? n - 1 : nonDirect) ? 1 : 0;
      }
      case 'linear': return 1;
      case 'position_based': return n <= 2 ? 1 : i === 0 || i === n - 1 ? 2 * (n - 2) : 1;
      case 'time_decay': return Math.floor(1_000_000 * 2 ** (-((latest - t.ms) * 1000) / (halfLifeDays * 86_400_000_000)));
    }
  });
}

/** The shares of one amount: floor(amount × w / Σw), the remainder to the latest touch. */
function split(amount: number, w: number[]): number[] {
  const sum = BigInt(w.reduce((a, b) => a + b, 0));
  const shares = w.map((x) => Number((BigInt(amount) * BigInt(x)) / sum));
  shares[shares.length - 1]! += amount - shares.reduce((a, b) => a + b, 0);
  return shares;
}

const month = (ms: number) => new Date(ms).toISOString().slice(0, 8) + '01';

/** Revenue (payments minus refunds) per `${month} ${group}` and currency, for the money of [from, to). */
export function referenceRevenue(money: Money[], touchesOf: Map<string, Touch[]>, s: Settings): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  const credit = (ms: number, group: string, currency: string, amount: number) => {
    const key = `${month(ms)} ${group}`;
    const row = out.get(key) ?? {};
    row[currency] = (row[currency] ?? 0) + amount;
    out.set(key, row);
  };
  for (const m of money) {
    if (m.ms < s.from || m.ms >= s.to) continue;
    // A refund is credited as the customer's latest payment at or before it (else at its own time).
    const before = money.filter((p) => p.payment && p.customer === m.customer && p.ms <= m.ms).map((p) => p.ms);
    const anchor = m.payment || before.length === 0 ? m.ms : Math.max(...before);
    const touches = (touchesOf.get(m.customer) ?? [])
      .filter((t) => t.ms <= anchor && t.ms >= anchor - s.lookbackDays * DAY_MS)
      .sort((a, b) => a.ms - b.ms || (a.id < b.id ? -1 : 1));
    const sign = m.payment ? 1 : -1;
    if (touches.length === 0) {
      credit(m.ms, 'Non-attributed', m.currency, sign * m.amount);
      continue;
    }
    const w = weights(s.model, touches, s.halfLifeDays);
    split(m.amount, w).forEach((share, i) => { if (w[i]! > 0) credit(m.ms, touches[i]!.group, m.currency, sign * share); });
  }
  return out;
}
