// Which DuckDB failures are a refusal of a value (the input's fault) rather than a fault of the
// server. DuckDB names the kind of each error at the start of its message.

/** Kinds DuckDB raises for a value it cannot take: malformed JSON, a cast, a number out of range. */
const VALUE_ERRORS = ['Conversion Error: ', 'Invalid Input Error: ', 'Out of Range Error: '];

/**
 * DuckDB's reason when `err` refuses a value, in one line without the input it echoes or the SQL
 * it points into (neither belongs in an answer); null for any other failure.
 */
export function refusedValue(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const kind = VALUE_ERRORS.find((prefix) => err.message.startsWith(prefix));
  if (!kind) return null;
  const line = err.message.slice(kind.length).split('\n', 1)[0]!;
  const echo = line.indexOf('  Input: ');
  return (echo === -1 ? line : line.slice(0, echo)).trim().slice(0, 300);
}
