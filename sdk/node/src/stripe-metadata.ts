// The metadata that links a payment to the visitor who made it (decisions §10): the tracker's
// first-party cookie `tr_v` as the browser sent it, and the caller's user id. Nothing is decoded:
// the webhook matches `tr_visitor_id` byte for byte with the visitor id the tracker sent.

/** The tracker's visitor cookie (src/tracker/tracker.js). */
export const VISITOR_COOKIE = 'tr_v';

/** The service's identifiers are 1 to 256 characters; Stripe's metadata values take up to 500. */
const MAX_ID_CHARS = 256;

/** Node's IncomingMessage (Express, Fastify's request, Next.js pages' API routes): headers as an object. */
export interface NodeRequestLike {
  headers: Record<string, string | string[] | undefined>;
}

/** A Fetch Request (Next.js route handlers, Remix, Hono, Deno, Bun): headers behind get(). */
export interface FetchRequestLike {
  headers: { get(name: string): string | null };
}

/** Where the browser's cookies are: a request of either kind, or a Cookie header's value. */
export type CookieSource = NodeRequestLike | FetchRequestLike | string | null | undefined;

/** Two of the 50 keys Stripe allows; each key under its 40 characters, each value under its 500. */
export interface StripeMetadata {
  tr_visitor_id?: string;
  tr_user_id?: string;
}

function cookieHeader(source: CookieSource): string | undefined {
  if (source === null || source === undefined) return undefined;
  if (typeof source === 'string') return source;
  const { headers } = source;
  if (typeof headers.get === 'function') return (headers as FetchRequestLike['headers']).get('cookie') ?? undefined;
  const value = (headers as NodeRequestLike['headers']).cookie;
  return Array.isArray(value) ? value.join('; ') : value;
}

/** The raw value of the first `name` cookie in a Cookie header (RFC 6265 §5.4 order: the most specific path first). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq !== -1 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

function userIdOf(userId: string | number | null | undefined): string | undefined {
  if (userId === null || userId === undefined || userId === '') return undefined;
  // An integer goes as its decimal string, as the service stores an integer external_id (decisions §3).
  const id = typeof userId === 'number' && Number.isSafeInteger(userId) ? String(userId) : userId;
  if (typeof id !== 'string' || id.length > MAX_ID_CHARS) {
    throw new RangeError(`userId must be a string of at most ${MAX_ID_CHARS} characters or an integer`);
  }
  return id;
}

/**
 * `{ tr_visitor_id, tr_user_id }` for `stripe.checkout.sessions.create({ metadata })` (and the
 * payment intents and subscriptions you create): the `tr_v` cookie of `source` as sent, and
 * `userId`. A key without a value is left out; a cookie that is not a visitor id (empty, above
 * 256 characters) too, since it came from the browser. A userId that is not an identifier throws.
 */
export function stripeMetadata(source: CookieSource, userId?: string | number | null): StripeMetadata {
  const metadata: StripeMetadata = {};
  const visitor = readCookie(cookieHeader(source), VISITOR_COOKIE);
  if (visitor && visitor.length <= MAX_ID_CHARS) metadata.tr_visitor_id = visitor;
  const user = userIdOf(userId);
  if (user !== undefined) metadata.tr_user_id = user;
  return metadata;
}
