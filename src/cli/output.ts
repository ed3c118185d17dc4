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

const BAR_WIDTH = 24;

/**
 * A progress bar redrawn in place (carriage return, then erase to the end of the line) on a
 * terminal; nothing otherwise. The next `progress` line or `endBar` leaves it.
 */
export function drawBar(label: string, done: number, total: number, ms: number, note: string): void {
  if (!process.stderr.isTTY) return;
  const ratio = total > 0 ? Math.min(done / total, 1) : 1;
  const filled = Math.round(ratio * BAR_WIDTH);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}]`;
  const line = `${label.padEnd(15)} ${bar} ${`${Math.floor(ratio * 100)}%`.padStart(4)}  ${fmt(done)} / ${fmt(total)} rows  ${seconds(ms)}  ${note}`;
  process.stderr.write(`\r${line.slice(0, (process.stderr.columns || 120) - 1)}\x1b[K`);
}

/** Erases the bar, so the next line starts clean. */
export function endBar(): void {
  if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
}

export const fmt = (n: number): string => n.toLocaleString('en-US');
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

/** Criteria faults as `code  path  message` lines, the same triples the HTTP compile answers. */
export function printCriteriaErrors(errors: readonly { code: string; path: string; message: string }[]): void {
  for (const e of errors) print(`${e.code.padEnd(20)} ${(e.path === '' ? '""' : e.path).padEnd(32)} ${e.message}`);
}
