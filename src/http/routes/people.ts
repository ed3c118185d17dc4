// GET /people?q= (secret key): people lookup with attribution (decisions §10). Also served on
// DATA_PORT by the data app.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { findPeople } from '../../attribution/people.js';
import { peoplePage, peopleQuery } from '../../attribution/people-schema.js';
import type { Stores } from '../../store/open.js';

export const peopleRoutes: FastifyPluginAsyncZod<{ stores: Stores }> = async (app, { stores }) => {
  app.get('/people', {
    config: { auth: 'secret' },
    schema: {
      tags: ['people'], summary: 'Look up people by email, external_id, name or payment customer id',
      querystring: peopleQuery,
      response: { 200: peoplePage },
    },
  }, async (request) => {
    const { q, limit, cursor } = request.query;
    return findPeople(stores, request.workspaceId, q, limit, cursor);
  });
};
