// A person merge on ClickHouse, once its control rows committed: the events of the merged-away
// person are rewritten (a mutation: person_key is no sorting key) and its copy in `persons` goes.
// Units committed before the merge may still be inserting their rows: this node's outbox is swept,
// and the outbox rows of other nodes' units are waited for, before each round of mutations.

import type { ClickHouseContext } from './context.js';
import { quote, rows, table } from './run.js';

/** Rounds of rewrite and check, as a privacy delete's (erase.ts). */
const ROUNDS = 3;
/** How long a round waits for other nodes' units to leave the outbox. */
const OUTBOX_WAIT_MS = 30_000;

const WS = 'workspace_id = {ws:String}';
const FROM = 'person_key = toInt64({from:String})';

async function count(ctx: ClickHouseContext, name: string, params: Record<string, unknown>): Promise<number> {
  const [row] = await rows<{ n: unknown }>(ctx, `SELECT count() AS n FROM ${table(ctx, name)} WHERE ${WS} AND ${FROM}`, params);
  return Number(row?.n ?? 0);
}

/** Waits until the units in the outbox now have left it (ClickHouse acknowledged their rows). */
async function drainOutbox(ctx: ClickHouseContext): Promise<void> {
  const tokens = (await ctx.control.all('SELECT DISTINCT token FROM analytics_outbox')).map((r) => r.token as string);
  for (const deadline = Date.now() + OUTBOX_WAIT_MS; tokens.length > 0 && Date.now() < deadline;) {
    const left = await ctx.control.all(`SELECT 1 AS one FROM analytics_outbox WHERE token IN (SELECT ${ctx.control.dialect.texts('$1')}) LIMIT 1`,
      [JSON.stringify(tokens)]);
    if (left.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function mutate(ctx: ClickHouseContext, name: string, action: string, params: Record<string, unknown>): Promise<void> {
  const target = ctx.cluster === undefined ? table(ctx, name) : `${table(ctx, `${name}_local`)} ON CLUSTER ${quote(ctx.cluster)}`;
  await ctx.client.command({ query: `ALTER TABLE ${target} ${action} WHERE ${WS} AND ${FROM}`, query_params: params, clickhouse_settings: { mutations_sync: '2' } });
}

/** Rewrites `fromKey`'s events as `intoKey`'s and drops its person copy until none is left; the events moved. */
export async function finishPersonMove(ctx: ClickHouseContext, ws: string, fromKey: number, intoKey: number, sweep: () => Promise<void>): Promise<number> {
  // Keys as text: chDB binds no integer past 2^53.
  const params = { ws, from: String(fromKey), into: String(intoKey) };
  let moved = 0;
  for (let round = 0; round < ROUNDS; round++) {
    await sweep();
    await drainOutbox(ctx);
    const [events, persons] = [await count(ctx, 'events', params), await count(ctx, 'persons', params)];
    if (events === 0 && persons === 0) return moved;
    moved += events;
    if (events > 0) await mutate(ctx, 'events', 'UPDATE person_key = toInt64({into:String})', params);
    if (persons > 0) await mutate(ctx, 'persons', 'DELETE', params);
  }
  if (await count(ctx, 'events', params) > 0) throw new Error(`events of a merged person are still stored after ${ROUNDS} rounds; the merge is finished again at its next call`);
  return moved;
}
