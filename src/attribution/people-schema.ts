// The people lookup's request and answer (GET /people), declared once: the route validates and
// documents with them, the lookup and the console take their types.

import { z } from 'zod';

export const peopleQuery = z.object({
  q: z.string().max(256).default(''),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(1024).optional(),
});

export const personMatch = z.object({
  person_id: z.string().nullable(),
  external_id: z.string().nullable(),
  email: z.string().nullable(),
  name: z.string().nullable(),
  customer_ids: z.array(z.string()),
  link_state: z.string().nullable(),
  first_touch_channel: z.string(),
});
export type PersonMatch = z.infer<typeof personMatch>;

export const peoplePage = z.object({ data: z.array(personMatch), next_cursor: z.string().nullable() });
export type PeoplePage = z.infer<typeof peoplePage>;
