// Argument parsing for one command with node:util parseArgs: strict, with --help and --json on
// every command; unknown options, missing values and wrong argument counts are usage errors
// (exit 2, one line naming the option, and a pointer to the command's --help).

import { parseArgs } from 'node:util';
import { UsageError } from './errors.js';
import type { Output } from './output.js';

type OptionSpec = { type: 'string' | 'boolean'; short?: string };
export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  /** One word, or a group and a word (`workspace create`). */
  name: string;
  summary: string;
  /** The full `--help` text. */
  help: string;
  options: Record<string, OptionSpec>;
  /** Positional argument names, all required. */
  positionals: string[];
  run(positionals: string[], values: Values, out: Output): Promise<number>;
}

const COMMON: Record<string, OptionSpec> = { help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } };

/**
 * What is wrong with a command line that strict parseArgs refused, in our words: the same
 * arguments read leniently into tokens, and the first token that breaks the option table.
 */
function refusal(argv: string[], options: Record<string, OptionSpec>): string | undefined {
  const { tokens } = parseArgs({ args: argv, options, allowPositionals: true, strict: false, tokens: true });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!spec) return `unknown option ${token.rawName}`;
    if (spec.type === 'boolean' && token.value !== undefined) return `${token.rawName} takes no value`;
    // A lenient parse takes the next argument as the value even when it looks like an option.
    if (spec.type === 'string' && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))) {
      return `${token.rawName} needs a value`;
    }
  }
  return undefined;
}

export function parseCommand(command: Command, argv: string[]): { help: true } | { help: false; positionals: string[]; values: Values } {
  const options = { ...COMMON, ...command.options };
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    const fallback = (err as Error).message.split('\n')[0]!.split('. ')[0]!.replace(/\.$/, '');
    throw new UsageError(refusal(argv, options) ?? fallback, command.name);
  }
  if (parsed.values.help) return { help: true };
  const empty = Object.entries(parsed.values).find(([, v]) => v === '');
  if (empty) throw new UsageError(`--${empty[0]} needs a value`, command.name);
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
