// Privacy deletes, retention and person merges on DuckDB: the events and page views of erased keys, or older than
// a workspace's retention, in one transaction; then a checkpoint, so that the write-ahead log,
// which holds the rows as they were inserted, no longer does.

import type { DuckDBConnection } from '@duckdb/node-api';
import { duckdbPrinter } from '../../criteria/index.js';
import type { ErasedRows } from '../analytics.js';
import type { Params, Store } from './db.js';
import { timestamp } from './time.js';

/** The keys of a JSON array parameter, as a subquery: read once, not once per row as list_contains(cast) would be. */
const keysIn = (param: string) => `(SELECT unnest(CAST(CAST(${param} AS JSON) AS BIGINT[])))`;

/** The statements of events and page views, each with its own parameters. */
async function erase(store: Store, statements: [events: [string, Params], pageviews: [string, Params], ...more: [string, Params][]]): Promise<ErasedRows> {
  const erased = await store.transaction(async (tx) => {
    const events = Number((await tx.run(...statements[0])).rowsChanged);
    const pageviews = Number((await tx.run(...statements[1])).rowsChanged);
    for (const statement of statements.slice(2)) await tx.run(...statement);
    return { events, pageviews };
  });
  await store.checkpoint();
  return erased;
}

/** Freezes the revenue attribution of payers about to lose their person (Printer.freeze), in one transaction. */
export async function freezeAttribution(store: Store, ws: string, customerIds: string[]): Promise<void> {
  if (customerIds.length === 0) return;
  await store.transaction(async (tx) => {
    for (const q of duckdbPrinter.freeze(ws, customerIds)) await tx.run(q.sql, q.params);
  });
}

/** The rows of events and page views of these keys: `FROM … WHERE …` and its parameters. */
function keyRows(ws: string, personKeys: number[], visitorKeys: number[]): [events: [string, Params], pageviews: [string, Params]] {
  const [persons, visitors] = [JSON.stringify(personKeys), JSON.stringify(visitorKeys)];
  return [
    [`FROM events WHERE workspace_id = $1 AND (person_key IN ${keysIn('$2')} OR visitor_key IN ${keysIn('$3')})`, [ws, persons, visitors]],
    [`FROM pageviews WHERE workspace_id = $1 AND visitor_key IN ${keysIn('$2')}`, [ws, visitors]],
  ];
}

export async function countKeys(store: Store, ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows> {
  const [events, pageviews] = await Promise.all(keyRows(ws, personKeys, visitorKeys).map(async ([rows, params]) =>
    Number((await store.query(`SELECT count(*) AS n ${rows}`, params))[0]!.n)));
  return { events: events!, pageviews: pageviews! };
}

export function eraseKeys(store: Store, ws: string, personKeys: number[], visitorKeys: number[]): Promise<ErasedRows> {
  const [events, pageviews] = keyRows(ws, personKeys, visitorKeys);
  return erase(store, [[`DELETE ${events[0]}`, events[1]], [`DELETE ${pageviews[0]}`, pageviews[1]]]);
}

export function eraseBefore(store: Store, ws: string, before: Date): Promise<ErasedRows> {
  const params = [ws, timestamp(before)];
  return erase(store, [
    ['DELETE FROM events WHERE workspace_id = $1 AND ts < $2', params],
    ['DELETE FROM pageviews WHERE workspace_id = $1 AND ts < $2', params],
    ['DELETE FROM frozen_touches WHERE workspace_id = $1 AND ts < $2', params],
  ]);
}

/** A person merge: the events of `fromKey` become `intoKey`'s; how many moved. */
export async function movePersonEvents(tx: DuckDBConnection, ws: string, fromKey: number, intoKey: number): Promise<number> {
  const moved = await tx.run('UPDATE events SET person_key = $3 WHERE workspace_id = $1 AND person_key = $2', [ws, fromKey, intoKey]);
  return Number(moved.rowsChanged);
}
