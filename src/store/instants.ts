// Instants as every store writes and compares them.

/** A UTC instant as `YYYY-MM-DD hh:mm:ss.sss` (no zone), for `CAST(… AS TIMESTAMP)`. */
export const instantText = (at: Date): string => at.toISOString().replace('T', ' ').replace('Z', '');

/** Stored state at `stored` is not newer than an update made at `created` (equal: the later arrival wins). */
export const isOlder = (stored: unknown, created: Date): boolean => !(stored instanceof Date) || stored.getTime() <= created.getTime();
