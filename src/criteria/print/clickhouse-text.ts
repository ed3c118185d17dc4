// How ClickHouse statements spell names and configured text: shared by the printer and by the
// store's schema (which creates the links dictionary the printer reads).

/** An identifier (a database, a table, a cluster) as ClickHouse quotes it. */
export const quote = (identifier: string) => `\`${identifier.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;

/** A string literal of configured text (a query, credentials, a dictionary's name). */
export const literal = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The visitor → person links dictionary (store/clickhouse/schema.ts creates it). */
export const VISITOR_LINKS = 'visitor_links';
