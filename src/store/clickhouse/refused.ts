// Which ClickHouse failures are a refusal of a value (the input's fault) rather than a fault of the
// server. ClickHouse names the kind of each error (`type`, as @clickhouse/client and chDB's
// connection report it).

/** Kinds ClickHouse raises for a value it cannot take: unparsable text, a conversion, a range. */
const VALUE_ERRORS = new Set([
  'CANNOT_PARSE_TEXT', 'CANNOT_PARSE_ESCAPE_SEQUENCE', 'CANNOT_PARSE_QUOTED_STRING', 'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
  'CANNOT_PARSE_DATE', 'CANNOT_PARSE_DATETIME', 'CANNOT_PARSE_NUMBER', 'CANNOT_PARSE_BOOL', 'CANNOT_READ_ARRAY_FROM_TEXT',
  'CANNOT_CONVERT_TYPE', 'INCORRECT_DATA', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE', 'DECIMAL_OVERFLOW', 'TOO_LARGE_STRING_SIZE',
]);

/**
 * ClickHouse's reason when `err` refuses a value, in one line without the input it echoes (after
 * "here:") or its pointers into the statement; null for any other failure.
 */
export function refusedValue(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const type = (err as { type?: unknown }).type;
  if (typeof type !== 'string' || !VALUE_ERRORS.has(type)) return null;
  const line = err.message.split('\n', 1)[0]!;
  const cut = [' here:', ': (while', '. You can', ': (at row'].map((marker) => line.indexOf(marker)).filter((i) => i !== -1);
  return `${line.slice(0, cut.length > 0 ? Math.min(...cut) : line.length).trim().slice(0, 300)} (${type})`;
}
