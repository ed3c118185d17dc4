// The analyst command line: the audience engine on parquet exports or a database file, no server.
//   audiences <load|validate|estimate|members|explain> … [--json] [--help]
// Every failure is one line on stderr and a non-zero exit: 1 for errors, 2 for usage.

import { type Command, parseCommand } from './args.js';
import { CliError, oneLine, UsageError } from './errors.js';
import { estimate } from './estimate.js';
import { explain } from './explain.js';
import { load } from './load.js';
import { members } from './members.js';
import { validate } from './validate.js';

const COMMANDS: Command[] = [load, validate, estimate, members, explain];

function usage(): string {
  return [
    'usage: audiences <command> [options]   (audiences <command> --help for details)',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(10)} ${c.summary}`),
    '',
    'Every command takes --json for machine-readable output. Data is a directory of parquet exports',
    '(one <table>.parquet per table, columns in docs/cli.md) or a database file made by load --into.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    const command = COMMANDS.find((c) => c.name === rest[0]);
    process.stdout.write(`${command ? command.help : usage()}\n`);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new UsageError(`unknown command "${name}"`);
  const parsed = parseCommand(command, rest);
  if (parsed.help) {
    process.stdout.write(`${command.help}\n`);
    return 0;
  }
  return command.run(parsed.positionals, parsed.values);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`audiences: ${oneLine(err)}\n`);
  process.exitCode = err instanceof CliError ? err.exitCode : 1;
}
