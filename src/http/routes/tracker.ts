// GET /tracker.js: the browser tracker (src/tracker/tracker.js), minified once when the app starts.

import { readFile } from 'node:fs/promises';
import { transform } from 'esbuild';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';

// Relative to this module, so it resolves under tsx from any working directory.
const SOURCE = new URL('../../tracker/tracker.js', import.meta.url);

let minified: Promise<string> | undefined;

/** The minified tracker, built on first use (every app in the process shares it). */
export function minifiedTracker(): Promise<string> {
  minified ??= readFile(SOURCE, 'utf8').then(async (source) => (await transform(source, { minify: true, legalComments: 'none' })).code);
  return minified;
}

export const trackerRoutes: FastifyPluginAsyncZod = async (app) => {
  const code = await minifiedTracker();
  app.get('/tracker.js', {
    schema: { tags: ['page views'], summary: 'The browser tracker script (embed with data-key="pk_…")' },
  }, async (_request, reply) => reply
    .type('application/javascript; charset=utf-8')
    // Short, so a new tracker reaches sites quickly.
    .header('Cache-Control', 'public, max-age=300')
    .send(code));
};
