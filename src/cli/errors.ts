// CLI failures: a one-line message and an exit code, never a stack trace.

/** A failure the user can act on: printed as `audiences: <message>`, exit code 1. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

/** A wrong command line: exit code 2 and a pointer to `--help`. */
export class UsageError extends CliError {
  constructor(message: string, command?: string) {
    super(`${message} (see: audiences ${command ? `${command} ` : ''}--help)`, 2);
  }
}

/** The first line of any error's message, without DuckDB's multi-line context. */
export function oneLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split('\n').find((l) => l.trim() !== '') ?? 'unknown error').trim();
}
