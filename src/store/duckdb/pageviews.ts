// Page view writes, and the visitors' latest views (an internal navigation carries their channel).

import type { DuckDBConnection } from '@duckdb/node-api';
import type { ChannelFields, PageviewRecord } from '../analytics.js';
import { appendRows, type ChunkColumn, constantText, instant, int64, text } from './chunks.js';
import { column, keys } from './columns.js';

/** Each visitor's latest page view: its time and channel fields. */
export async function latestPageviews(tx: DuckDBConnection, ws: string, visitorKeys: number[]): Promise<Map<number, ChannelFields & { ts: Date }>> {
  const latest = new Map<number, ChannelFields & { ts: Date }>();
  if (visitorKeys.length === 0) return latest;
  const reader = await tx.runAndReadAll(`SELECT visitor_key, ts, source, medium, campaign, channel, channel_category
    FROM pageviews WHERE workspace_id = $1 AND visitor_key IN (SELECT unnest(${keys('$2')}))
    QUALIFY row_number() OVER (PARTITION BY visitor_key ORDER BY ts DESC) = 1`,
  [ws, column(visitorKeys)]);
  for (const row of reader.getRowObjectsJS()) {
    latest.set(Number(row.visitor_key), {
      ts: row.ts as Date,
      source: row.source as string | null,
      medium: row.medium as string | null,
      campaign: row.campaign as string | null,
      channel: row.channel as string,
      channel_category: row.channel_category as string,
    });
  }
  return latest;
}

/** The pageviews table's columns, in its order. */
const pageviewColumns = (ws: string): ChunkColumn<PageviewRecord>[] => [
  constantText(ws),
  text((r) => r.pageview_id),
  int64((r) => r.visitor_key),
  instant((r) => r.ts),
  text((r) => r.url),
  text((r) => r.referrer),
  text((r) => r.title),
  text((r) => r.host),
  text((r) => r.path),
  text((r) => r.referrer_host),
  text((r) => r.source),
  text((r) => r.medium),
  text((r) => r.campaign),
  text((r) => r.channel),
  text((r) => r.channel_category),
];

export async function appendPageviews(tx: DuckDBConnection, ws: string, rows: PageviewRecord[]): Promise<void> {
  await appendRows(tx, 'pageviews', pageviewColumns(ws), rows);
}
