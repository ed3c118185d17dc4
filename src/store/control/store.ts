// The control store: the mutable state read and written in transactions (workspaces, keys, persons
// and the visitor registry, customers' link states, audience definitions, deliveries). DuckDB for
// now, in the database the DuckDB analytical store uses too; the PostgreSQL issue gives it an
// interface of its own and an engine folder beside store/duckdb/.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { Store } from '../duckdb/db.js';

export type ControlStore = Store;

/** The connection of a control transaction (ControlStore.transaction). */
export type ControlTx = DuckDBConnection;
