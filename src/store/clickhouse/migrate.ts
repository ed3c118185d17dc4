// Creates or upgrades the ClickHouse schema (store/clickhouse/schema.ts), at every start and with
// `audiences migrate`. Every statement is idempotent (IF NOT EXISTS), so running it again is harmless.

import type { ClickHouseContext } from './context.js';
import { clickhouseSchema } from './schema.js';

/** `source`: the credentials the links dictionary reads the visitors table with (the service's own; unset: `default`). */
export async function migrateClickHouse(
  ctx: Pick<ClickHouseContext, 'client' | 'database' | 'cluster'>,
  source: { username?: string; password?: string } = {},
): Promise<void> {
  for (const statement of clickhouseSchema({ database: ctx.database, cluster: ctx.cluster, dictionarySource: source })) {
    await ctx.client.command({ query: statement });
  }
}
