// Removals of erased people: a delete leaves the person's public ids as a departure until its
// audiences' next refresh has delivered its removal (store/control/privacy.ts), so a destination
// is told whom to remove (an ad platform needs the email to hash) though the person is gone.

import type { DiffMember } from '../store/analytics.js';
import { departures } from '../store/control/privacy.js';
import type { ControlSql } from '../store/control/store.js';

/** The page's removed members whose details are gone, named from their departures. */
export async function withDepartures(control: ControlSql, ws: string, members: DiffMember[]): Promise<DiffMember[]> {
  const gone = members.filter((m) => m.change === 'removed' && m.person_id === null && m.visitor_id === null).map((m) => m.profile);
  if (gone.length === 0) return members;
  const found = await departures(control, ws, gone);
  return members.map((m) => {
    const ids = m.change === 'removed' && m.person_id === null && m.visitor_id === null ? found.get(m.profile) : undefined;
    return ids ? { ...m, ...ids } : m;
  });
}
