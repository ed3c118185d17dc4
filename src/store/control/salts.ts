// The daily salts of cookieless visitor ids (decisions §12), one per UTC day for every node sharing
// the control store. A day's salt is made by whoever needs it first; the salts of earlier days are
// deleted then, so no id of an earlier day can be made again from an address and a user agent.

import type { ControlStore } from './store.js';

/** The salt of `day` (YYYY-MM-DD): the stored one, else `candidate`, stored; earlier days' are deleted. */
export async function daySalt(store: ControlStore, day: string, candidate: string, at: Date): Promise<string> {
  return store.transaction(async (tx) => {
    await tx.run('INSERT INTO visitor_salts (day, salt, created_at) VALUES ($1, $2, $3) ON CONFLICT (day) DO NOTHING', [day, candidate, at]);
    await tx.run('DELETE FROM visitor_salts WHERE day < $1', [day]);
    const [row] = await tx.all('SELECT salt FROM visitor_salts WHERE day = $1', [day]);
    return row!.salt as string;
  });
}
