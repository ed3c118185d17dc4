// Which PostgreSQL failures are an outage (the server down, frozen, starting, out of disk or
// connections) rather than a fault of the statement: answered 503, never 500.

/** SQLSTATE classes of an outage: connection exceptions, insufficient resources, system errors. */
const OUTAGE_CLASSES = ['08', '53', '58'];
/** admin_shutdown, crash_shutdown, cannot_connect_now; query_canceled is our statement_timeout. */
const OUTAGE_CODES = new Set(['57P01', '57P02', '57P03', '57014']);
/** Socket failures Node reports on the connection. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** What pg says when a bound of ours ran out or the connection went away. */
const DRIVER_MESSAGES: [RegExp, string][] = [
  [/^timeout exceeded when trying to connect|connection timeout/i, 'no connection within the connect timeout'],
  [/^Query read timeout/, 'no answer within the statement timeout'],
  [/^Connection terminated|not queryable|Connection ended/i, 'the connection was lost'],
];

/** Why `err` is an outage of PostgreSQL, in our words; null for any other failure. */
export function postgresOutage(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === '57014') return 'a statement ran past the statement timeout';
    if (OUTAGE_CODES.has(code)) return 'the server is shutting down or starting';
    if (code.length === 5 && OUTAGE_CLASSES.includes(code.slice(0, 2))) return `the server cannot serve (SQLSTATE ${code})`;
    if (SOCKET_CODES.has(code)) return `the connection failed (${code})`;
  }
  return DRIVER_MESSAGES.find(([pattern]) => pattern.test(err.message))?.[1] ?? null;
}
