// The configuration read from the environment: the analytical store's engine, and the control
// store's (DATABASE_URL) with the layouts refused.

import { expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { Store, threadsOf } from '../src/store/duckdb/db.js';
import { openStores, StoreUnavailable } from '../src/store/open.js';

it('reads ANALYTICS_STORE: duckdb unless set, clickhouse when asked', () => {
  expect(loadConfig({}).analyticsStore).toBe('duckdb');
  expect(loadConfig({ ANALYTICS_STORE: '' }).analyticsStore).toBe('duckdb');
  expect(loadConfig({ ANALYTICS_STORE: 'clickhouse' }).analyticsStore).toBe('clickhouse');
});

it('refuses any other ANALYTICS_STORE, naming the variable and the engines', () => {
  expect(() => loadConfig({ ANALYTICS_STORE: 'postgres' })).toThrow('ANALYTICS_STORE must be one of duckdb, clickhouse, got "postgres"');
});

it('reads DATABASE_URL as the PostgreSQL control store, refusing anything but a postgres:// URL without echoing it', () => {
  expect(loadConfig({}).databaseUrl).toBeUndefined();
  expect(loadConfig({ DATABASE_URL: 'postgresql://u:p@db:5432/audiences' }).databaseUrl).toBe('postgresql://u:p@db:5432/audiences');
  expect(() => loadConfig({ DATABASE_URL: 'mysql://u:secret@db/x' })).toThrow(/^DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL$/);
});

it('refuses PostgreSQL control with DuckDB analytics at open, in one line, before connecting', async () => {
  const opened = openStores({ analyticsStore: 'duckdb', databasePath: ':memory:', databaseUrl: 'postgres://nobody@127.0.0.1:1/none' });
  await expect(opened).rejects.toThrow(StoreUnavailable);
  await expect(opened).rejects.toThrow(/^DATABASE_URL \(PostgreSQL control state, shared by API nodes\) needs ANALYTICS_STORE=clickhouse: [^\n]+$/);
});

it('reads the ad platforms\' base URLs without a trailing slash and their versions, refusing a version that is not one', () => {
  expect(loadConfig({}).platforms).toEqual({});
  expect(loadConfig({ META_BASE_URL: 'http://127.0.0.1:9/meta/', META_API_VERSION: 'v27.0', GOOGLE_ADS_API_VERSION: 'v25' }).platforms)
    .toEqual({ metaBaseUrl: 'http://127.0.0.1:9/meta', metaApiVersion: 'v27.0', googleAdsApiVersion: 'v25' });
  expect(() => loadConfig({ GOOGLE_ADS_API_VERSION: '25' })).toThrow('GOOGLE_ADS_API_VERSION must look like v25 or v27.0, got "25"');
  expect(() => loadConfig({ GOOGLE_OAUTH_TOKEN_URL: 'oauth2.googleapis.com/token' })).toThrow('GOOGLE_OAUTH_TOKEN_URL must be an http(s) URL');
});

it('reads TRUST_PROXY: off unless set; true, a hop count, or proxy addresses and CIDR ranges; refuses anything else naming it', () => {
  expect(loadConfig({}).trustProxy).toBe(false);
  expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
  expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
  expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
  expect(loadConfig({ TRUST_PROXY: '10.0.0.1, 10.1.0.0/16,::1,fd00::/8,loopback' }).trustProxy).toEqual(['10.0.0.1', '10.1.0.0/16', '::1', 'fd00::/8', 'loopback']);
  for (const wrong of ['yes', '10.0.0.0/33', '10.0.0', 'fd00::/129', '10.0.0.1,']) {
    expect(() => loadConfig({ TRUST_PROXY: wrong })).toThrow(/^TRUST_PROXY must be true, false, a hop count, or comma-separated proxy addresses and CIDR ranges, got "/);
  }
});

it('reads DUCKDB_THREADS as the DuckDB worker threads, refusing anything but a whole number of 1 or more', async () => {
  expect(threadsOf({})).toBeUndefined();
  expect(threadsOf({ DUCKDB_THREADS: '' })).toBeUndefined();
  expect(threadsOf({ DUCKDB_THREADS: '3' })).toBe(3);
  for (const bad of ['0', '-1', '1.5', 'two']) expect(() => threadsOf({ DUCKDB_THREADS: bad })).toThrow(`DUCKDB_THREADS must be a whole number of 1 or more, got "${bad}"`);
  const store = await Store.open(':memory:', { threads: 3 });
  try {
    expect((await store.query("SELECT current_setting('threads') AS threads"))[0]!.threads).toBe(3n);
  } finally {
    await store.close();
  }
});
