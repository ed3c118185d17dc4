// Criteria that cost real work on generated fixtures (fixtures/generate.ts): shared by the budget
// tests and the estimate benchmarks.

const ever = { kind: 'ever' };

/** A product-event leaf with one JSON property filter, counted over all time. */
export const countedLeaf = (name: string, path: string, op: string, value: unknown, count = { op: '>=', value: 2 }) => ({
  source: 'product_event', name, filter: { [path]: { op, value } }, occurrence: { op: 'did', count, window: ever },
});

/** Several JSON-filtered, counted scans over the whole events table: far more than 25 ms of work at 1 M events. */
export const HEAVY_CRITERIA = {
  version: 1,
  root: {
    op: 'or',
    children: [
      countedLeaf('view_item', 'payload.item.category', 'contains', 'o'),
      countedLeaf('view_item', 'payload.item.price', '>', 10, { op: '>=', value: 3 }),
      countedLeaf('session_start', 'payload.platform', 'not_in', ['ios']),
      countedLeaf('feature_used', 'payload.duration_ms', '>=', 100),
      countedLeaf('add_to_cart', 'payload.item.category', 'starts_with', 'b'),
      countedLeaf('login', 'payload.method', '!=', 'sso'),
      { source: 'pageview', filter: { path: { op: 'contains', value: '/' } }, occurrence: { op: 'did', count: { op: '>=', value: 2 }, window: ever } },
    ],
  },
};
