// Overlap: how two to four audiences (saved ones or criteria trees) share their profiles: the size
// of each, of every intersection and of the union, from one query that finds each profile's
// membership mask within the estimate budget.

import { type CriteriaError, planCriteria, type SetPlan, validateCriteria } from '../criteria/index.js';
import { AppError } from '../errors.js';
import { getAudience } from '../store/control/audiences.js';
import type { Stores } from '../store/open.js';
import { takeTurn } from './compile.js';
import type { OverlapInput, OverlapResult } from './schema.js';

export const MIN_OVERLAP = 2;
export const MAX_OVERLAP = 4;

export async function overlap(
  stores: Stores, ws: string, inputs: OverlapInput[], options: { at: Date; budgetMs: number },
): Promise<OverlapResult> {
  const turn = takeTurn(stores.analytics, options.budgetMs);
  try {
    const plans = await plansOf(stores, ws, inputs, options.at);
    const masks = await turn.overlap(plans, ws);
    if (masks === null) return { hit_limit: true, sizes: null, intersections: null, union: null };
    // The profiles in every audience of `set` (a mask): those whose mask holds it.
    const within = (set: number) => [...masks].reduce((sum, [mask, count]) => ((mask & set) === set ? sum + count : sum), 0);
    const intersections: { of: number[]; count: number }[] = [];
    for (let set = 1; set < 2 ** plans.length; set++) {
      const of = plans.map((_, i) => i).filter((i) => set & (2 ** i));
      if (of.length >= 2) intersections.push({ of, count: within(set) });
    }
    intersections.sort((a, b) => a.of.length - b.of.length);
    return {
      hit_limit: false,
      sizes: plans.map((_, i) => within(2 ** i)),
      intersections,
      union: [...masks.values()].reduce((a, b) => a + b, 0),
    };
  } finally {
    turn.end();
  }
}

/** Each input planned now: a saved audience's stored criteria, or criteria given (every fault, at its path in the body). */
async function plansOf(stores: Stores, ws: string, inputs: OverlapInput[], at: Date): Promise<SetPlan[]> {
  const catalog = await stores.analytics.propertyCatalog(ws);
  const errors: CriteriaError[] = [];
  const plans: SetPlan[] = [];
  for (const [i, input] of inputs.entries()) {
    let criteria: unknown;
    let base = `/audiences/${i}/criteria_json`;
    if ('audience_id' in input) {
      const row = await getAudience(stores.control, ws, input.audience_id);
      if (!row) throw new AppError('not_found', `no audience ${input.audience_id}`);
      criteria = JSON.parse(row.criteria);
      base = `/audiences/${i}/audience_id`;
    } else {
      criteria = input.criteria_json;
    }
    const validation = validateCriteria(criteria, catalog);
    if (validation.ok) plans.push(planCriteria(validation.criteria, at));
    else errors.push(...validation.errors.map((e) => ({ ...e, path: `${base}${e.path}` })));
  }
  if (errors.length > 0) throw new AppError('invalid_criteria', errors[0]!.message, { code: errors[0]!.code, path: errors[0]!.path, errors });
  return plans;
}
