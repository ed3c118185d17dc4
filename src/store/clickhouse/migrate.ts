// Creates or upgrades the ClickHouse schema (at start, and `audiences migrate`): being built, issue 16.

import type { ClickHouseContext } from './context.js';

export async function migrateClickHouse(_ctx: ClickHouseContext): Promise<void> {
  throw new Error('the ClickHouse schema is not built yet');
}
