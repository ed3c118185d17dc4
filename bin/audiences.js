#!/usr/bin/env node
// The `audiences` command (package.json "bin"): runs src/cli/main.ts through tsx's ESM loader, on
// this process's streams and environment.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');

// A reader that stops early (`| head`) closes the pipe: stop quietly, as other command-line tools do.
process.stdout.on('error', (err) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
