// Consent in the control store (decisions §12): a person's ads consent read from its `$consent`
// trait, and per ad-platform destination the audience members it does not hold because of their
// consent (withheld), so a later change of consent is sent once: a removal, or an add when granted.

import { columnOf as column, type ControlSql } from './store.js';

/** The trait path of a person's ads consent. */
export const ADS_CONSENT_PATH = '$consent.ads';

/** The explicit ads consent (`$consent.ads` true or false) of persons by key; persons without one are absent. */
export async function adsConsent(sql: ControlSql, ws: string, personKeys: number[]): Promise<Map<number, boolean>> {
  if (personKeys.length === 0) return new Map();
  const { byKeys, jsonAt } = sql.dialect;
  const rows = await sql.all(`SELECT person_key, ${jsonAt('traits', '$3')} AS ads FROM ${byKeys('persons', 'person_key', '$2', '$1', 'person_key, traits')} AS p`,
    [ws, column(personKeys), ADS_CONSENT_PATH]);
  const found = new Map<number, boolean>();
  for (const r of rows) if (r.ads === 'true' || r.ads === 'false') found.set(Number(r.person_key), r.ads === 'true');
  return found;
}

/** One destination of one audience. */
export interface DestinationKey {
  ws: string;
  audienceId: string;
  destinationId: string;
}

const KEY = 'workspace_id = $1 AND audience_id = $2 AND destination_id = $3';
const keyOf = (d: DestinationKey) => [d.ws, d.audienceId, d.destinationId];

/** The withheld profiles of the destination in (`after`, `through`] (null: from the first; through null: to the last). */
export async function withheldBetween(sql: ControlSql, d: DestinationKey, after: number | null, through: number | null): Promise<Set<number>> {
  const rows = await sql.all(`SELECT profile FROM audience_consent_withheld WHERE ${KEY}
    AND (CAST($4 AS BIGINT) IS NULL OR profile > $4) AND (CAST($5 AS BIGINT) IS NULL OR profile <= $5)`, [...keyOf(d), after, through]);
  return new Set(rows.map((r) => Number(r.profile)));
}

/** The withheld profiles among `profiles`. */
export async function withheldOf(sql: ControlSql, d: DestinationKey, profiles: number[]): Promise<Set<number>> {
  if (profiles.length === 0) return new Set();
  const rows = await sql.all(`SELECT profile FROM audience_consent_withheld WHERE ${KEY} AND profile IN (SELECT ${sql.dialect.keys('$4')})`,
    [...keyOf(d), column(profiles)]);
  return new Set(rows.map((r) => Number(r.profile)));
}

/** Records `profiles` as withheld from the destination (again is harmless). */
export async function withhold(sql: ControlSql, d: DestinationKey, profiles: number[]): Promise<void> {
  if (profiles.length === 0) return;
  await sql.run(`INSERT INTO audience_consent_withheld (workspace_id, audience_id, destination_id, profile)
    SELECT $1, $2, $3, ${sql.dialect.keys('$4')} ON CONFLICT DO NOTHING`, [...keyOf(d), column(profiles)]);
}

/** Forgets `profiles` as withheld: the destination holds them again, or they left the audience. */
export async function release(sql: ControlSql, d: DestinationKey, profiles: number[]): Promise<void> {
  if (profiles.length === 0) return;
  await sql.run(`DELETE FROM audience_consent_withheld WHERE ${KEY} AND profile IN (SELECT ${sql.dialect.keys('$4')})`, [...keyOf(d), column(profiles)]);
}

/** Forgets the withheld profiles past `after` (the members checked end there). */
export async function releaseAfter(sql: ControlSql, d: DestinationKey, after: number | null): Promise<void> {
  await sql.run(`DELETE FROM audience_consent_withheld WHERE ${KEY} AND (CAST($4 AS BIGINT) IS NULL OR profile > $4)`, [...keyOf(d), after]);
}

/**
 * The snapshot the destination holds exactly, with the delivery that brought it there: the
 * audience's current one, when its deliveries have all gone through (none pending, none left half
 * way); null otherwise (the next delivery converges first).
 */
export async function heldSnapshot(sql: ControlSql, d: DestinationKey): Promise<{ snapshotId: number; deliveryId: number } | null> {
  const [row] = await sql.all(`SELECT a.snapshot_id,
      (SELECT max(acked_snapshot_id) FROM audience_destinations WHERE ${KEY}) AS acked,
      EXISTS (SELECT 1 FROM audience_destination_changes WHERE ${KEY}) AS changes,
      EXISTS (SELECT 1 FROM audience_deliveries WHERE ${KEY} AND status = 'pending') AS pending,
      (SELECT max(delivery_id) FROM audience_deliveries WHERE ${KEY} AND status = 'delivered') AS delivery
    FROM audiences a WHERE a.workspace_id = $1 AND a.audience_id = $2`, keyOf(d));
  if (!row || row.snapshot_id === null || row.delivery === null || row.changes || row.pending) return null;
  return Number(row.acked) === Number(row.snapshot_id) ? { snapshotId: Number(row.snapshot_id), deliveryId: Number(row.delivery) } : null;
}
