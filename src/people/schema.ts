// Request and answer shapes of the merge endpoints (decisions §12), one zod schema each: they
// validate, type the handlers and document the API.

import { z } from 'zod';

const identifierValue = z.string().min(1).max(256);

export const personRef = z.union([
  z.object({ person_id: identifierValue }).strict(),
  z.object({ external_id: z.union([identifierValue, z.number().int().refine(Number.isSafeInteger, 'must be a safe integer')]).transform(String) }).strict(),
  z.object({ email: z.string().trim().min(1).max(256).transform((v) => v.toLowerCase()) }).strict(),
]).describe('exactly one of person_id, external_id or email; an identifier of a person merged away names the person it was merged into');

export const mergeBody = z.object({
  from: personRef.describe('the person merged away: its identifiers name `into` from then on'),
  into: personRef.describe('the person that stays'),
  force: z.boolean().optional().describe('needed when both persons have an external_id (else 409 merge_conflict)'),
});
export type MergeBody = z.output<typeof mergeBody>;

export const mergeAnswer = z.object({
  person_id: z.string().describe('the person that stays (into\'s)'),
  merge_id: z.string().nullable().describe('the merge recorded; null when from and into were already one person'),
  moved: z.object({
    visitors: z.number().int(),
    customers: z.number().int().describe('payment customers that were from\'s, or its visitors\''),
    events: z.number().int().describe('events recorded for from itself (those of its visitors follow the visitors)'),
  }),
});
export type MergeAnswer = z.infer<typeof mergeAnswer>;

export const mergeRecord = z.object({
  merge_id: z.string(),
  from_person_id: z.string(),
  into_person_id: z.string().describe('the person merged into then; a later merge may have merged it further'),
  forced: z.boolean(),
  visitors: z.number().int(),
  customers: z.number().int(),
  created_at: z.string().describe('ISO 8601'),
  state: z.enum(['pending', 'done']).describe('pending while the merge is still moving from\'s events (a merge a stopped process left is finished in the background)'),
});

export const mergeList = z.object({ person_id: z.string(), data: z.array(mergeRecord) });

export const mergePreview = z.object({
  from: z.object({ person_id: z.string(), external_id: z.string().nullable(), email: z.string().nullable() }),
  into: z.object({ person_id: z.string(), external_id: z.string().nullable(), email: z.string().nullable() }),
  needs_force: z.boolean().describe('both have an external_id'),
  moves: z.object({ visitors: z.number().int(), customers: z.number().int() }),
});
export type MergePreview = z.infer<typeof mergePreview>;
