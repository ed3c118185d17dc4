// POST /v1/persons, /v1/events (secret key) and /v1/pageviews (publishable or secret key, CORS,
// text/plain bodies from navigator.sendBeacon).

import cors from '@fastify/cors';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { invalidRequest, pointer } from '../../errors.js';
import { REQUEST_EXAMPLES } from '../examples.js';
import { jsonBodyParser } from '../json-body.js';
import type { Ingest } from '../../ingest/ingest.js';
import { fastEvents, fastPageviews } from '../../ingest/fast-path.js';
import {
  eventsAnswer, eventsBody, type EventResult, pageviewsAnswer, pageviewsBody, personAnswer, personBody,
} from '../../ingest/schemas.js';

/**
 * Parses a body with `schema`, or fails with 400 invalid_request naming each field; in a batch each
 * fault also carries the index of its item, and nothing of the batch is stored.
 */
function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  throw invalidRequest(issuesOf(result.error, body).map(({ path, message }) => {
    const [head, index] = path;
    return { field: pointer(path), message, ...(head === 'batch' && typeof index === 'number' ? { index } : {}) };
  }));
}

/** Single-or-batch unions: report the issues of the branch the body meant. */
function issuesOf(error: z.ZodError, body: unknown): { path: PropertyKey[]; message: string }[] {
  const meantBatch = typeof body === 'object' && body !== null && 'batch' in body;
  const issues: { path: PropertyKey[]; message: string }[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'invalid_union' && issue.errors.length === 2) {
      for (const inner of issue.errors[meantBatch ? 1 : 0]!) issues.push({ path: [...issue.path, ...inner.path], message: inner.message });
    } else {
      issues.push({ path: issue.path, message: issue.message });
    }
  }
  return issues;
}

const items = <T>(body: T | { batch: T[] }): T[] => (typeof body === 'object' && body !== null && 'batch' in body ? body.batch : [body as T]);

/** The handler validates (to report batch indexes); the schema still documents the route. */
const documentedOnly = () => (data: unknown) => ({ value: data });

/**
 * The answers of the ingest routes are built here, so they are sent as they are: the zod
 * serializer parsed each of a batch's 500 results again before stringifying them.
 */
const builtHere = () => (data: unknown) => JSON.stringify(data);

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * An event's answer as JSON text, keys in `eventResult`'s order (what JSON.stringify of the object
 * gives); a batch's answer is one string built of them, not 500 objects stringified.
 */
const resultJson = (r: EventResult): string =>
  `{"event_id":${JSON.stringify(r.event_id)},"person_id":${JSON.stringify(r.person_id)},"duplicate":${r.duplicate}${r.suppressed ? ',"suppressed":true' : ''}}`;

function batchJson(results: EventResult[]): string {
  let accepted = 0;
  let suppressed = 0;
  let json = '';
  for (let i = 0; i < results.length; i++) {
    const r = results[i]!;
    if (r.suppressed) suppressed++;
    else if (!r.duplicate) accepted++;
    json += i === 0 ? resultJson(r) : `,${resultJson(r)}`;
  }
  return `{"accepted":${accepted},${suppressed > 0 ? `"suppressed":${suppressed},` : ''}"results":[${json}]}`;
}

export const ingestRoutes: FastifyPluginAsyncZod<{ ingest: Ingest }> = async (app, { ingest }) => {
  app.post('/v1/persons', {
    config: { auth: 'secret', limit: 'ingest' },
    validatorCompiler: documentedOnly,
    schema: {
      tags: ['persons and events'],
      summary: 'Set a person\'s traits (no event)',
      body: personBody.meta({ example: REQUEST_EXAMPLES.person }),
      response: { 200: personAnswer },
    },
  }, async (request) => ingest.person(request.workspaceId, parse(personBody, request.body)));

  app.post('/v1/events', {
    config: { auth: 'secret', limit: 'ingest' },
    validatorCompiler: documentedOnly,
    serializerCompiler: builtHere,
    schema: {
      tags: ['persons and events'],
      summary: 'Record one event, or a batch of up to 500',
      body: eventsBody.meta({ example: REQUEST_EXAMPLES.events }),
      response: { 200: eventsAnswer },
    },
  }, async (request, reply) => {
    const body = fastEvents(request.body) ?? parse(eventsBody, request.body);
    const results = await ingest.events(request.workspaceId, items(body));
    // Sent as is (Fastify serializes objects only); the schema's type is of the object it spells.
    return (reply as FastifyReply).type(JSON_TYPE).send('batch' in body ? batchJson(results) : resultJson(results[0]!));
  });

  await app.register(pageviewRoutes, { ingest });
};

async function pageviewRoutes(app: FastifyInstance, { ingest }: { ingest: Ingest }): Promise<void> {
  // Browsers call this from the customer's site: any origin, and beacons' text/plain bodies.
  await app.register(cors, { origin: true, methods: ['POST'], allowedHeaders: ['Authorization', 'Content-Type'], maxAge: 86_400 });
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, jsonBodyParser(app));
  app.withTypeProvider<import('fastify-type-provider-zod').ZodTypeProvider>().post('/v1/pageviews', {
    config: { auth: 'any', limit: 'ingest' },
    validatorCompiler: documentedOnly,
    serializerCompiler: builtHere,
    schema: {
      tags: ['page views'],
      summary: 'Record page views (the browser tracker calls this)',
      description: 'Publishable or secret key, as Authorization: Bearer or ?key= (beacons cannot set headers).',
      querystring: z.object({ key: z.string().optional() }),
      body: pageviewsBody.meta({ example: REQUEST_EXAMPLES.pageviews }),
      response: { 200: pageviewsAnswer },
    },
  }, async (request) => {
    const body = fastPageviews(request.body) ?? parse(pageviewsBody, request.body);
    const origin = { address: request.ip, userAgent: request.headers['user-agent'] ?? '' };
    const { stored, suppressed } = await ingest.pageviews(request.workspaceId, items(body), origin);
    const accepted = stored.filter((s) => s.pageview_id !== null).length;
    return suppressed > 0 ? { accepted, suppressed } : { accepted };
  });
}
