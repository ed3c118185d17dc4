// Emails as each platform matches them: normalized its way, then SHA-256 in lowercase hex.
// Members without an email are skipped (and counted) by every ad platform.

import { createHash } from 'node:crypto';
import type { DiffMember } from '../../store/analytics.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Meta: leading and trailing whitespace trimmed, lowercased. */
export const metaEmail = (email: string) => email.trim().toLowerCase();

const GMAIL_DOMAINS = new Set(['gmail.com', 'googlemail.com']);

/**
 * Google (Data Manager and Customer Match): all whitespace removed, lowercased; for gmail.com and
 * googlemail.com, the dots of the local part and anything from a `+` on are removed as well.
 */
export function googleEmail(email: string): string {
  const plain = email.replace(/\s+/g, '').toLowerCase();
  const at = plain.lastIndexOf('@');
  if (at < 0 || !GMAIL_DOMAINS.has(plain.slice(at + 1))) return plain;
  const local = plain.slice(0, at).split('+')[0]!.replaceAll('.', '');
  return `${local}${plain.slice(at)}`;
}

export type Normalize = (email: string) => string;

/** A member's hashed email, with its explicit ads consent when it has one. */
export interface HashedMember {
  hash: string;
  ads?: boolean;
}

/** The hashed emails of the members of one change, each normalized email once, with their ads consent from `consent` (by profile). */
export function hashedMembers(members: DiffMember[], change: DiffMember['change'], normalize: Normalize,
  consent?: ReadonlyMap<number, boolean>): HashedMember[] {
  const found = new Map<string, HashedMember>();
  for (const m of members) {
    if (m.change !== change || !m.email) continue;
    const normalized = normalize(m.email);
    if (!normalized) continue;
    const hash = sha256(normalized);
    const ads = consent?.get(m.profile);
    if (!found.has(hash)) found.set(hash, ads === undefined ? { hash } : { hash, ads });
  }
  return [...found.values()];
}

/** The hashes of the members of one change, each normalized email once. */
export const hashedEmails = (members: DiffMember[], change: DiffMember['change'], normalize: Normalize): string[] =>
  hashedMembers(members, change, normalize).map((m) => m.hash);

/** Members of a page an ad platform cannot match: no email. */
export const withoutEmail = (members: DiffMember[]) => members.filter((m) => !m.email || !m.email.trim()).length;

export const hashEmail = (email: string, normalize: Normalize) => sha256(normalize(email));
