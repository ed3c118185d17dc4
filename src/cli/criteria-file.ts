// Reading a criteria file: a missing file and bad JSON are one-line errors.

import { readFileSync, statSync } from 'node:fs';
import { CliError } from './errors.js';

export function readCriteriaFile(path: string): unknown {
  let text: string;
  try {
    if (statSync(path).isDirectory()) throw new CliError(`${path}: is a directory, expected a criteria JSON file`);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (err instanceof CliError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(code === 'ENOENT' ? `${path}: no such file` : `${path}: cannot read (${code ?? (err as Error).message})`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new CliError(`${path}: not valid JSON (${(err as Error).message})`);
  }
}
