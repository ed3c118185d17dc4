// Units of work on ClickHouse: control rows in a control transaction, analytical rows inserted into
// ClickHouse after it commits (being built: issue 16).

import type { PropertyCatalog } from '../../criteria/index.js';
import type { FirstTouchChannels, UnitOfWork } from '../analytics.js';
import type { ClickHouseContext } from './context.js';

const notYet = (what: string): Error => new Error(`ClickHouse: ${what} is not built yet`);

export class ClickHouseUnits {
  constructor(readonly ctx: ClickHouseContext) {}

  async unit<T>(_fn: (work: UnitOfWork) => Promise<T>): Promise<T> { throw notYet('unit'); }
  async propertyCatalog(_ws: string): Promise<PropertyCatalog> { throw notYet('propertyCatalog'); }
  async firstTouchChannels(_ws: string, _of: { visitorKeys?: number[]; personKeys?: number[] }): Promise<FirstTouchChannels> { throw notYet('firstTouchChannels'); }
  async close(): Promise<void> {}
}
