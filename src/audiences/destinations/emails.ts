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

/** The hashes of the members of one change, each normalized email once; and how many had no email. */
export function hashedEmails(members: DiffMember[], change: DiffMember['change'], normalize: Normalize): string[] {
  const hashes = new Set<string>();
  for (const m of members) {
    if (m.change !== change || !m.email) continue;
    const normalized = normalize(m.email);
    if (normalized) hashes.add(sha256(normalized));
  }
  return [...hashes];
}

/** Members of a page an ad platform cannot match: no email. */
export const withoutEmail = (members: DiffMember[]) => members.filter((m) => !m.email || !m.email.trim()).length;

export const hashEmail = (email: string, normalize: Normalize) => sha256(normalize(email));
