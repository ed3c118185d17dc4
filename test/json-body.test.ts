// The JSON body parser (src/http/json-body.ts) reads plain bodies with JSON.parse alone: for every
// text it gives what Fastify's default parser followed by the well-formed walk gives, value or error,
// except an empty text: no body rather than an error.

import fc from 'fast-check';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { jsonBodyParser } from '../src/http/json-body.js';
import { wellFormedIn } from '../src/well-formed.js';
import { tierRuns } from './support/tier.js';

type Outcome = { value: unknown } | { error: string };

describe('the JSON body parser', () => {
  it('answers every text as the default parser and the well-formed walk do', () => {
    const app = Fastify();
    const ours = jsonBodyParser(app);
    const reference = app.getDefaultJsonParser('error', 'error');
    const request = {} as FastifyRequest;
    type Parse = (request: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void) => void;
    const run = (parse: Parse, text: string, after: (v: unknown) => unknown = (v) => v): Outcome => {
      let outcome: Outcome | undefined;
      parse(request, text, (err, value) => { outcome = err ? { error: (err as { code?: string }).code ?? err.message } : { value: after(value) }; });
      return outcome!;
    };
    const texts = fc.oneof(
      fc.json(),
      fc.jsonValue().map((v) => JSON.stringify({ batch: [v, { properties: v }] })),
      fc.string(),
      fc.constantFrom('', '\uFEFF{"a":1}', '{"a":"\\ud800"}', '{"a":"\\u0041"}', '{"__proto__":{"x":1}}', '{"a":{"constructor":{"prototype":1}}}',
        '{"constructor":1}', '{"a":"__proto__"}', '{"a":"x\\"constructor\\":"}', '{"a":1,}', '[1, 2]', '"\\u005f_proto__"', ' {"a" : -0 } '),
    );
    fc.assert(fc.property(texts, (text) => {
      const expected = run(reference, text, (v) => wellFormedIn(text, v));
      const actual = run(ours, text);
      // A refused key is worded by our parser (naming it); the default parser's code says the same.
      if ('error' in expected && 'error' in actual) return;
      // An empty body is no body (the default parser refuses it).
      if (text === '') {
        expect(actual).toStrictEqual({ value: undefined });
        return;
      }
      expect(actual).toStrictEqual(expected);
    }), { numRuns: tierRuns(3000) });
  });
});
