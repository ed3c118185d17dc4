// A loopback double of Stripe's list API for the seven endpoints a backfill reads, answering and
// refusing as Stripe's reference says (stripe/openapi spec3 at f6c2a48f, the API version of the
// stripe package, whose typed `*ListParams` are generated from it):
// - `Authorization: Bearer <key>`: none or another key is a 401 (Stripe's error body);
// - GET only; query parameters in Stripe's bracket encoding, each one the endpoint accepts (its list
//   parameters plus limit, starting_after, ending_before, expand), else 400 parameter_unknown;
//   limit an integer 1..100; created an integer or { gt, gte, lt, lte }; a starting_after that is no
//   object of the list is 400 resource_missing; only the expansions listed here;
// - lists newest first (created, then id, descending), `{ object: "list", url, has_more, data }`;
// - subscriptions: without status the canceled ones are left out; status=all lists them all.
// Faults a test asks for: 429 rate_limit answers, and a 500 that tells the SDK not to retry.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StripeObject } from './stripe.js';

type Json = Record<string, unknown>;

interface Endpoint {
  /** The object's name in a resource_missing message. */
  noun: string;
  params: string[];
  /** Expansions of list items this double serves (`data.` prefixed, as the list API takes them). */
  expand: string[];
}

const PAGINATION = ['limit', 'starting_after', 'ending_before', 'expand'];

/** The list parameters of each endpoint (stripe/openapi spec3; the stripe package's *ListParams). */
const ENDPOINTS: Record<string, Endpoint> = {
  '/v1/customers': { noun: 'customer', params: ['created', 'email', 'test_clock'], expand: [] },
  '/v1/checkout/sessions': {
    noun: 'checkout.session', params: ['created', 'customer', 'customer_account', 'customer_details', 'payment_intent', 'payment_link', 'status', 'subscription'],
    expand: ['data.payment_intent', 'data.payment_intent.latest_charge'],
  },
  '/v1/payment_intents': { noun: 'payment_intent', params: ['created', 'customer', 'customer_account'], expand: ['data.latest_charge'] },
  '/v1/subscriptions': {
    noun: 'subscription', params: ['automatic_tax', 'collection_method', 'created', 'current_period_end', 'current_period_start', 'customer',
      'customer_account', 'plan', 'price', 'status', 'test_clock'], expand: [],
  },
  '/v1/invoices': { noun: 'invoice', params: ['collection_method', 'created', 'customer', 'customer_account', 'due_date', 'status', 'subscription'], expand: ['data.payments'] },
  '/v1/charges': { noun: 'charge', params: ['created', 'customer', 'payment_intent', 'transfer_group'], expand: [] },
  '/v1/refunds': { noun: 'refund', params: ['charge', 'created', 'payment_intent'], expand: [] },
};

const SUBSCRIPTION_STATUSES = ['active', 'all', 'canceled', 'ended', 'incomplete', 'incomplete_expired', 'past_due', 'paused', 'trialing', 'unpaid'];

class Refusal extends Error {
  constructor(readonly status: number, readonly body: Json) {
    super(String(body.message));
  }
}

const invalid = (message: string, extra: Json = {}) => new Refusal(400, { type: 'invalid_request_error', message, ...extra });

/** `a[b][0]=x` → { a: { b: { 0: 'x' } } } (Stripe's form encoding, which the SDK writes with indices). */
function parseQuery(search: URLSearchParams): Json {
  const out: Json = {};
  for (const [key, value] of search) {
    const path = key.replace(/\]/g, '').split('[');
    let at = out;
    path.forEach((part, i) => {
      if (i === path.length - 1) at[part] = value;
      else at = (at[part] ??= {}) as Json;
    });
  }
  return out;
}

const integer = (name: string, v: unknown): number => {
  if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw invalid(`Invalid integer: ${String(v)}`, { code: 'parameter_invalid_integer', param: name });
  return Number(v);
};

function createdFilter(v: unknown): (created: number) => boolean {
  if (typeof v === 'string') {
    const at = integer('created', v);
    return (c) => c === at;
  }
  const range = v as Json;
  for (const k of Object.keys(range)) if (!['gt', 'gte', 'lt', 'lte'].includes(k)) throw invalid(`Received unknown parameter: created[${k}]`, { code: 'parameter_unknown', param: `created[${k}]` });
  const bound = (k: string) => (range[k] === undefined ? null : integer(`created[${k}]`, range[k]));
  const [gt, gte, lt, lte] = [bound('gt'), bound('gte'), bound('lt'), bound('lte')];
  return (c) => (gt === null || c > gt) && (gte === null || c >= gte) && (lt === null || c < lt) && (lte === null || c <= lte);
}

export interface StripeApiDouble {
  url: string;
  /** The requests received, path and query as sent. */
  readonly requests: { path: string; query: Json }[];
  /**
   * Answers request number `n` (from 1, counting every request received) with Stripe's 429
   * rate_limit error, or with a 500 and `Stripe-Should-Retry: false` (which the SDK does not retry).
   */
  faultAt(n: number, fault: 'rate_limit' | 'fail'): void;
  close(): Promise<void>;
}

export interface StripeApiData {
  customers: StripeObject[];
  sessions: StripeObject[];
  paymentIntents: StripeObject[];
  subscriptions: StripeObject[];
  invoices: StripeObject[];
  /** Invoice payments (invoice_payment objects), served in `payments` of an invoice listed with expand data.payments. */
  invoicePayments: StripeObject[];
  charges: StripeObject[];
  refunds: StripeObject[];
}

export async function startStripeApi(apiKey: string, data: StripeApiData): Promise<StripeApiDouble> {
  const lists: Record<string, StripeObject[]> = {
    '/v1/customers': data.customers, '/v1/checkout/sessions': data.sessions, '/v1/payment_intents': data.paymentIntents,
    '/v1/subscriptions': data.subscriptions, '/v1/invoices': data.invoices, '/v1/charges': data.charges, '/v1/refunds': data.refunds,
  };
  const requests: StripeApiDouble['requests'] = [];
  const faults = new Map<number, 'rate_limit' | 'fail'>();

  const expanded = (path: string, o: StripeObject, expansions: string[]): StripeObject => {
    const copy = structuredClone(o) as Json;
    const byId = (list: StripeObject[], id: unknown) => list.find((x) => x.id === id);
    if (path === '/v1/payment_intents' && expansions.includes('data.latest_charge')) copy.latest_charge = byId(data.charges, copy.latest_charge) ?? copy.latest_charge;
    if (path === '/v1/checkout/sessions' && expansions.some((e) => e.startsWith('data.payment_intent'))) {
      const pi = byId(data.paymentIntents, copy.payment_intent);
      if (pi) copy.payment_intent = expanded('/v1/payment_intents', pi, expansions.includes('data.payment_intent.latest_charge') ? ['data.latest_charge'] : []);
    }
    if (path === '/v1/invoices' && expansions.includes('data.payments')) {
      const payments = data.invoicePayments.filter((p) => p.invoice === o.id);
      copy.payments = { object: 'list', data: payments, has_more: false, url: `/v1/invoice_payments?invoice=${o.id}` };
    }
    return copy as StripeObject;
  };

  const list = (path: string, query: Json): Json => {
    const endpoint = ENDPOINTS[path]!;
    for (const key of Object.keys(query)) {
      if (!PAGINATION.includes(key) && !endpoint.params.includes(key)) throw invalid(`Received unknown parameter: ${key}`, { code: 'parameter_unknown', param: key });
    }
    const limit = query.limit === undefined ? 10 : integer('limit', query.limit);
    if (limit < 1 || limit > 100) throw invalid('This value must be greater than or equal to 1 and less than or equal to 100.', { code: 'parameter_invalid_integer', param: 'limit' });
    const expansions = query.expand === undefined ? [] : Object.values(query.expand as Json).map(String);
    for (const e of expansions) if (!endpoint.expand.includes(e)) throw invalid(`This property cannot be expanded (${e}).`, { param: 'expand' });
    if (query.status !== undefined && path === '/v1/subscriptions' && !SUBSCRIPTION_STATUSES.includes(String(query.status))) {
      throw invalid(`Invalid status: must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`, { code: 'parameter_invalid_string', param: 'status' });
    }
    let items = [...lists[path]!].sort((a, b) => (b.created as number) - (a.created as number) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    if (path === '/v1/subscriptions') {
      const status = query.status as string | undefined;
      items = items.filter((s) => (status === undefined ? s.status !== 'canceled' : status === 'all' || s.status === status));
    }
    if (query.created !== undefined) {
      const keep = createdFilter(query.created);
      items = items.filter((o) => keep(o.created as number));
    }
    if (query.starting_after !== undefined) {
      const at = items.findIndex((o) => o.id === query.starting_after);
      if (at < 0) throw invalid(`No such ${endpoint.noun}: '${String(query.starting_after)}'`, { code: 'resource_missing', param: 'starting_after' });
      items = items.slice(at + 1);
    }
    const page = items.slice(0, limit).map((o) => expanded(path, o, expansions));
    return { object: 'list', url: path, has_more: items.length > limit, data: page };
  };

  const answer = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://double');
    const query = parseQuery(url.searchParams);
    requests.push({ path: url.pathname, query });
    const send = (status: number, body: Json, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${requests.length}`, ...headers }).end(JSON.stringify(body));
    try {
      const auth = req.headers.authorization;
      if (!auth) throw new Refusal(401, { type: 'invalid_request_error', message: 'You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. \'Authorization: Bearer YOUR_SECRET_KEY\').' });
      if (auth !== `Bearer ${apiKey}`) throw new Refusal(401, { type: 'invalid_request_error', code: 'api_key_invalid', message: 'Invalid API Key provided.' });
      if (req.method !== 'GET' || !ENDPOINTS[url.pathname]) throw new Refusal(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname}).` });
      const fault = faults.get(requests.length);
      if (fault === 'rate_limit') {
        throw new Refusal(429, { type: 'invalid_request_error', code: 'rate_limit', message: 'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.' });
      }
      if (fault === 'fail') {
        return send(500, { error: { type: 'api_error', message: 'An unknown error occurred' } }, { 'stripe-should-retry': 'false' });
      }
      send(200, list(url.pathname, query));
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      send(err.status, { error: err.body });
    }
  };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    faultAt: (n, fault) => { faults.set(n, fault); },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
