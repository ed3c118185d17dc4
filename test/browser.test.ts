// How the browser tests find their browser (test/support/browser.ts): an explicit or system
// Chromium first, else the registry's, unpacked so that no half-written binary is ever found.

import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chromiumEnv, findChromium, NoBrowser, registryChromium } from './support/browser.js';

const dir = mkdtempSync(join(tmpdir(), 'browser-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, '#!/bin/sh\n', { mode });
  chmodSync(path, mode);
  return path;
}

describe('finding the browser for the browser tests', () => {
  it('takes CHROMIUM_PATH first', async () => {
    const chosen = file('my-chrome', 0o755);
    expect(await findChromium({ CHROMIUM_PATH: chosen, PATH: '/usr/bin' })).toBe(chosen);
  });

  it('fails in one line naming the fix when CHROMIUM_PATH is not an executable file', async () => {
    for (const path of [file('not-executable', 0o644), join(dir, 'missing'), dir]) {
      const failure = await findChromium({ CHROMIUM_PATH: path }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(NoBrowser);
      const { message } = failure as NoBrowser;
      expect(message).toContain(`CHROMIUM_PATH=${path}`);
      expect(message).toContain('`npm install`');
      expect(message).not.toContain('\n');
    }
  });

  it('takes a chromium on PATH', async () => {
    const bin = mkdtempSync(join(dir, 'bin-'));
    const onPath = join(bin, 'chromium');
    writeFileSync(onPath, '#!/bin/sh\n', { mode: 0o755 });
    expect(await findChromium({ PATH: `${join(dir, 'empty')}:${bin}` })).toBe(onPath);
  });

  it('unpacks the registry Chromium and its NSS libraries once into place, even when two runs race', async () => {
    const cache = mkdtempSync(join(dir, 'cache-'));
    const [first, second] = await Promise.all([registryChromium(cache), registryChromium(cache)]);
    expect(first).toBe(join(cache, 'sparticuz-chromium-147.0.0', 'chromium'));
    expect(second).toBe(first);
    expect(readdirSync(cache)).toEqual(['sparticuz-chromium-147.0.0']); // no staging directory left
    expect(existsSync(join(dirname(first), 'al2023', 'lib', 'libnss3.so'))).toBe(true);
    expect(execFileSync(first, ['--version'], { encoding: 'utf8', env: chromiumEnv(first) })).toMatch(/^Chromium 147\./);
    expect(await registryChromium(cache)).toBe(first);
  });
});
