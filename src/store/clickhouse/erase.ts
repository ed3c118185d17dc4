// Privacy deletes and retention on ClickHouse: mutations (ALTER TABLE … DELETE), which rewrite the
// parts holding the rows, so the data is gone from disk when they finish; a lightweight DELETE
// only masks rows until a merge (ClickHouse's docs: "Delete mutation … when data must be deleted
// from disk immediately (e.g. for compliance)"). Mutations are costly, so each is one statement
// for every key of a workspace's batch of requests, and waited for (mutations_sync = 2: every
// replica) before the request is done.

import { ClickHousePrinter } from '../../criteria/index.js';
import type { ErasedRows } from '../analytics.js';
import { RowsStillLanding } from '../errors.js';
import type { ClickHouseContext } from './context.js';
import { reloadVisitorLinks } from './links.js';
import { quote, rows, table } from './run.js';

/** Rounds of erase and check: rows of units committed before the control rows went may land during the first. */
const ROUNDS = 3;

export interface Target {
  table: string;
  where: string;
}

async function countRows(ctx: ClickHouseContext, t: Target, params: Record<string, unknown>): Promise<number> {
  const [row] = await rows<{ n: unknown }>(ctx, `SELECT count() AS n FROM ${table(ctx, t.table)} WHERE ${t.where}`, params);
  return Number(row?.n ?? 0);
}

/** One mutation deleting the rows of `t`, waited for on every replica. */
async function mutate(ctx: ClickHouseContext, t: Target, params: Record<string, unknown>): Promise<void> {
  const target = ctx.cluster === undefined ? table(ctx, t.table) : `${table(ctx, `${t.table}_local`)} ON CLUSTER ${quote(ctx.cluster)}`;
  await ctx.client.command({ query: `ALTER TABLE ${target} DELETE WHERE ${t.where}`, query_params: params, clickhouse_settings: { mutations_sync: '2' } });
}

/**
 * Deletes the rows of `targets` (the first two counted: events, page views) until none is left,
 * `sweep` first inserting what the outbox holds. The counts of the first round.
 */
async function eraseRows(ctx: ClickHouseContext, targets: Target[], params: Record<string, unknown>, sweep: () => Promise<void>): Promise<ErasedRows> {
  let erased: ErasedRows | null = null;
  for (let round = 0; round < ROUNDS; round++) {
    await sweep();
    const counts = await Promise.all(targets.map((t) => countRows(ctx, t, params)));
    erased ??= { events: counts[0]!, pageviews: counts[1]! };
    if (counts.every((n) => n === 0)) return erased;
    for (const [i, t] of targets.entries()) if (counts[i]! > 0) await mutate(ctx, t, params);
  }
  const left = await Promise.all(targets.map((t) => countRows(ctx, t, params)));
  if (left.some((n) => n > 0)) throw new RowsStillLanding(ROUNDS);
  return erased!;
}

const WS = 'workspace_id = {ws:String}';

/**
 * Freezes the revenue attribution of payers about to lose their person (Printer.freeze), once the
 * copies of customers and visitors are current (`sweep`).
 */
export async function freezeAttribution(ctx: ClickHouseContext, ws: string, customerIds: string[], sweep: () => Promise<void>): Promise<void> {
  if (customerIds.length === 0) return;
  await sweep();
  for (const q of new ClickHousePrinter(ctx.database).freeze(ws, customerIds)) {
    await ctx.client.command({ query: q.sql, query_params: q.params });
  }
}

/** The rows of these keys: events, page views, and the copies of persons and visitors (bench/clickhouse-deletes.bench.ts too). */
export function keyTargets(ws: string, personKeys: number[], visitorKeys: number[]): { targets: Target[]; params: Record<string, unknown> } {
  // Keys as text: chDB binds no integer past 2^53.
  const params = { ws, persons: personKeys.map(String), visitors: visitorKeys.map(String) };
  const persons = 'person_key IN (SELECT toInt64(arrayJoin({persons:Array(String)})))';
  const visitors = 'visitor_key IN (SELECT toInt64(arrayJoin({visitors:Array(String)})))';
  return {
    params,
    targets: [
      { table: 'events', where: `${WS} AND (${persons} OR ${visitors})` },
      { table: 'pageviews', where: `${WS} AND ${visitors}` },
      { table: 'persons', where: `${WS} AND ${persons}` },
      { table: 'visitors', where: `${WS} AND ${visitors}` },
    ],
  };
}

/** The events and page views of these keys, once the outbox is inserted (`sweep`). */
export async function countKeys(ctx: ClickHouseContext, ws: string, personKeys: number[], visitorKeys: number[], sweep: () => Promise<void>): Promise<ErasedRows> {
  await sweep();
  const { targets, params } = keyTargets(ws, personKeys, visitorKeys);
  const [events, pageviews] = await Promise.all(targets.slice(0, 2).map((t) => countRows(ctx, t, params)));
  return { events: events!, pageviews: pageviews! };
}

/** The events, page views and copies of persons and visitors of these keys. */
export async function eraseKeys(ctx: ClickHouseContext, ws: string, personKeys: number[], visitorKeys: number[], sweep: () => Promise<void>): Promise<ErasedRows> {
  const { targets, params } = keyTargets(ws, personKeys, visitorKeys);
  const erased = await eraseRows(ctx, targets, params, sweep);
  await reloadVisitorLinks(ctx);
  return erased;
}

/** Events and page views before `before` (retention). */
export function eraseBefore(ctx: ClickHouseContext, ws: string, before: Date, sweep: () => Promise<void>): Promise<ErasedRows> {
  const params = { ws, before: before.getTime() / 1000 };
  const old = `${WS} AND ts < toDateTime64({before:Float64}, 6, 'UTC')`;
  return eraseRows(ctx, [{ table: 'events', where: old }, { table: 'pageviews', where: old }, { table: 'frozen_touches', where: old }], params, sweep);
}
