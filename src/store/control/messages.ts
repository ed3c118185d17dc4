// Message ids seen per workspace: an event repeated with its message_id is stored once. A claim is
// exact (a primary key, in the batch's transaction), so it stays with the control state.

import { columnOf, type ControlTx } from './store.js';

/** Records message ids and returns those not seen before in the workspace. */
export async function claimMessageIds(tx: ControlTx, ws: string, messageIds: string[]): Promise<Set<string>> {
  const fresh = new Set<string>();
  if (messageIds.length === 0) return fresh;
  const claimed = await tx.all(`INSERT INTO event_messages (workspace_id, message_id)
    SELECT $1, ${tx.dialect.texts('$2')} ON CONFLICT DO NOTHING RETURNING message_id`, [ws, columnOf(messageIds)]);
  for (const row of claimed) fresh.add(row.message_id as string);
  return fresh;
}
