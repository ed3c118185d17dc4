// GET /people?q= (secret key): people lookup with attribution (decisions §10). Also served on
// DATA_PORT by the data app.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { findPeople } from '../../attribution/people.js';
import type { Stores } from '../../store/open.js';

const personMatch = z.object({
  person_id: z.string().nullable(),
  external_id: z.string().nullable(),
  email: z.string().nullable(),
  name: z.string().nullable(),
  customer_ids: z.array(z.string()),
  link_state: z.string().nullable(),
  first_touch_channel: z.string(),
});

export const peopleRoutes: FastifyPluginAsyncZod<{ stores: Stores }> = async (app, { stores }) => {
  app.get('/people', {
    config: { auth: 'secret' },
    schema: {
      tags: ['people'], summary: 'Look up people by email, external_id, name or payment customer id',
      querystring: z.object({
        q: z.string().max(256).default(''),
        limit: z.coerce.number().int().min(1).max(200).default(50),
        cursor: z.string().max(1024).optional(),
      }),
      response: { 200: z.object({ data: z.array(personMatch), next_cursor: z.string().nullable() }) },
    },
  }, async (request) => {
    const { q, limit, cursor } = request.query;
    return findPeople(stores, request.workspaceId, q, limit, cursor);
  });
};
