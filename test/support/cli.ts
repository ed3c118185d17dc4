// The command line (src/cli) run in the test's process through main(argv, io), on streams of its own:
// a command costs its work, not a process start. What only a real process shows (exit codes of the
// process, a closed pipe, a terminal, the file lock) runs bin/audiences.js as a child (test/cli.test.ts).

import { Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';

export interface CliResult { code: number; stdout: string; stderr: string }

/** A stream that keeps what is written to it. */
export function captured(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({ write(chunk: Buffer, _encoding, done) { text += chunk.toString(); done(); } });
  return { stream, text: () => text };
}

/** A command's main(argv, io) run in this process on streams of its own, with the process's environment. */
export async function cliOf(run: typeof main, ...args: string[]): Promise<CliResult> {
  return runOn(run, process.env, args);
}

async function runOn(run: typeof main, env: NodeJS.ProcessEnv, args: string[]): Promise<CliResult> {
  const stdout = captured();
  const stderr = captured();
  const code = await run(args, { stdout: stdout.stream, stderr: stderr.stream, env });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** The command line run in this process, on its own streams and `env`. */
export const cliWith = (env: NodeJS.ProcessEnv, ...args: string[]) => runOn(main, env, args);

/** The command line run in this process with the process's environment. */
export const cli = (...args: string[]) => cliWith(process.env, ...args);
