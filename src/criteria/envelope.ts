// The criteria envelope as a client writes it, as zod schemas: the API reference's components.
// validate.ts stays the judge of a tree (its codes and JSON Pointers are the contract); these
// describe the same grammar, and test/openapi.test.ts holds them to it. Kept apart from
// schema.ts, whose whitelists the console bundles: zod stays out of the browser.

import { z } from 'zod';
import {
  COUNT_OPS, CRITERIA_VERSION, PAGEVIEW_FIELDS, PAYLOAD_PREFIX, PAYMENT_EVENT_KINDS, PAYMENTS_FIELDS, PREDICATE_OPS, TRAITS_PREFIX,
} from './schema.js';
import { MAX_DEPTH, MAX_NODES, MAX_WINDOW_DAYS } from './validate.js';

/** The components are named here, so `$ref`s into them resolve in the OpenAPI document. */
const components = z.registry<{ id: string }>();
function named<S extends z.ZodType>(schema: S, id: string): S {
  components.add(schema, { id });
  return schema;
}

const scalar = z.union([z.string(), z.number(), z.boolean()]);

const predicate = named(z.strictObject({
  op: z.enum(PREDICATE_OPS),
  value: z.union([scalar, z.array(scalar).min(1)]).nullable().optional()
    .describe('a non-empty array for in and not_in; none (or null) for is_set and is_not_set'),
}), 'Predicate');

/** A filter of typed columns: the whitelist's fields, each optional. */
const columns = (fields: Record<string, unknown>) =>
  z.strictObject(Object.fromEntries(Object.keys(fields).map((field) => [field, predicate.optional()])));

/** A filter of JSON paths the workspace's data has shown (GET /v1/definitions lists them). */
const paths = (prefix: string, seen: string) => z.record(z.string().startsWith(prefix), predicate)
  .describe(`keys ${prefix}<path>, with a path ${seen}`);

const window = named(z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('ever') }),
  z.strictObject({ kind: z.literal('last_n_days'), n: z.number().int().min(1).max(MAX_WINDOW_DAYS) }),
  z.strictObject({
    kind: z.literal('between'),
    from: z.string().describe('ISO 8601 date or datetime, inclusive'),
    to: z.string().describe('ISO 8601 date (the whole day counts) or datetime, inclusive'),
  }),
]), 'Window');

const count = named(z.strictObject({ op: z.enum(COUNT_OPS), value: z.number().int().min(0) }), 'Count');

const occurrence = named(z.strictObject({
  op: z.enum(['did', 'did_not']),
  count: count.nullable().optional().describe('required with did (null: at least once); did_not takes none'),
  window,
}), 'Occurrence');

const leaves = [
  named(z.strictObject({
    source: z.literal('product_event'),
    name: z.string().min(1).max(200),
    filter: paths(PAYLOAD_PREFIX, 'seen on this event name').nullable().optional(),
    occurrence,
  }), 'ProductEventLeaf'),
  named(z.strictObject({ source: z.literal('pageview'), filter: columns(PAGEVIEW_FIELDS).nullable().optional(), occurrence }), 'PageviewLeaf'),
  named(z.strictObject({
    source: z.literal('payments'),
    event: z.enum(PAYMENT_EVENT_KINDS),
    occurrence: z.strictObject({ window }).describe('at least once: no op, no count'),
  }), 'PaymentsEventLeaf'),
  named(z.union(Object.entries(PAYMENTS_FIELDS).map(([entity, fields]) => z.strictObject({
    source: z.literal('payments'),
    entity: z.literal(entity),
    predicate: columns(fields).nullable().optional(),
  }))), 'PaymentsStateLeaf'),
  named(z.strictObject({
    source: z.literal('person'),
    filter: paths(TRAITS_PREFIX, 'seen on this workspace\'s persons').nullable().optional(),
  }), 'PersonLeaf'),
] as const;

const branches = [
  named(z.strictObject({ op: z.enum(['and', 'or']), get children() { return z.array(criteriaNode).min(1); } }), 'AndOrBranch'),
  named(z.strictObject({ op: z.literal('not'), get child() { return criteriaNode; } }), 'NotBranch'),
] as const;

const criteriaNode: z.ZodType<unknown> = named(z.union([...branches, ...leaves])
  .describe('a branch (and, or, not) or a leaf (source); a not node or did_not leaf sits in an and node with a positive sibling'), 'CriteriaNode');

export const criteriaEnvelope = named(z.strictObject({
  version: z.literal(CRITERIA_VERSION),
  root: criteriaNode,
}).describe(`at most ${MAX_NODES} nodes, nested at most ${MAX_DEPTH} deep`), 'AudienceCriteria');

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** The JSON Schemas of the criteria tree, by name, for the document's components. */
export function criteriaComponents(): Record<string, object> {
  const { schemas } = z.toJSONSchema(components, { target: 'openapi-3.0', uri: (id) => ref(id).$ref });
  // OpenAPI 3.0 schema objects have no $id: the component's name is its identity.
  return Object.fromEntries(Object.entries(schemas).map(([id, { $id: _, ...schema }]) => [id, schema]));
}

const envelopeRef = () => ref(components.get(criteriaEnvelope)!.id);

/**
 * A criteria_json field of a request: any JSON passes here and the criteria validator judges it,
 * so its faults keep their codes and paths; the document shows the tree, or JSON text holding it.
 */
export const criteriaJson = (description: string) => z.unknown().meta({
  description,
  anyOf: [envelopeRef(), { type: 'string', description: 'the envelope as JSON text' }],
});

/** A criteria_json field of an answer: the envelope as saved, sent as it is. */
export const savedCriteria = () => z.unknown().meta(envelopeRef());
