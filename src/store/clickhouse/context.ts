// What every part of the ClickHouse analytical store works with.

import type { ClickHouseClient } from '@clickhouse/client';
import type { ControlStore } from '../control/store.js';

export interface ClickHouseContext {
  client: ClickHouseClient;
  /** Database of the analytical tables (an identifier from configuration, quoted where printed). */
  database: string;
  cluster?: string;
  /** The control store: persons, the visitors' registry, audience definitions, deliveries. */
  control: ControlStore;
  /** The bound of a KILL QUERY on a server (CLICKHOUSE_KILL_TIMEOUT_MS); unset on the embedded chDB, which is never frozen apart from us. */
  killTimeoutMs?: number;
}
