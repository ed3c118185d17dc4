// `npm run build`: dist/ from src/, one JavaScript module per TypeScript module, by esbuild's
// transpiler (no bundle: imports and their file layout stay as they are). Types are checked by
// `npm run typecheck` (tsc), which CI runs; the build does not repeat it (bench/RESULTS.md, "Build").
// The tracker, the console's sources (bundled by the service at its start) and the PostgreSQL
// migrations are copied beside the modules that read them.

import { cpSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const SOURCES = 'src';
const OUT = 'dist';
/** Served or bundled from their sources, not run by Node. */
const COPIED = ['tracker', 'console', join('store', 'postgres', 'migrations')];

const modules = readdirSync(SOURCES, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
  .map((entry) => join(entry.parentPath, entry.name))
  .filter((path) => !path.startsWith(join(SOURCES, 'console') + '/'));

rmSync(OUT, { recursive: true, force: true });
await build({
  entryPoints: modules,
  outdir: OUT,
  outbase: SOURCES,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  tsconfig: 'tsconfig.json',
  logLevel: 'warning',
});
for (const path of COPIED) cpSync(join(SOURCES, path), join(OUT, path), { recursive: true });
