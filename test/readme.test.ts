// The README's commands, pasted as a new user would: every ```sh block runs in order with bash in a
// scratch copy of the project (symlinks, so `data/` lands there), against a fresh service on a free
// port. The one rewrite is the port in http://127.0.0.1:3000; the keys come as $SK, $PK and
// $WHSEC, as the README's `export` line has the reader set them. A standalone `# …` line under a
// command is its expected output, where `…` stands for anything; JSON answers must contain what
// is shown. Lines that install, test or benchmark are not run, but what they name must exist.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/ports.js';

const ROOT = resolve(import.meta.dirname, '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const MARKER = '@@README-OUTPUT@@';
/** Printed by a DEBUG trap before each command of the block's own shell: an answer is what its command printed. */
const COMMAND = '@@README-COMMAND@@';
/** Not run: they install, start or test the project, or run for minutes. */
const NOT_RUN = [/^npm install\b/, /^npm test\b/, /^npm run bench\b/, /^npx tsx bench\//];
/**
 * What npx runs for the project's own commands (package.json's "bin"), without npm's start-up
 * second: the README's blocks run about a dozen `npx audiences` lines. Anything else goes to npx.
 */
const NPX = `npx() { case "$1" in ${Object.entries(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).bin as Record<string, string>)
  .map(([name, file]) => `${name}) shift; node ${file} "$@";;`).join(' ')} *) command npx "$@";; esac; }`;
/** Set by the reader from the keys the first start printed; the test sets them itself. */
const KEYS_LINE = /^export SK=/;

interface Block { section: string; line: number; text: string }

function shellBlocks(markdown: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.startsWith('## ')) section = lines[i]!.slice(3);
    if (lines[i] !== '```sh') continue;
    const start = i + 1;
    while (lines[++i] !== '```') if (i >= lines.length) throw new Error(`unclosed block at line ${start}`);
    blocks.push({ section, line: start, text: lines.slice(start, i).join('\n') });
  }
  return blocks;
}

/** The block as a script printing a marker where each expected output was shown, and those outputs. */
function scripted(block: Block): { script: string; expected: string[]; skipped: string[] } {
  const expected: string[] = [];
  const skipped: string[] = [];
  const out: string[] = [];
  let shown: string[] | null = null;
  for (const line of block.text.split('\n')) {
    if (line.startsWith('# ')) {
      if (!shown) expected.push('');
      shown = [...(shown ?? []), line.slice(2)];
      expected[expected.length - 1] = shown.join('\n');
      continue;
    }
    if (shown) out.push(`printf '\\n${MARKER}\\n'`);
    shown = null;
    if (KEYS_LINE.test(line)) continue;
    if (NOT_RUN.some((re) => re.test(line))) {
      skipped.push(line);
      continue;
    }
    out.push(line);
  }
  if (shown) out.push(`printf '\\n${MARKER}\\n'`);
  return { script: [NPX, `trap 'printf "\\n${COMMAND}\\n"' DEBUG`, ...out].join('\n'), expected, skipped };
}

const wildcard = (shown: string) => new RegExp(`^${shown.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');

/** `actual` contains what `shown` shows: objects by their shown keys, strings with `…` wildcards. */
function contains(actual: unknown, shown: unknown, path = ''): string | null {
  if (typeof shown === 'string') return typeof actual === 'string' && wildcard(shown).test(actual) ? null : `${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(shown)}`;
  if (Array.isArray(shown)) {
    if (!Array.isArray(actual) || actual.length !== shown.length) return `${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(shown)}`;
    for (let i = 0; i < shown.length; i++) {
      const fault = contains(actual[i], shown[i], `${path}/${i}`);
      if (fault) return fault;
    }
    return null;
  }
  if (typeof shown === 'object' && shown !== null) {
    if (typeof actual !== 'object' || actual === null) return `${path}: ${JSON.stringify(actual)} is not an object`;
    for (const [key, value] of Object.entries(shown)) {
      const fault = contains((actual as Record<string, unknown>)[key], value, `${path}/${key}`);
      if (fault) return fault;
    }
    return null;
  }
  return Object.is(actual, shown) ? null : `${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(shown)}`;
}

function compare(actual: string, shown: string): string | null {
  const got = actual.trim();
  if (/^[[{]/.test(shown)) {
    try {
      return contains(JSON.parse(got), JSON.parse(shown));
    } catch {
      return `not JSON: ${got}`;
    }
  }
  const gotLines = got.split('\n').map((l) => l.trimEnd());
  const shownLines = shown.split('\n');
  if (gotLines.length !== shownLines.length) return `${gotLines.length} lines, not ${shownLines.length}:\n${got}`;
  const bad = shownLines.findIndex((l, i) => !wildcard(l).test(gotLines[i]!));
  return bad === -1 ? null : `line ${bad + 1}: ${gotLines[bad]} is not ${shownLines[bad]}`;
}


describe('README', () => {
  const blocks = shellBlocks(README);
  let sandbox: string;
  let service: ChildProcess | null = null;
  let port: number;
  const env: Record<string, string> = {};

  beforeAll(async () => {
    sandbox = mkdtempSync(join(tmpdir(), 'readme-'));
    for (const entry of ['package.json', 'node_modules', 'src', 'bin', 'fixtures', 'examples', 'tsconfig.json', 'docs']) {
      if (existsSync(join(ROOT, entry))) symlinkSync(join(ROOT, entry), join(sandbox, entry));
    }
    mkdirSync(join(sandbox, 'data'));
    port = await freePort();
    let output = '';
    service = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: sandbox, env: { ...process.env, PORT: String(port), SCHEDULER_INTERVAL_MS: '3600000' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout!.on('data', (chunk) => { output += chunk; });
    service.stderr!.on('data', (chunk) => { output += chunk; });
    for (let i = 0; i < 300; i++) {
      if (await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)) break;
      if (service.exitCode !== null) throw new Error(`the service exited:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const key = (label: string) => new RegExp(`${label}:\\s+(\\S+)`).exec(output)?.[1] ?? '';
    Object.assign(env, { SK: key('secret key'), PK: key('publishable key'), WHSEC: key('stripe webhook secret') });
    expect(env.SK).toMatch(/^sk_/);
  });

  afterAll(async () => {
    await stopService();
    rmSync(sandbox, { recursive: true, force: true });
  });

  async function stopService(): Promise<void> {
    if (!service || service.exitCode !== null) return;
    const exited = new Promise((r) => service!.once('exit', r));
    service.kill('SIGTERM');
    await exited;
  }

  it('has shell blocks to run', () => {
    expect(blocks.length).toBeGreaterThan(5);
    expect(blocks.some((b) => b.text.includes('curl'))).toBe(true);
  });

  for (const block of blocks) {
    it(`runs the block at line ${block.line} (${block.section}) and gives the answers shown`, async () => {
      // The service's database is one DuckDB file, which the command line opens only when the service is stopped.
      if (!block.section.startsWith('Start')) await stopService();
      const { script, expected, skipped } = scripted(block);
      for (const line of skipped) {
        const script = /^npm run (\S+)/.exec(line)?.[1];
        if (script) expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts).toHaveProperty(script);
        const file = /^npx tsx (\S+)/.exec(line)?.[1];
        if (file) expect(existsSync(join(ROOT, file)), file).toBe(true);
      }
      const run = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', script.replaceAll('http://127.0.0.1:3000', `http://127.0.0.1:${port}`)], {
        cwd: sandbox, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 240_000,
      });
      expect(run.status, `exit ${run.status}\n${run.stderr}\n${run.stdout}`).toBe(0);
      const outputs = run.stdout.split(`\n${MARKER}\n`);
      expect(outputs.length - 1).toBe(expected.length);
      expected.forEach((shown, i) => {
        // The segment ends with the trap's line before the marker's printf; the piece before it is the command's output.
        const pieces = outputs[i]!.split(`\n${COMMAND}\n`);
        expect(compare(pieces[pieces.length - 2] ?? '', shown), `answer ${i + 1} of the block`).toBeNull();
      });
    }, 300_000);
  }

  it('shows JSON bodies that parse', () => {
    for (const [, body] of README.matchAll(/```json\n([\s\S]*?)```/g)) expect(() => JSON.parse(body!)).not.toThrow();
  });
});
