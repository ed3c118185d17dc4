// A batch's new persons, visitors and message ids appended in data chunks (store/duckdb/chunks.ts)
// inside the write transaction: the INSERT of the rows bound as JSON lists spent more of DuckDB's
// CPU parsing and casting the lists than storing the rows (bench/RESULTS.md, "New persons").

import type { DuckDBConnection } from '@duckdb/node-api';
import type { NewPerson, NewVisitor } from '../control/people.js';
import type { ControlAppends } from '../control/store.js';
import { appendRows, boolean, constantInstant, constantText, instant, int64, text } from './chunks.js';
import { hasSurrogateEscape } from '../../well-formed.js';
import { personSearchText } from './search.js';
import { runKept } from './statements.js';

/** The appends of the transaction on `conn`; columns in each table's order (a column a migration adds gets its line here). */
export const controlAppends = (conn: DuckDBConnection): ControlAppends => ({
  persons: async (ws: string, persons: readonly NewPerson[], at: Date) => {
    // The appender reads no JSON: traits DuckDB's reader refuses are cast first, refused as the INSERT refused them.
    for (const p of persons) if (hasSurrogateEscape(p.traits)) await runKept(conn, 'SELECT CAST($1 AS JSON)', [p.traits]);
    await appendRows<NewPerson>(conn, 'persons', [
      constantText(ws),
      int64((p) => p.person_key),
      text((p) => p.person_id),
      text((p) => p.external_id),
      text((p) => p.email),
      text((p) => p.name),
      text((p) => p.traits),
      constantInstant(at),
      constantInstant(at),
      text((p) => personSearchText([p.email, p.external_id, p.name])),
    ], persons);
  },
  visitors: (ws: string, visitors: readonly NewVisitor[], at: Date) => appendRows<NewVisitor>(conn, 'visitors', [
    constantText(ws),
    int64((v) => v.visitor_key),
    text((v) => v.visitor_id),
    int64((v) => v.person_key),
    instant((v) => v.first_seen_at),
    instant((v) => (v.person_key === null ? null : at)),
    boolean((v) => v.anonymous_events),
  ], visitors),
  // The primary key refuses an id seen before (the appender checks the stored rows and the transaction's).
  messageIds: (ws: string, messageIds: readonly string[]) => appendRows<string>(conn, 'event_messages', [constantText(ws), text((id) => id)], messageIds),
});
