// Request and answer shapes of the privacy endpoints (decisions §12), one zod schema each: they
// validate, type the handlers and document the API.

import { z } from 'zod';
import { PRIVACY_TYPES } from '../store/control/privacy.js';

/** As many identifiers a request as Segment's regulations take. */
export const MAX_IDENTIFIERS = 5000;

const identifierValue = z.string().min(1).max(256);

export const privacyIdentifier = z.union([
  z.object({ external_id: z.union([identifierValue, z.number().int().refine(Number.isSafeInteger, 'must be a safe integer')]).transform(String) }).strict(),
  z.object({ email: z.string().trim().min(1).max(256).transform((v) => v.toLowerCase()) }).strict(),
  z.object({ visitor_id: identifierValue }).strict(),
]).describe('exactly one of external_id, email or visitor_id');

export const privacyRequestBody = z.object({
  type: z.enum(PRIVACY_TYPES).describe('delete: forget the people; suppress: store nothing of them from now on; unsuppress lifts it'),
  identifiers: z.array(privacyIdentifier).min(1).max(MAX_IDENTIFIERS),
});
export type PrivacyRequestBody = z.output<typeof privacyRequestBody>;

const instant = z.string().describe('ISO 8601');

export const privacyRequestAnswer = z.object({
  id: z.string(),
  type: z.enum(PRIVACY_TYPES),
  status: z.enum(['pending', 'running', 'done', 'failed']),
  created_at: instant,
  finished_at: instant.nullable(),
  error: z.string().nullable(),
  identifiers: z.array(z.object({ kind: z.enum(['external_id', 'email', 'visitor_id']), sha256: z.string() }))
    .describe('SHA-256 (hex) of "<kind>:<value>", emails trimmed and lowercased: the audit trail never keeps the identifiers'),
  counts: z.object({
    persons: z.number().int().nullable(),
    visitors: z.number().int().nullable(),
    events: z.number().int().nullable().describe('of the persons and visitors this request reached, counted before its pass erased them'),
    pageviews: z.number().int().nullable().describe('as events'),
    customers: z.number().int().nullable().describe('payment customers de-identified (their payments stay)'),
  }),
});
export type PrivacyRequestAnswer = z.infer<typeof privacyRequestAnswer>;

export const privacyAccepted = privacyRequestAnswer.pick({ id: true, type: true, status: true, created_at: true });

export const privacyListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional().describe('next_cursor of the page before'),
});

export const privacyList = z.object({ data: z.array(privacyRequestAnswer), next_cursor: z.string().nullable() });
export type PrivacyList = z.infer<typeof privacyList>;
