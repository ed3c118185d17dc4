// Property definitions on the DuckDB database (store/control/properties.ts), for the DuckDB
// store's own statements and the benchmarks that open the file directly.

import type { DuckDBConnection } from '@duckdb/node-api';
import type { PropertyCatalog } from '../../criteria/index.js';
import * as definitions from '../control/properties.js';
import { controlSql, DuckDBControl } from './control.js';
import type { Store } from './db.js';

export const propertyCatalog = (store: Store, ws: string): Promise<PropertyCatalog> => definitions.propertyCatalog(new DuckDBControl(store), ws);

export const recordPropertyPaths = (tx: DuckDBConnection, ws: string, paths: { event_name: string; path: string }[]): Promise<void> =>
  definitions.recordPropertyPaths(controlSql(tx), ws, paths);

export const recordEventNames = (tx: DuckDBConnection, ws: string, names: string[]): Promise<void> =>
  definitions.recordEventNames(controlSql(tx), ws, names);

export const recordTraitPaths = (tx: DuckDBConnection, ws: string, paths: string[]): Promise<void> =>
  definitions.recordTraitPaths(controlSql(tx), ws, paths);
