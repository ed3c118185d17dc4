// Privacy requests as the API shows them: submitted (202, pending), then read back with their
// status and counts. The work is the worker's (worker.ts).

import { randomBytes } from 'node:crypto';
import { AppError, invalidRequest } from '../errors.js';
import {
  findRequest, type Identifier, IDENTIFIER_KINDS, insertRequest, listRequests, type PrivacyRequestRow,
} from '../store/control/privacy.js';
import type { ControlStore } from '../store/control/store.js';
import type { PrivacyRequestAnswer, PrivacyRequestBody } from './schema.js';

const newRequestId = () => `prv_${randomBytes(12).toString('base64url')}`;

export function identifiersOf(body: PrivacyRequestBody): Identifier[] {
  return body.identifiers.map((i) => {
    const kind = IDENTIFIER_KINDS.find((k) => k in i)!;
    return { kind, value: (i as Record<string, string>)[kind]! };
  });
}

export function answerOf(r: PrivacyRequestRow): PrivacyRequestAnswer {
  return {
    id: r.request_id, type: r.type, status: r.status, created_at: r.created_at.toISOString(), finished_at: r.finished_at?.toISOString() ?? null,
    error: r.error, identifiers: r.identifier_hashes,
    counts: { persons: r.persons, visitors: r.visitors, events: r.events, pageviews: r.pageviews, customers: r.customers },
  };
}

export async function submitRequest(store: ControlStore, ws: string, body: PrivacyRequestBody, at: Date): Promise<PrivacyRequestRow> {
  return insertRequest(store, ws, newRequestId(), body.type, identifiersOf(body), at);
}

export async function getRequest(store: ControlStore, ws: string, id: string): Promise<PrivacyRequestAnswer> {
  const row = await findRequest(store, ws, id);
  if (!row) throw new AppError('not_found', `no privacy request ${id}`);
  return answerOf(row);
}

const cursorOf = (r: PrivacyRequestRow) => Buffer.from(JSON.stringify([r.created_at.toISOString(), r.request_id])).toString('base64url');

function readCursor(cursor: string): { created_at: Date; request_id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [string, string];
    const created = new Date(at);
    if (typeof id === 'string' && !Number.isNaN(created.getTime())) return { created_at: created, request_id: id };
  } catch { /* answered below */ }
  throw invalidRequest([{ field: 'cursor', in: 'querystring', message: 'not a cursor this endpoint gave' }]);
}

export async function pageOfRequests(store: ControlStore, ws: string, limit: number, cursor?: string) {
  const rows = await listRequests(store, ws, limit + 1, cursor === undefined ? undefined : readCursor(cursor));
  const page = rows.slice(0, limit);
  return { data: page.map(answerOf), next_cursor: rows.length > limit ? cursorOf(page[page.length - 1]!) : null };
}
