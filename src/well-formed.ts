// Well-formed strings. A lone UTF-16 surrogate (JSON reaches one only through an escape such as
// `\ud800`) becomes U+FFFD, as DuckDB does with a plain parameter; left alone, DuckDB's JSON
// reader rejects the whole document it sits in.

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

interface WellFormedString { isWellFormed(): boolean; toWellFormed(): string }
/** The string with each lone surrogate replaced by U+FFFD. */
export const wellFormedString = (s: string): string => ((s as unknown as WellFormedString).isWellFormed() ? s : (s as unknown as WellFormedString).toWellFormed());

/**
 * A copy of a JSON value with every string and key well-formed. The walk keeps its own stack: a
 * request body may nest hundreds of thousands of levels deep.
 */
export function wellFormed(value: unknown): unknown {
  const leaf = (v: unknown) => (typeof v === 'string' ? wellFormedString(v) : v);
  const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null;
  if (!isContainer(value)) return leaf(value);
  const copyOf = (v: object): Record<string, unknown> | unknown[] => (Array.isArray(v) ? [] : {});
  const root = copyOf(value);
  const stack: [object, Record<string, unknown> | unknown[]][] = [[value, root]];
  while (stack.length > 0) {
    const [source, target] = stack.pop()!;
    for (const [key, inner] of Object.entries(source)) {
      const copy = isContainer(inner) ? copyOf(inner) : leaf(inner);
      if (Array.isArray(target)) target[Number(key)] = copy;
      else Object.defineProperty(target, wellFormedString(key), { value: copy, enumerable: true, writable: true, configurable: true });
      if (isContainer(inner)) stack.push([inner, copy as Record<string, unknown> | unknown[]]);
    }
  }
  return root;
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
