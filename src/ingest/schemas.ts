// Request and answer shapes of the ingest endpoints (decisions §3–§5), one zod schema each: they
// validate, type the handlers and document the API.

import { z } from 'zod';
import { isPageUrl } from './channels.js';
import { consentWellFormed } from './consent.js';
import { eventWithinSize, onValid, propertiesWithinLimits, traitsWithinLimits } from './limits.js';

const identifier = z.string().min(1).max(256);
/** A JSON integer user id is kept as its decimal string, so it matches tr_user_id byte for byte. */
const userId = z.union([identifier, z.number().int().refine(Number.isSafeInteger, 'must be a safe integer')])
  .transform((v) => String(v));
const email = z.string().trim().min(1).max(256).transform((v) => v.toLowerCase());
const jsonObject = z.record(z.string(), z.unknown());
const traits = jsonObject.superRefine(traitsWithinLimits).superRefine(consentWellFormed);
const properties = jsonObject.superRefine(propertiesWithinLimits);
export const timestamp = z.iso.datetime({ offset: true, local: true });

const identityShape = {
  external_id: userId.optional(),
  user_id: userId.optional().describe('alias of external_id'),
  email: email.optional(),
  visitor_id: identifier.optional(),
  tr_visitor_id: identifier.optional().describe('alias of visitor_id'),
};

type IdentityFields = { [K in keyof typeof identityShape]?: string };

/** Alias pairs must agree, and one identifier must be present. */
function checkIdentity(value: IdentityFields, ctx: z.RefinementCtx): void {
  for (const [field, alias] of [['external_id', 'user_id'], ['visitor_id', 'tr_visitor_id']] as const) {
    if (value[field] !== undefined && value[alias] !== undefined && value[field] !== value[alias]) {
      ctx.addIssue({ code: 'custom', path: [alias], message: `${alias} is an alias of ${field} and differs from it` });
    }
  }
  if ([value.external_id, value.user_id, value.email, value.visitor_id, value.tr_visitor_id].every((v) => v === undefined)) {
    ctx.addIssue({ code: 'custom', path: ['external_id'], message: 'one of external_id (user_id), email or visitor_id (tr_visitor_id) is required' });
  }
}

export const personBody = z.object({
  ...identityShape,
  name: z.string().max(256).optional(),
  traits: traits.optional().describe('merged onto the person: keys sent are upserted, others kept'),
}).superRefine(checkIdentity);

export const eventBody = z.object({
  event_name: z.string().min(1).max(200),
  ...identityShape,
  traits: traits.optional(),
  properties: properties.optional().describe('describes the event only; never merged onto the person'),
  timestamp: timestamp.optional().describe('ISO 8601; default: time of receipt'),
  message_id: identifier.optional().describe('a repeated message_id is accepted and stored once'),
}).superRefine(checkIdentity).superRefine(eventWithinSize, onValid);

export const MAX_BATCH = 500;
export const eventsBody = z.union([eventBody, z.object({ batch: z.array(eventBody).min(1).max(MAX_BATCH) })]);

/** A visitor id, or the mark of a page view without one (the tracker's data-cookieless): one of them. */
function checkVisitor(value: { visitor_id?: string; cookieless?: true }, ctx: z.RefinementCtx): void {
  if (value.visitor_id !== undefined && value.cookieless) {
    ctx.addIssue({ code: 'custom', path: ['cookieless'], message: 'a cookieless page view carries no visitor_id' });
  } else if (value.visitor_id === undefined && !value.cookieless) {
    ctx.addIssue({ code: 'custom', path: ['visitor_id'], message: 'visitor_id is required (or cookieless: true)' });
  }
}

export const pageviewBody = z.object({
  visitor_id: identifier.optional().describe('the raw value of the tr_v cookie; absent with cookieless'),
  cookieless: z.literal(true).optional()
    .describe('no cookie (the tracker\'s data-cookieless): the visitor is derived from a daily-rotating salted hash of the address and user agent'),
  url: z.string().max(4096).refine(isPageUrl, 'must be an http(s) URL such as https://example.com/pricing, or a path such as /pricing')
    .describe('the page\'s address (location.href)'),
  referrer: z.string().max(4096).nullable().optional(),
  title: z.string().max(1024).nullable().optional(),
  timestamp: timestamp.optional(),
  message_id: identifier.optional().describe('a repeated message_id is accepted and stored once'),
}).superRefine(checkVisitor);
export const pageviewsBody = z.union([pageviewBody, z.object({ batch: z.array(pageviewBody).min(1).max(MAX_BATCH) })]);

export type PersonInput = z.output<typeof personBody>;
export type EventInput = z.output<typeof eventBody>;
export type PageviewBody = z.output<typeof pageviewBody>;
/** A page view with its visitor (a cookieless one's derived). */
export type PageviewInput = Omit<PageviewBody, 'visitor_id' | 'cookieless'> & { visitor_id: string };

export const personAnswer = z.object({
  person_id: z.string().nullable(),
  suppressed: z.literal(true).optional().describe('an identifier is on the suppression list: nothing was stored'),
});

export const eventResult = z.object({
  event_id: z.string().nullable(),
  person_id: z.string().nullable(),
  duplicate: z.boolean().describe('the message_id was seen before: the event was not stored again'),
  suppressed: z.literal(true).optional().describe('an identifier is on the suppression list: the event was stored nowhere'),
});
export type EventResult = z.infer<typeof eventResult>;

export const eventsAnswer = z.union([eventResult, z.object({
  accepted: z.number().int(),
  suppressed: z.number().int().optional().describe('events stored nowhere: an identifier is on the suppression list (absent when none)'),
  results: z.array(eventResult),
})]);

export const pageviewsAnswer = z.object({
  accepted: z.number().int(),
  suppressed: z.number().int().optional().describe('page views stored nowhere: their visitor is on the suppression list (absent when none)'),
});
