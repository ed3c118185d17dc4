// The revenue report's attribution models (decisions §14): which touches of a payment earn a share
// of it and by what integer weight. Pure; both printers print these weights with the same SQL.
// Every share is `floor(amount * weight / sum of weights)`, the remainder to the latest touch, so
// every model hands out exactly the amount: no float ever decides a share's last minor unit.

/**
 * first_touch: the customer's earliest page view at or before its first payment (§10), one group
 * per customer. The others choose, for each payment, among the page views of the lookback before it.
 */
export const ATTRIBUTION_MODELS = ['first_touch', 'last_touch', 'last_non_direct', 'linear', 'position_based', 'time_decay'] as const;
export type AttributionModel = (typeof ATTRIBUTION_MODELS)[number];
export type TouchModel = Exclude<AttributionModel, 'first_touch'>;

export const DEFAULT_LOOKBACK_DAYS = 90;
export const MAX_LOOKBACK_DAYS = 3650;
export const DEFAULT_HALF_LIFE_DAYS = 7;

/** time_decay's weights are 2^(-age / half-life) in units of 1 / TIME_DECAY_SCALE, floored. */
export const TIME_DECAY_SCALE = 1_000_000;

export const MICROS_PER_DAY = 86_400_000_000;

/** The window columns a printer ranks each touch by, past `from_last` (which every model reads: the remainder's touch). */
export type TouchRank = 'n' | 'from_first' | 'last_non_direct' | 'age';

/** The ranks each model's weight reads (touchWeightSql). */
export const RANKS_OF: Record<TouchModel, readonly TouchRank[]> = {
  last_touch: [],
  last_non_direct: ['last_non_direct'],
  linear: [],
  position_based: ['n', 'from_first'],
  time_decay: ['age'],
};

export const isTouchModel = (model: AttributionModel): model is TouchModel => model !== 'first_touch';

/** The columns of one ranked touch of a payment, as the printers name them. */
export interface RankedTouch {
  /** The payment's touches in its lookback. */
  count: string;
  /** 1 for the earliest (by time, then page view id). */
  fromFirst: string;
  /** 1 for the latest. */
  fromLast: string;
  /** 1 for the latest non-Direct one (the latest Direct one when all are Direct). */
  lastNonDirect: string;
  /** Microseconds before the payment's latest touch, an integer. */
  ageMicros: string;
}

/**
 * A touch's integer weight (0: no share). position_based: 40 % to the first and the last, 20 % over
 * the ones between, as weights 2(n-2), 1 each, 2(n-2) (sum 5(n-2)); one or two touches share equally.
 * (`halfLifeMicros` adds its parameter when called.) time_decay's age counts from the latest touch, which so weighs TIME_DECAY_SCALE (the ratios are
 * those of ages counted from the payment, and the sum is never 0).
 */
export function touchWeightSql(model: TouchModel, t: RankedTouch, halfLifeMicros: () => string, int: (x: string) => string): string {
  switch (model) {
    case 'last_touch':
      return `CASE WHEN ${t.fromLast} = 1 THEN 1 ELSE 0 END`;
    case 'last_non_direct':
      return `CASE WHEN ${t.lastNonDirect} = 1 THEN 1 ELSE 0 END`;
    case 'linear':
      return '1';
    case 'position_based':
      return `CASE WHEN ${t.count} <= 2 THEN 1 WHEN ${t.fromFirst} = 1 OR ${t.fromLast} = 1 THEN 2 * (${t.count} - 2) ELSE 1 END`;
    case 'time_decay':
      return int(`floor(${TIME_DECAY_SCALE} * pow(2, -(${t.ageMicros}) / ${halfLifeMicros()}))`);
  }
}

/**
 * A money row's total weight and the sum of its floored shares in closed form (every model but
 * time_decay, whose weights must be summed): with them a printer hands out the shares and the
 * remainder in one pass over the ranked touches. `div` is the dialect's integer division.
 */
export function closedSharesSql(model: TouchModel, t: RankedTouch, amount: string, div: (a: string, b: string) => string):
  { total: string; floors: string } | null {
  switch (model) {
    case 'last_touch':
    case 'last_non_direct':
      return { total: '1', floors: amount };
    case 'linear':
      return { total: t.count, floors: `${t.count} * ${div(amount, t.count)}` };
    case 'position_based':
      // Past two touches, the ends' weights 2(n-2) of 5(n-2) floor to 2·amount/5 each.
      return {
        total: `CASE WHEN ${t.count} <= 2 THEN ${t.count} ELSE 5 * (${t.count} - 2) END`,
        floors: `CASE WHEN ${t.count} <= 2 THEN ${t.count} * ${div(amount, t.count)}
          ELSE 2 * ${div(`2 * ${amount}`, '5')} + (${t.count} - 2) * ${div(amount, `5 * (${t.count} - 2)`)} END`,
      };
    case 'time_decay':
      return null;
  }
}
