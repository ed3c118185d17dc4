// Creates or upgrades the ClickHouse schema (store/clickhouse/schema.ts), at every start and with
// `audiences migrate`. Every statement is idempotent (IF NOT EXISTS), so running it again is harmless.

import type { ClickHouseContext } from './context.js';
import { clickhouseSchema } from './schema.js';

export async function migrateClickHouse(ctx: Pick<ClickHouseContext, 'client' | 'database' | 'cluster'>): Promise<void> {
  for (const statement of clickhouseSchema({ database: ctx.database, cluster: ctx.cluster })) {
    await ctx.client.command({ query: statement });
  }
}
