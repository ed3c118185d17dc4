// The configuration read from the environment: the analytical store's engine.

import { expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

it('reads ANALYTICS_STORE: duckdb unless set, clickhouse when asked', () => {
  expect(loadConfig({}).analyticsStore).toBe('duckdb');
  expect(loadConfig({ ANALYTICS_STORE: '' }).analyticsStore).toBe('duckdb');
  expect(loadConfig({ ANALYTICS_STORE: 'clickhouse' }).analyticsStore).toBe('clickhouse');
});

it('refuses any other ANALYTICS_STORE, naming the variable and the engines', () => {
  expect(() => loadConfig({ ANALYTICS_STORE: 'postgres' })).toThrow('ANALYTICS_STORE must be one of duckdb, clickhouse, got "postgres"');
});
