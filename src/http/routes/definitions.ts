// GET /v1/definitions (secret key): the workspace's property definitions, the names a criteria tree
// may use: event names with the payload paths seen on each, and the trait paths seen on persons.
// The console offers them in the audience builder; any client can.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AnalyticsStore } from '../../store/analytics.js';

export const definitions = z.object({
  events: z.array(z.object({ name: z.string(), paths: z.array(z.string()) })),
  traits: z.array(z.string()),
});
export type Definitions = z.infer<typeof definitions>;

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const definitionRoutes: FastifyPluginAsyncZod<{ analytics: AnalyticsStore }> = async (app, { analytics }) => {
  app.get('/v1/definitions', {
    config: { auth: 'secret' },
    schema: {
      tags: ['workspace'], summary: 'Event names, their payload paths and the trait paths criteria may name',
      description: 'Every event name received, with or without properties. A product_event filter key is payload.<path> with a path of that event; a person leaf\'s is traits.<path>. '
        + 'Paths are kept current at ingest; a path once seen stays defined.',
      response: { 200: definitions },
    },
  }, async (request) => {
    const catalog = await analytics.propertyCatalog(request.workspaceId);
    const names = new Set([...catalog.eventNames ?? [], ...catalog.events.keys()]);
    return {
      events: [...names].map((name) => ({ name, paths: [...catalog.events.get(name) ?? []].sort(byName) })).sort((a, b) => byName(a.name, b.name)),
      traits: [...catalog.traits].sort(byName),
    };
  });
};
