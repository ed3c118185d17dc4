// Request bodies are parsed with every string well-formed (src/well-formed.ts): one lone surrogate
// would otherwise make DuckDB's JSON reader reject a whole batch, or leave a stored properties
// document unreadable to every later JSON filter. The check is one scan of the raw text; only
// bodies that contain a surrogate escape are walked.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { wellFormedIn } from '../well-formed.js';

/**
 * Replaces the JSON parser of `app` (and its children) by Fastify's own (same limits, same
 * prototype-poisoning checks) followed by `wellFormedIn`.
 */
export function registerJsonBodies(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request: FastifyRequest, body: string | Buffer, done) => {
    parse(request, body as string, (err: Error | null, value?: unknown) => {
      if (err) done(err, undefined);
      else done(null, wellFormedIn(body as string, value));
    });
  });
}
