// How the query side sends statements to ClickHouse: tables qualified by the configured database
// (chDB ignores the client's default database), the settings every statement carries, statements
// bounded by a deadline, rows written to a file, and deletes that work on a single node and on a cluster.
//
// chDB applies a request's clickhouse_settings as SET on its one session, where they stay for the
// statements after it: only constant settings travel that way. A statement's own limit
// (max_execution_time) is written in its SETTINGS clause, which holds for that statement alone.

import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { ClickHouseSettings } from '@clickhouse/client';
import { CLICKHOUSE_QUERY_SETTINGS } from '../../criteria/index.js';
import { FORMULA_START } from '../csv-cells.js';
import type { ClickHouseContext } from './context.js';
import { CLUSTER_QUERY_SETTINGS } from './schema.js';

export const quote = (identifier: string) => `\`${identifier.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;

/** A table of the analytical schema, qualified by the database (the Distributed one on a cluster). */
export const table = (ctx: ClickHouseContext, name: string) => `${quote(ctx.database)}.${quote(name)}`;

/** The settings of every statement: sizes for large criteria trees, and the cluster's own. */
export function settings(ctx: ClickHouseContext): ClickHouseSettings {
  return ctx.cluster === undefined ? { ...CLICKHOUSE_QUERY_SETTINGS } : { ...CLICKHOUSE_QUERY_SETTINGS, ...CLUSTER_QUERY_SETTINGS };
}

/**
 * The settings of snapshots' and deliveries' statements, which read what the ones before wrote. On
 * a cluster an insert into a Distributed table reaches its shard before it returns (not queued), a
 * majority of the shard's replicas have it, and a read refuses a replica lagging behind such inserts.
 */
export function consistentSettings(ctx: ClickHouseContext): ClickHouseSettings {
  return ctx.cluster === undefined
    ? settings(ctx)
    : { ...settings(ctx), insert_distributed_sync: 1, insert_quorum: 'auto', select_sequential_consistency: '1' };
}

/** The answer of a statement stopped at its deadline or by its signal (or answered after it). */
export const STOPPED = Symbol('stopped');

export interface Bound {
  /** performance.now() time past which the statement is stopped. */
  deadline: number;
  /** Stops the statement as the deadline would (the service stopping). */
  signal?: AbortSignal;
}

/** What a bounded statement is sent with. */
export interface BoundedRun {
  query_id: string;
  abort_signal: AbortSignal;
  /** `max_execution_time = …` for the statement's SETTINGS clause: the time left, in seconds. */
  limit: string;
}

/** ClickHouse error codes of a statement stopped by its limit or by KILL QUERY. */
const STOP_CODES = new Set(['159', '394']);

const stoppedByEngine = (err: unknown) => STOP_CODES.has(String((err as { code?: unknown }).code));

/**
 * Runs one statement before `bound.deadline`. The engine stops it there by itself
 * (max_execution_time); the client also aborts the request then, or on the signal, and asks the
 * server to stop it (KILL QUERY by its query id: a server keeps running a query whose HTTP client
 * went away). chDB cannot interrupt a query (its KILL finds nothing); it answers when the engine's
 * own limit stops it, and an answer after the deadline counts as stopped. STOPPED once the deadline
 * or the signal has come, whether the statement failed, was stopped or answered late.
 */
export async function bounded<T>(ctx: ClickHouseContext, bound: Bound, send: (run: BoundedRun) => Promise<T>): Promise<T | typeof STOPPED> {
  const left = bound.deadline - performance.now();
  if (left <= 0 || bound.signal?.aborted) return STOPPED;
  const run = { query_id: randomUUID(), abort_signal: new AbortController(), limit: `max_execution_time = ${(left / 1000).toFixed(3)}` };
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    run.abort_signal.abort();
  };
  const timer = setTimeout(stop, left);
  bound.signal?.addEventListener('abort', stop);
  const over = () => stopping || performance.now() >= bound.deadline;
  try {
    const result = await send({ query_id: run.query_id, abort_signal: run.abort_signal.signal, limit: run.limit });
    return over() ? STOPPED : result;
  } catch (err) {
    if (over() || stoppedByEngine(err)) return STOPPED;
    throw err;
  } finally {
    clearTimeout(timer);
    bound.signal?.removeEventListener('abort', stop);
    if (stopping) await kill(ctx, run.query_id);
  }
}

/**
 * Stops a query and the shards' parts of it, waiting until they have stopped: on a server for the
 * kill's own bound at most (a frozen server must not hold the caller past its deadline), on the
 * embedded chDB until the engine is free (its one session runs the next statement only then, so
 * the caller's run slot is kept till then). Best effort: the engine's limit stops the query anyway.
 */
async function kill(ctx: ClickHouseContext, queryId: string): Promise<void> {
  const onCluster = ctx.cluster === undefined ? '' : ` ON CLUSTER ${quote(ctx.cluster)}`;
  await ctx.client.command({
    query: `KILL QUERY${onCluster} WHERE initial_query_id = {id:String} SYNC`, query_params: { id: queryId },
    ...(ctx.killTimeoutMs === undefined ? {} : { abort_signal: AbortSignal.timeout(ctx.killTimeoutMs) }),
  }).catch(() => undefined);
}

/**
 * Deletes the rows of `name` matching `where` (lightweight DELETE: the rows disappear from reads
 * at once, merges drop them later), unless none matches: a delete is a mutation of the parts. On a
 * cluster the delete runs on every node's local table (a Distributed table takes no DELETE).
 */
export async function deleteWhere(ctx: ClickHouseContext, name: string, where: string, params: Record<string, unknown>): Promise<void> {
  const found = await rows<{ one: number }>(ctx, `SELECT 1 AS one FROM ${table(ctx, name)} WHERE ${where} LIMIT 1`, params);
  if (found.length === 0) return;
  const target = ctx.cluster === undefined ? table(ctx, name) : `${table(ctx, `${name}_local`)} ON CLUSTER ${quote(ctx.cluster)}`;
  await ctx.client.command({ query: `DELETE FROM ${target} WHERE ${where}`, query_params: params, clickhouse_settings: consistentSettings(ctx) });
}

/** The rows of a snapshot or delivery query, without a limit. */
export async function rows<T>(ctx: ClickHouseContext, query: string, params: Record<string, unknown>): Promise<T[]> {
  const result = await ctx.client.query({ query, query_params: params, format: 'JSONEachRow', clickhouse_settings: consistentSettings(ctx) });
  return result.json<T>();
}

/** A number of a JSON row: 64-bit integers come quoted from a server, bare from chDB. */
export const num = (value: unknown): number => Number(value);

/**
 * The statement with each cell neutralized for a CSV (store/csv-cells.ts), each column under its
 * own name: the names are read first (DESCRIBE analyses the statement, runs nothing).
 */
async function neutralizedCells(ctx: ClickHouseContext, query: { sql: string; params: Record<string, unknown> }): Promise<{ sql: string; params: Record<string, unknown> }> {
  const columns = await rows<{ name: string; type: string }>(ctx, `DESCRIBE TABLE (${query.sql})`, query.params);
  // The pattern bound, not spelled: ClickHouse string literals read backslash escapes.
  const cells = columns.map(({ name, type }) => (/String/.test(type)
    ? `if(match(${quote(name)}, {csv_formula_start:String}), concat('''', ${quote(name)}), ${quote(name)}) AS ${quote(name)}` : quote(name)));
  return { sql: `SELECT ${cells.join(', ')} FROM (${query.sql})`, params: { ...query.params, csv_formula_start: FORMULA_START } };
}

const CSV_SETTINGS = { format_csv_null_representation: '', output_format_csv_crlf_end_of_line: 0 } as const;

/**
 * Writes a statement's rows to `path` as ClickHouse formats them, streamed from the server; the
 * row count from the statement's summary (a server gives the final one with wait_end_of_query).
 * CSV: a header, NULL as an empty field, every string quoted (DuckDB quotes only where needed:
 * the same rows to a CSV reader).
 */
export async function writeRows(ctx: ClickHouseContext, query: { sql: string; params: Record<string, unknown> }, path: string, format: 'csv' | 'parquet'): Promise<number> {
  const written = format === 'csv' ? await neutralizedCells(ctx, query) : query;
  const result = await ctx.client.exec({
    query: `${written.sql}\nFORMAT ${format === 'csv' ? 'CSVWithNames' : 'Parquet'}`,
    query_params: written.params,
    clickhouse_settings: { ...settings(ctx), ...(format === 'csv' ? CSV_SETTINGS : {}), wait_end_of_query: 1 },
  });
  await pipeline(result.stream, createWriteStream(path));
  if (result.summary?.result_rows === undefined) throw new Error('ClickHouse did not report the number of rows written');
  return num(result.summary.result_rows);
}
