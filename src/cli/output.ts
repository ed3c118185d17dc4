// Output helpers: human lines or one JSON document on stdout; notes and progress on stderr.

export function print(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A note about how the command ran (not its result): one line on stderr. */
export function warn(line: string): void {
  process.stderr.write(`audiences: ${line}\n`);
}

/** A progress line, shown only when stderr is a terminal (never in pipes or tests). */
export function progress(line: string): void {
  if (process.stderr.isTTY) process.stderr.write(`${line}\n`);
}

export const fmt = (n: number): string => n.toLocaleString('en-US');
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** Criteria faults as `code  path  message` lines, the same triples the HTTP compile answers. */
export function printCriteriaErrors(errors: readonly { code: string; path: string; message: string }[]): void {
  for (const e of errors) print(`${e.code.padEnd(20)} ${(e.path === '' ? '""' : e.path).padEnd(32)} ${e.message}`);
}
