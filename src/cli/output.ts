// Output helpers: human lines or one JSON document on stdout; notes and progress on stderr. The
// streams and the environment are the run's (CliIo): the process's from bin/audiences.js, a test's
// buffers when a test runs the command line in its own process.

/** A stream the command line writes text to; `isTTY` says whether it is a terminal. */
export type TextStream = NodeJS.WritableStream & { isTTY?: boolean };

/** Where one run of the command line writes, and the environment it reads its configuration from. */
export interface CliIo {
  stdout: TextStream;
  stderr: TextStream;
  env: NodeJS.ProcessEnv;
}

export class Output {
  constructor(readonly io: CliIo) {}

  get env(): NodeJS.ProcessEnv {
    return this.io.env;
  }

  /** Whether stderr is a terminal: only then is progress drawn. */
  get terminal(): boolean {
    return this.io.stderr.isTTY === true;
  }

  print(line = ''): void {
    this.io.stdout.write(`${line}\n`);
  }

  json(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A note about how the command ran (not its result): one line on stderr. */
  warn(line: string): void {
    this.io.stderr.write(`audiences: ${line}\n`);
  }

  /** A progress line, shown only when stderr is a terminal (never in pipes or tests). */
  progress(line: string): void {
    if (this.terminal) this.io.stderr.write(`${line}\n`);
  }

  /** Criteria faults as `code  path  message` lines, the same triples the HTTP compile answers. */
  criteriaErrors(errors: readonly { code: string; path: string; message: string }[]): void {
    for (const e of errors) this.print(`${e.code.padEnd(20)} ${(e.path === '' ? '""' : e.path).padEnd(32)} ${e.message}`);
  }
}

export const fmt = (n: number): string => n.toLocaleString('en-US');
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
