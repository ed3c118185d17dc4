// Which PostgreSQL failures are a refusal of a value (the input's fault) rather than a fault of the
// server: SQLSTATE class 22, data exceptions (malformed JSON, a bad cast, a number out of range).

import pg from 'pg';

/** PostgreSQL's reason when `err` refuses a value, in one line without the input it quotes; null for any other failure. */
export function refusedValue(err: unknown): string | null {
  if (!(err instanceof pg.DatabaseError) || !err.code?.startsWith('22')) return null;
  const message = err.message.split('\n', 1)[0]!.split(': "', 1)[0]!;
  const detail = err.detail && !err.detail.includes('"') ? ` (${err.detail.split('\n', 1)[0]})` : '';
  return `${message}${detail}`.slice(0, 300);
}
