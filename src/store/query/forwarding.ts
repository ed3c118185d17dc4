// The criteria queries as the analytical store offers them: every engine's store extends this with
// its driver's CriteriaQueries, so the forwarding is written once.

import type { CompiledQuery, SetPlan } from '../../criteria/index.js';
import type { EstimateStats, EstimateTurn, FirstTouchChannels, Member } from '../analytics.js';
import type { CriteriaQueries } from './queries.js';

export abstract class QueriedStore<Q> {
  /** The criteria queries over the engine's driver (tests hold its places with statements of their own). */
  constructor(readonly queries: CriteriaQueries<Q>) {}

  estimateTurn(budgetMs: number): EstimateTurn {
    return this.queries.estimateTurn(budgetMs);
  }

  countWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<number | null> {
    return this.queries.countWithin(plan, ws, budgetMs);
  }

  estimateStats(): EstimateStats {
    return this.queries.estimateStats();
  }

  countQuery(plan: SetPlan, ws: string): Promise<CompiledQuery> {
    return this.queries.countQuery(plan, ws);
  }

  profileWithin(plan: SetPlan, ws: string, budgetMs: number): Promise<string | null> {
    return this.queries.profileWithin(plan, ws, budgetMs);
  }

  writeMembers(plan: SetPlan, ws: string, path: string, format: 'csv' | 'parquet'): Promise<number> {
    return this.queries.writeMembers(plan, ws, path, format);
  }

  listMembers(plan: SetPlan, ws: string): Promise<Member[]> {
    return this.queries.listMembers(plan, ws);
  }

  firstTouchChannels(ws: string, of: { visitorKeys?: number[]; personKeys?: number[] }): Promise<FirstTouchChannels> {
    return this.queries.firstTouchChannels(ws, of);
  }
}
