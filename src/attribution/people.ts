// GET /people: matching people with their payment customers, link state and first-touch channel.

import { NON_ATTRIBUTED } from '../criteria/index.js';
import { invalidRequest } from '../errors.js';
import { lookupPeople } from '../store/control/lookup.js';
import type { Stores } from '../store/open.js';
import type { PeoplePage, PersonMatch } from './people-schema.js';

/** Cursors are opaque to clients: the last row's sort key. */
const encodeCursor = (key: string) => Buffer.from(key, 'utf8').toString('base64url');

function decodeCursor(cursor: string | undefined): string {
  if (cursor === undefined || cursor === '') return '';
  const key = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[pc]/.test(key) || encodeCursor(key) !== cursor) throw invalidRequest([{ field: '/cursor', in: 'querystring', message: 'not a cursor returned by this endpoint' }]);
  return key;
}

export async function findPeople(stores: Stores, ws: string, q: string, limit: number, cursor?: string): Promise<PeoplePage> {
  const rows = await lookupPeople(stores.control, ws, q, decodeCursor(cursor), limit + 1);
  const page = rows.slice(0, limit);
  const personKeys = page.flatMap((r) => (r.person_key === null ? [] : [r.person_key]));
  const visitorKeys = page.flatMap((r) => (r.person_key === null && r.visitor_key !== null ? [r.visitor_key] : []));
  const channels = await stores.analytics.firstTouchChannels(ws, { personKeys, visitorKeys });
  const data = page.map((r): PersonMatch => ({
    person_id: r.person_id,
    external_id: r.external_id,
    email: r.email,
    name: r.name,
    customer_ids: r.customer_ids,
    link_state: r.link_state,
    first_touch_channel: (r.person_key !== null ? channels.persons.get(r.person_key)
      : r.visitor_key !== null ? channels.visitors.get(r.visitor_key) : undefined) ?? NON_ATTRIBUTED,
  }));
  const last = page[page.length - 1];
  return { data, next_cursor: rows.length > limit && last ? encodeCursor(last.sort_key) : null };
}
