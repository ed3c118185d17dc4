// The browser for the browser tests: a system Chromium when there is one, else the Chromium that
// ships through the npm registry (@sparticuz/chromium, a devDependency). Never a silent skip: no
// browser is a failure whose one line names the command that fixes it.

import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { type Browser, chromium, type Page } from 'playwright-core';

/** Chromium stays off the network, which is closed here. Playwright adds a fresh user data dir. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const FIX = 'run `npm install` (it brings @sparticuz/chromium), or `apt-get install -y chromium`, or set CHROMIUM_PATH';

export class NoBrowser extends Error {
  constructor(reason: string) {
    super(`no Chromium for the browser tests: ${reason}; ${FIX}`);
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Where the registry's Chromium is unpacked for the test runs: node_modules/.cache, kept from run to
 * run (a temporary directory is emptied by the system, and unpacking takes seconds each time).
 */
export const CHROMIUM_CACHE = join(import.meta.dirname, '..', '..', 'node_modules', '.cache');

/** CHROMIUM_PATH, else `chromium` on PATH or /usr/bin/chromium, else the registry's, unpacked under `cacheDir`. */
export async function findChromium(env: NodeJS.ProcessEnv = process.env, cacheDir = CHROMIUM_CACHE): Promise<string> {
  if (env.CHROMIUM_PATH) {
    if (executable(env.CHROMIUM_PATH)) return env.CHROMIUM_PATH;
    throw new NoBrowser(`CHROMIUM_PATH=${env.CHROMIUM_PATH} is not an executable file`);
  }
  const system = [...(env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'chromium')), '/usr/bin/chromium'];
  return system.find(executable) ?? await registryChromium(cacheDir);
}

/** Whether an unpacked copy holds the browser and the NSS libraries it loads. */
const unpacked = (target: string) => existsSync(join(target, 'chromium')) && existsSync(join(target, 'al2023', 'lib', 'libnss3.so'));

/**
 * Unpacks @sparticuz/chromium into `<cacheDir>/sparticuz-chromium-<version>/` through a staging
 * directory renamed into place, so a run interrupted mid-unpack, or two test files unpacking at
 * once, never leave a half-written binary to be found (its own /tmp/chromium can be one).
 */
export async function registryChromium(cacheDir: string): Promise<string> {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new NoBrowser(`@sparticuz/chromium is built for linux x64, not ${process.platform} ${process.arch}`);
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve('@sparticuz/chromium'); // <package>/build/cjs/index.cjs
  } catch {
    throw new NoBrowser('@sparticuz/chromium is not installed');
  }
  const { version } = JSON.parse(readFileSync(join(dirname(entry), '..', '..', 'package.json'), 'utf8')) as { version: string };
  const target = join(cacheDir, `sparticuz-chromium-${version}`);
  const binary = join(target, 'chromium');
  if (unpacked(target)) return binary;
  // A copy missing a part (a cleaner took files from it) is unpacked again.
  rmSync(target, { recursive: true, force: true });

  mkdirSync(cacheDir, { recursive: true });
  const staging = mkdtempSync(`${target}-unpacking-`);
  try {
    // executablePath() unpacks into os.tmpdir(): in a child whose TMPDIR is the staging directory.
    // The Amazon Linux runtime variable makes it unpack the NSS libraries too (al2023/lib), which
    // a fresh Debian lacks.
    await promisify(execFile)(process.execPath, ['-e', 'require(process.argv[1]).executablePath()', entry],
      { env: { ...process.env, TMPDIR: staging, AWS_LAMBDA_JS_RUNTIME: 'nodejs20.x' } });
    renameSync(staging, target);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    // Another run renamed its own copy into place first.
    if (!unpacked(target)) throw new NoBrowser(`unpacking @sparticuz/chromium failed (${String(err).split('\n')[0]})`);
  }
  return binary;
}

/** The environment to run `executablePath` in: the registry Chromium loads its own NSS libraries. */
export function chromiumEnv(executablePath: string): NodeJS.ProcessEnv {
  const libraries = join(dirname(executablePath), 'al2023', 'lib');
  if (!existsSync(libraries)) return process.env;
  return { ...process.env, LD_LIBRARY_PATH: [libraries, process.env.LD_LIBRARY_PATH].filter(Boolean).join(delimiter) };
}

/** A headless Chromium off the network; close it when done. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await findChromium();
  try {
    return await chromium.launch({ executablePath, args: CHROMIUM_ARGS, env: chromiumEnv(executablePath) });
  } catch (err) {
    throw new NoBrowser(`${executablePath} did not start (${String(err).split('\n')[0]})`);
  }
}

/** The page's serious and critical accessibility violations (axe-core), one line each. */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  return await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id + ': ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`) as string[];
}
