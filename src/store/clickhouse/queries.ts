// The criteria queries on ClickHouse within the estimate budget (being built: issue 16).

import type { CompiledQuery, SetPlan } from '../../criteria/index.js';
import type { EstimateTurn, Member } from '../analytics.js';
import type { ClickHouseContext } from './context.js';

export interface EstimateOptions {
  /** Estimates running at once; more wait. */
  connections?: number;
  /** Estimates that may wait; more are refused with EstimatesBusy. */
  queueMax?: number;
}

const notYet = (what: string): Error => new Error(`ClickHouse: ${what} is not built yet`);

export class ClickHouseQueries {
  constructor(readonly ctx: ClickHouseContext, readonly options: EstimateOptions) {}

  estimateTurn(_budgetMs: number): EstimateTurn { throw notYet('estimateTurn'); }
  async countWithin(_plan: SetPlan, _ws: string, _budgetMs: number): Promise<number | null> { throw notYet('countWithin'); }
  countQuery(_plan: SetPlan, _ws: string): CompiledQuery { throw notYet('countQuery'); }
  async profileWithin(_plan: SetPlan, _ws: string, _budgetMs: number): Promise<string | null> { throw notYet('profileWithin'); }
  async writeMembers(_plan: SetPlan, _ws: string, _path: string, _format: 'csv' | 'parquet'): Promise<number> { throw notYet('writeMembers'); }
  async listMembers(_plan: SetPlan, _ws: string): Promise<Member[]> { throw notYet('listMembers'); }
}
