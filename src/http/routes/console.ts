// The web console (src/console/): one page at /, its script and style under /console/, bundled
// with esbuild on first request and kept for the process. No key here: the page asks for one and
// calls the public API with it, like any other client.

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { FastifyPluginAsync } from 'fastify';

// Relative to this module: src/console under tsx, dist/console (copied by `npm run build`) otherwise.
const ENTRY = new URL('../../console/main.ts', import.meta.url);
const PAGE = new URL('../../console/index.html', import.meta.url);

export interface ConsoleBundle {
  html: string;
  js: string;
  css: string;
}

let bundle: Promise<ConsoleBundle> | undefined;

/** The console's page, script and style, built once per process (a failed build is retried on the next call). */
export function consoleBundle(): Promise<ConsoleBundle> {
  bundle ??= buildConsole().catch((err: unknown) => {
    bundle = undefined;
    throw err;
  });
  return bundle;
}

async function buildConsole(): Promise<ConsoleBundle> {
  const result = await build({
    entryPoints: [fileURLToPath(ENTRY)],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    platform: 'browser',
    write: false,
    outdir: 'console',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const js = result.outputFiles.find((f) => f.path.endsWith('.js'))?.text ?? '';
  const css = result.outputFiles.find((f) => f.path.endsWith('.css'))?.text ?? '';
  // A content hash in the asset URLs: the page is never cached, the assets for good.
  const version = createHash('sha256').update(js).update(css).digest('hex').slice(0, 12);
  const html = (await readFile(PAGE, 'utf8')).replaceAll('{{version}}', version);
  return { html, js, css };
}

/** Scripts and styles from this origin only; the API is this origin too. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
  + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const consoleRoutes: FastifyPluginAsync = async (app) => {
  const hide = { schema: { hide: true } };
  app.get('/', hide, async (_request, reply) => reply
    .type('text/html; charset=utf-8')
    .header('Cache-Control', 'no-cache')
    .header('Content-Security-Policy', CSP)
    .header('X-Content-Type-Options', 'nosniff')
    .header('Referrer-Policy', 'no-referrer')
    .send((await consoleBundle()).html));
  const asset = (type: string, pick: (b: ConsoleBundle) => string) => async (_request: unknown, reply: import('fastify').FastifyReply) => reply
    .type(type)
    .header('Cache-Control', 'public, max-age=31536000, immutable')
    .header('X-Content-Type-Options', 'nosniff')
    .send(pick(await consoleBundle()));
  app.get('/console/app.js', hide, asset('application/javascript; charset=utf-8', (b) => b.js));
  app.get('/console/app.css', hide, asset('text/css; charset=utf-8', (b) => b.css));
};
