// Criteria error codes as data: the six of the spec, the three of decisions §6, and the two size
// limits of a tree (docs/criteria.md).

import { z } from 'zod';

export const CRITERIA_ERROR_CODES = [
  'invalid_envelope',
  'version_unsupported',
  'unknown_field',
  'invalid_count',
  'unknown_op',
  'unanchored_negation',
  'invalid_node',
  'invalid_window',
  'invalid_value',
  'too_deep',
  'too_many_nodes',
] as const;
export type CriteriaErrorCode = (typeof CRITERIA_ERROR_CODES)[number];

export const criteriaError = z.object({
  code: z.enum(CRITERIA_ERROR_CODES),
  path: z.string().describe('JSON Pointer into the criteria envelope, e.g. /root/children/1/occurrence/count ("" is the envelope itself)'),
  message: z.string(),
});
export type CriteriaError = z.infer<typeof criteriaError>;

/** What a valid tree may still get wrong: it is compiled, and the caller told. */
export const CRITERIA_WARNING_CODES = ['unknown_event'] as const;

export const criteriaWarning = z.object({
  code: z.enum(CRITERIA_WARNING_CODES).describe('unknown_event: no event of this name has been received in the workspace yet (a typo matches no one)'),
  path: criteriaError.shape.path,
  message: z.string(),
});
export type CriteriaWarning = z.infer<typeof criteriaWarning>;

export function pointer(base: string, key: string | number): string {
  return `${base}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}
