// Argument parsing for one command with node:util parseArgs: strict, with --help and --json on
// every command, and unknown options or extra arguments reported as usage errors.

import { parseArgs } from 'node:util';
import { UsageError } from './errors.js';

type OptionSpec = { type: 'string' | 'boolean'; short?: string };
export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  name: string;
  summary: string;
  /** The full `--help` text. */
  help: string;
  options: Record<string, OptionSpec>;
  /** Positional argument names, all required. */
  positionals: string[];
  run(positionals: string[], values: Values): Promise<number>;
}

const COMMON: Record<string, OptionSpec> = { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } };

export function parseCommand(command: Command, argv: string[]): { help: true } | { help: false; positionals: string[]; values: Values } {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON, ...command.options }, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    // parseArgs messages add a hint about `--` after the first sentence.
    throw new UsageError((err as Error).message.split('. ')[0]!.replace(/\.$/, ''), command.name);
  }
  if (parsed.values.help) return { help: true };
  const expected = command.positionals;
  if (parsed.positionals.length < expected.length) {
    throw new UsageError(`missing <${expected[parsed.positionals.length]}>`, command.name);
  }
  if (parsed.positionals.length > expected.length) {
    throw new UsageError(`unexpected argument "${parsed.positionals[expected.length]}"`, command.name);
  }
  return { help: false, positionals: parsed.positionals, values: parsed.values };
}

export function stringOption(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

/** A non-negative integer option (milliseconds), or the fallback. */
export function integerOption(values: Values, name: string, fallback: number, command: string): number {
  const raw = stringOption(values, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer, got "${raw}"`, command);
  return n;
}

/** `--at`: an ISO date or datetime (UTC when no offset), default now. */
export function atOption(values: Values, command: string): Date {
  const raw = stringOption(values, 'at');
  if (raw === undefined) return new Date();
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? `${raw}T00:00:00Z`
    : /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(raw) ? `${raw.replace(' ', 'T')}Z` : raw;
  const at = new Date(iso);
  if (!/^\d{4}-\d{2}-\d{2}/.test(raw) || Number.isNaN(at.getTime())) {
    throw new UsageError(`--at must be an ISO date or datetime such as 2026-11-01T00:00:00Z, got "${raw}"`, command);
  }
  return at;
}
