#!/usr/bin/env node
// The `audiences` command (package.json "bin"): runs src/cli/main.ts through tsx's ESM loader.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
