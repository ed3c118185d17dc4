// Well-formed strings. A lone UTF-16 surrogate (JSON reaches one only through an escape such as
// `\ud800`) becomes U+FFFD, as DuckDB does with a plain parameter; left alone, DuckDB's JSON
// reader rejects the whole document it sits in.

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

interface WellFormedString { isWellFormed(): boolean; toWellFormed(): string }
const fix = (s: string): string => ((s as unknown as WellFormedString).isWellFormed() ? s : (s as unknown as WellFormedString).toWellFormed());

/** A copy of a JSON value with every string and key well-formed. */
export function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return fix(value);
  if (Array.isArray(value)) return value.map(wellFormed);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) out[fix(key)] = wellFormed(inner);
  return out;
}

/** `value` parsed from (or serialized to) `json`, well-formed: walked only when `json` has a surrogate escape. */
export function wellFormedIn<T>(json: string, value: T): T {
  return SURROGATE_ESCAPE.test(json) ? wellFormed(value) as T : value;
}

/** JSON text of `value` with every string well-formed (DuckDB's JSON reader takes it whole). */
export function stringifyWellFormed(value: unknown): string {
  const json = JSON.stringify(value);
  const fixed = wellFormedIn(json, value);
  return fixed === value ? json : JSON.stringify(fixed);
}
