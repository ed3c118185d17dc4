// The analyst command line: the audience engine on parquet exports or a database file, no server;
// and the service's workspaces and keys, in its database while it is stopped.
//   audiences <load|validate|estimate|members|explain|report> … [--json] [--help]
//   audiences workspace <create|list|mode> …   audiences keys rotate …   audiences migrate
// Every failure is one line on stderr and a non-zero exit: 1 for errors, 2 for usage.

import { type Command, parseCommand } from './args.js';
import { CliError, oneLine, UsageError } from './errors.js';
import { estimate } from './estimate.js';
import { explain } from './explain.js';
import { keysRotate } from './keys.js';
import { load } from './load.js';
import { members } from './members.js';
import { migrateCommand } from './migrate.js';
import { type CliIo, Output } from './output.js';
import { report } from './report.js';
import { validate } from './validate.js';
import { workspaceCreate, workspaceList, workspaceMode } from './workspace.js';
import { workspaceRetention } from './retention.js';
import { privacyDelete, privacySuppress, privacyUnsuppress } from './privacy.js';
import { stripeBackfill } from './stripe-backfill.js';
import { ratesLoad } from './rates.js';

const COMMANDS: Command[] = [load, validate, estimate, members, explain, report, migrateCommand, workspaceCreate, workspaceList, workspaceMode, workspaceRetention, keysRotate, privacyDelete, privacySuppress, privacyUnsuppress, stripeBackfill, ratesLoad];
const WIDTH = Math.max(...COMMANDS.map((c) => c.name.length));

const commandLine = (c: Command) => `  ${c.name.padEnd(WIDTH)}  ${c.summary}`;

function usage(): string {
  return [
    'usage: audiences <command> [options]   (audiences <command> --help for details)',
    '',
    'commands:',
    ...COMMANDS.map(commandLine),
    '',
    'Every command takes --json for machine-readable output. Data is a directory of parquet exports',
    '(one <table>.parquet per table, columns in docs/cli.md) or a database file made by load --into.',
    'workspace and keys work on the service\'s database (--data, default $DATABASE_PATH) while it is stopped.',
  ].join('\n');
}

/** The commands of a group (`workspace`, `keys`); empty when `group` is none. */
const inGroup = (group: string) => COMMANDS.filter((c) => c.name.startsWith(`${group} `));

function groupUsage(group: string): string {
  return [`usage: audiences ${group} <${inGroup(group).map((c) => c.name.split(' ')[1]).join('|')}> [options]`, '', ...inGroup(group).map(commandLine)].join('\n');
}

/** The help asked for by `audiences help [command…]` or `audiences --help`. */
function helpText(words: string[]): string {
  const name = words.join(' ');
  const command = COMMANDS.find((c) => c.name === name);
  if (command) return command.help;
  return inGroup(name).length > 0 ? groupUsage(name) : usage();
}

/** The command line without its error handling: throws what a command throws. */
async function dispatch(argv: string[], out: Output): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    out.print(helpText(rest.filter((w) => !w.startsWith('-'))));
    return name === undefined ? 2 : 0;
  }
  let command = COMMANDS.find((c) => c.name === name);
  let args = rest;
  if (!command && inGroup(name).length > 0) {
    const [sub, ...subRest] = rest;
    if (sub === undefined || sub === '--help' || sub === '-h') {
      out.print(groupUsage(name));
      return sub === undefined ? 2 : 0;
    }
    command = COMMANDS.find((c) => c.name === `${name} ${sub}`);
    if (!command) throw new UsageError(`unknown ${name} command "${sub}"`, name);
    args = subRest;
  }
  if (!command) throw new UsageError(`unknown command "${name}"`);
  const parsed = parseCommand(command, args);
  if (parsed.help) {
    out.print(command.help);
    return 0;
  }
  return command.run(parsed.positionals, parsed.values, out);
}

/**
 * Runs one command line on `io` and gives its exit code; a failure is one line on io.stderr.
 * bin/audiences.js runs it on the process's streams and environment, the tests on their own.
 */
export async function main(argv: string[], io: CliIo): Promise<number> {
  const out = new Output(io);
  try {
    return await dispatch(argv, out);
  } catch (err) {
    io.stderr.write(`audiences: ${oneLine(err)}\n`);
    return err instanceof CliError ? err.exitCode : 1;
  }
}
