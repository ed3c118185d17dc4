// Criteria error codes as data: the six of the spec, the three of decisions §6, and the two size
// limits of a tree (docs/criteria.md).

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

export interface CriteriaError {
  code: CriteriaErrorCode;
  /** JSON Pointer into the envelope; `""` is the envelope itself. */
  path: string;
  message: string;
}

export function pointer(base: string, key: string | number): string {
  return `${base}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}
