// Person merges (secret key, decisions §12): POST /v1/persons/merge merges `from` into `into`;
// the preview says what would move; GET /v1/persons/{id}/merges lists the merges that made a person.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { listMerges, mergePersons, previewMerge } from '../../people/merge.js';
import { mergeAnswer, mergeBody, mergeList, mergePreview } from '../../people/schema.js';
import type { LeaseOptions } from '../../store/control/leases.js';
import type { Stores } from '../../store/open.js';

/** `lease`: how long a merge stays its caller's if the process stops (LEASE_TTL_MS); then the finisher takes it. */
export const mergeRoutes: FastifyPluginAsyncZod<{ stores: Stores; clock: () => Date; lease?: LeaseOptions }> = async (app, { stores, clock, lease }) => {
  app.post('/v1/persons/merge', {
    config: { auth: 'secret' },
    schema: {
      tags: ['persons and events'], summary: 'Merge one person into another (cannot be undone)',
      description: 'from\'s visitors, events, page views and payment customers move to into; traits shallow-merge with into\'s values '
        + 'winning; into takes the external_id and email it lacks, and from\'s other identifiers name into from then on. Both persons '
        + 'having an external_id: 409 merge_conflict unless force is true. Audiences count one person at their next refresh.',
      body: mergeBody,
      response: { 200: mergeAnswer },
    },
  }, async (request) => mergePersons(stores, request.workspaceId, request.body, clock(), lease));

  app.post('/v1/persons/merge/preview', {
    config: { auth: 'secret' },
    schema: { tags: ['persons and events'], summary: 'What a merge would move, without merging', body: mergeBody, response: { 200: mergePreview } },
  }, async (request) => previewMerge(stores, request.workspaceId, request.body));

  app.get('/v1/persons/:id/merges', {
    config: { auth: 'secret' },
    schema: {
      tags: ['persons and events'], summary: 'The merges that made a person, newest first',
      params: z.object({ id: z.string().min(1).max(256).describe('a person_id (of the person, or of one merged into it)') }),
      response: { 200: mergeList },
    },
  }, async (request) => listMerges(stores, request.workspaceId, request.params.id));
};
