// Which ClickHouse failures are an outage (the server down, frozen, out of disk, refusing more
// queries) rather than a fault of the statement, and the client that reports them so: every
// request's failure passes through `reportingOutages`, the one place they are recognised.

import type { ClickHouseClient } from '@clickhouse/client';
import { asOutage } from '../errors.js';

/** Socket failures Node reports on the connection. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** Kinds ClickHouse raises when it cannot serve, whatever the statement. */
const SERVER_KINDS = new Set([
  'NOT_ENOUGH_SPACE', 'TOO_MANY_SIMULTANEOUS_QUERIES', 'NETWORK_ERROR', 'SOCKET_TIMEOUT', 'ALL_CONNECTION_TRIES_FAILED',
  'NO_FREE_CONNECTION', 'TABLE_IS_READ_ONLY', 'ABORTED',
]);

/** Why `err` is an outage of ClickHouse, in our words; null for any other failure. */
export function clickhouseOutage(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const { code, type } = err as { code?: unknown; type?: unknown };
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return `the connection failed (${code})`;
  if (typeof type === 'string' && SERVER_KINDS.has(type)) return `the server cannot serve (${type})`;
  // @clickhouse/client's request_timeout: no byte from the server for that long.
  if (err.message === 'Timeout error.') return 'no answer within the request timeout';
  if (/^socket hang up/.test(err.message)) return 'the connection was lost';
  return null;
}

const REQUESTS = new Set(['query', 'exec', 'command', 'insert', 'ping']);

/** `client` whose requests fail with DependencyUnavailable when ClickHouse is down, and as before otherwise. */
export function reportingOutages(client: ClickHouseClient): ClickHouseClient {
  return new Proxy(client, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      if (typeof property !== 'string' || !REQUESTS.has(property)) return value.bind(target);
      return (...args: unknown[]) => (value.apply(target, args) as Promise<unknown>).catch((err: unknown) => {
        throw asOutage('clickhouse', err, clickhouseOutage);
      });
    },
  });
}
