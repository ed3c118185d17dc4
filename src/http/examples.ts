// Request examples shown in the API reference (/docs). test/openapi.test.ts sends each one to its
// route, so an example that stops being accepted fails the suite.

export const CRITERIA_EXAMPLE = {
  version: 1,
  root: {
    op: 'and',
    children: [
      { source: 'pageview', filter: { channel_category: { op: '=', value: 'AI' } },
        occurrence: { op: 'did', count: null, window: { kind: 'last_n_days', n: 30 } } },
      { source: 'product_event', name: 'signup',
        occurrence: { op: 'did', count: { op: '>=', value: 1 }, window: { kind: 'ever' } } },
      { source: 'person', filter: { 'traits.plan': { op: '=', value: 'pro' } } },
      { op: 'not', child: { source: 'payments', event: 'subscription_canceled', occurrence: { window: { kind: 'ever' } } } },
    ],
  },
};

export const REQUEST_EXAMPLES = {
  person: { external_id: 'u_42', email: 'ada@example.com', name: 'Ada Lovelace', traits: { plan: 'pro', company: { name: 'Acme', size: 40 } } },
  events: {
    batch: [
      { event_name: 'signup', user_id: 'u_42', visitor_id: 'v_3f9c2a', traits: { plan: 'pro' },
        properties: { source: 'landing' }, message_id: 'msg_0001', timestamp: '2026-11-20T09:30:00Z' },
      { event_name: 'feature_used', user_id: 'u_42', properties: { feature: 'export', duration_ms: 420 }, message_id: 'msg_0002' },
    ],
  },
  pageviews: {
    visitor_id: 'v_3f9c2a',
    url: 'https://example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=nov',
    referrer: 'https://chatgpt.com/',
    title: 'Pricing',
  },
  compile: { criteria_json: CRITERIA_EXAMPLE, breakdown: 'channel_category' },
  overlap: {
    audiences: [
      { criteria_json: CRITERIA_EXAMPLE },
      { criteria_json: { version: 1, root: { source: 'payments', event: 'first_paid_invoice', occurrence: { window: { kind: 'last_n_days', n: 30 } } } } },
    ],
  },
  revenue: {
    from: '2026-01-01', to: '2027-01-01', interval: 'month', group_by: 'channel_category', model: 'first_touch',
    filter: { 'traits.plan': { op: '=', value: 'pro' } },
  },
  audience: {
    name: 'AI visitors who signed up',
    refresh_every: '1h',
    criteria_json: CRITERIA_EXAMPLE,
    destinations: [{ type: 'webhook', url: 'https://hooks.example.com/audience', secret: 'whsec_example_0123456789' }],
  },
};
