// Request bodies are parsed with every string well-formed (src/well-formed.ts): one lone surrogate
// would otherwise make DuckDB's JSON reader reject a whole batch, or leave a stored properties
// document unreadable to every later JSON filter. The check is one scan of the raw text; only
// bodies that contain a surrogate escape are walked.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type AppError, invalidRequest, pointer } from '../errors.js';
import { wellFormedIn } from '../well-formed.js';

type BodyParser = (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => void;

/**
 * Fastify's own JSON parser (same limits, prototype-poisoning checks) followed by `wellFormedIn`;
 * a body refused for a `__proto__` or `constructor.prototype` key is answered saying where. An empty
 * body is no body: many HTTP clients send `Content-Type: application/json` on a body-less POST.
 */
export function jsonBodyParser(app: FastifyInstance): BodyParser {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    const plain = plainJson(body as string);
    if (plain !== NOT_PLAIN) return done(null, plain);
    parse(request, body as string, (err: Error | null, value?: unknown) => {
      if (!err) done(null, wellFormedIn(body as string, value));
      else done(poisonedKey(body as string) ?? err, undefined);
    });
  };
}

const NOT_PLAIN = Symbol('not plain');
const REFUSED_KEY = /__proto__|constructor/;

/**
 * The value of a body without a backslash nor either key the prototype check refuses, parsed by
 * JSON.parse alone: the checks of the default parser (secure-json-parse) and of `wellFormedIn`
 * look for those texts, so they would find nothing. Anything else (and any fault, to be worded)
 * is NOT_PLAIN. The checks' regular expressions cost more than these scans (bench/RESULTS.md, "Ingest over HTTP").
 */
function plainJson(text: string): unknown {
  if (text.indexOf('\\') !== -1 || REFUSED_KEY.test(text)) return NOT_PLAIN;
  try {
    return JSON.parse(text);
  } catch {
    return NOT_PLAIN;
  }
}

/** Replaces the JSON parser of `app` (and its children) by `jsonBodyParser`. */
export function registerJsonBodies(app: FastifyInstance): void {
  const parser = jsonBodyParser(app);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * The error naming a key that the prototype-poisoning check refuses, or null when the text
 * is not JSON at all. Plain JSON.parse keeps such keys as own properties (harmless here); the walk
 * uses an explicit stack, so no depth overflows it.
 */
function poisonedKey(text: string): AppError | null {
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch {
    return null;
  }
  const stack: { value: unknown; path: (string | number)[] }[] = [{ value: root, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (!isObject(value)) continue;
    const entries = Object.entries(value);
    for (const [key, inner] of entries) {
      const forbidden = key === '__proto__' || (key === 'constructor' && isObject(inner) && Object.hasOwn(inner, 'prototype'));
      if (forbidden) {
        const field = pointer([...path, key]);
        const message = `the key "${key}"${key === 'constructor' ? ' holding "prototype"' : ''} is refused: it could change JavaScript object prototypes (rename it)`;
        return invalidRequest([{ field, message }]);
      }
    }
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i]!;
      if (isObject(inner)) stack.push({ value: inner, path: [...path, Array.isArray(value) ? Number(key) : key] });
    }
  }
  return null;
}
