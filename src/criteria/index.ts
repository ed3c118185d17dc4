// The criteria compiler, pure: schema → validate → plan → SQL.
export * from './attribution.js';
export * from './errors.js';
export * from './plan.js';
export * from './report.js';
export * from './schema.js';
export * from './sql.js';
export * from './validate.js';
export * from './lift.js';
export * from './splits.js';
