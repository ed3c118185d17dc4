// The Fastify application: plugins, error mapping, routes. Tests build it with buildApp() and
// call app.inject(); main.ts listens.

import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { criteriaComponents } from '../criteria/envelope.js';
import { Workspaces } from '../store/control/workspaces.js';
import type { Stores } from '../store/open.js';
import { authPlugin } from './auth.js';
import { endConnectionsOnClose } from './connections.js';
import { registerJsonBodies } from './json-body.js';
import { clientErrorHandler, frameworkErrors, registerErrorHandling } from './errors.js';
import { DEFAULT_RATE_LIMITS, type RateLimits, SERVICE_BOUNDS, type TrustProxy } from '../config.js';
import { registerRateLimits } from './rate-limit.js';
import { Ingest } from '../ingest/ingest.js';
import { compileRoutes } from './routes/compile.js';
import { audienceRoutes } from './routes/audiences.js';
import { type AudienceService, type AudienceServiceOptions, createAudienceService } from '../audiences/service.js';
import { healthRoutes } from './routes/health.js';
import { ingestRoutes } from './routes/ingest.js';
import { trackerRoutes } from './routes/tracker.js';
import { consoleRoutes } from './routes/console.js';
import { definitionRoutes } from './routes/definitions.js';
import { PaymentWebhook } from '../attribution/webhook.js';
import { peopleRoutes } from './routes/people.js';
import { mergeRoutes } from './routes/merges.js';
import { privacyRoutes } from './routes/privacy.js';
import { createPrivacyService, type PrivacyService } from '../privacy/service.js';
import { reportRoutes } from './routes/reports.js';
import { webhookRoutes } from './routes/webhooks.js';
import { segmentRoutes } from './routes/segment.js';
import { type IngestLogOptions, SegmentIngest } from '../ingest/segment/service.js';
import { workspaceRoutes } from './routes/workspace.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface AppOptions {
  stores: Stores;
  estimateBudgetMs: number;
  /** The part of the estimate budget an exact count may take before the sampled one (tests set 0). */
  estimateExactShare?: number;
  /** Evaluation time for estimates; injectable so tests are deterministic. */
  clock?: () => Date;
  /** Fastify's logger: on, off, or its options (a level and a stream: tests read what is logged). */
  logger?: FastifyServerOptions['logger'];
  /** The ingest feature, when the caller wants to listen to it (attribution); made here otherwise. */
  ingest?: Ingest;
  /** Base URL the payment processor reaches this service at (webhook_url); PUBLIC_URL. */
  publicUrl?: string;
  /** Refresh limit, scheduler interval, delivery policy and platform URLs; defaults otherwise. */
  audiences?: Partial<AudienceServiceOptions>;
  /** Requests per minute per key; DEFAULT_RATE_LIMITS otherwise. */
  rateLimits?: RateLimits;
  /** /health's bound on each store's check; SERVICE_BOUNDS otherwise. */
  healthTimeoutMs?: number;
  /** A request's headers and body must have arrived within this (408 otherwise); SERVICE_BOUNDS otherwise. */
  requestBodyTimeoutMs?: number;
  /** Which proxies' X-Forwarded-For names the client (TRUST_PROXY); none unless given. */
  trustProxy?: TrustProxy;
  /** How often the privacy worker looks for requests left unfinished (PRIVACY_INTERVAL_MS unless given). */
  privacyIntervalMs?: number;
  /** The Segment-compatible API's ingest log: its directory, backlog bound, alias merge. */
  ingestLog?: IngestLogOptions;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The audiences feature: main.ts starts and stops its scheduler, tests call tick(). */
    audiences: AudienceService;
    /** The privacy feature: main.ts starts its worker and retention job, tests call them. */
    privacy: PrivacyService;
    /** The Segment-compatible API and its ingest log: tests wait for `segment.resolver.drained()`. */
    segment: SegmentIngest;
  }
}

/**
 * TRUST_PROXY as Fastify takes it. A hop count trusts that many hops nearest the service (proxy-addr's
 * count, which this Fastify answers with no trust at all): right only when no client reaches the
 * service but through those proxies (docs/consent.md).
 */
const fastifyTrust = (trust: TrustProxy) => (typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust);

/** Fastify with zod schemas, the error mapping and key authentication: shared by both apps. */
async function baseApp(stores: Stores, logger: FastifyServerOptions['logger'], rateLimits: RateLimits = DEFAULT_RATE_LIMITS, requestTimeoutMs = SERVICE_BOUNDS.requestBodyTimeoutMs, trustProxy: TrustProxy = false) {
  const app = Fastify({
    logger,
    // request.ip (cookieless visitors, rate limits by address): the connection's unless proxies are trusted.
    trustProxy: fastifyTrust(trustProxy),
    bodyLimit: BODY_LIMIT_BYTES,
    // A client sending its body a byte at a time is cut off (408) rather than held forever; Node
    // checks every connection at this interval, so the cut comes within twice the timeout at most.
    requestTimeout: requestTimeoutMs,
    http: { headersTimeout: Math.min(60_000, requestTimeoutMs), connectionsCheckingInterval: Math.max(250, Math.floor(requestTimeoutMs / 4)) },
    return503OnClosing: true,
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  registerJsonBodies(app);
  endConnectionsOnClose(app);
  await registerRateLimits(app, rateLimits);
  const workspaces = new Workspaces(stores.control);
  return { app, workspaces };
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { app, workspaces } = await baseApp(opts.stores, opts.logger ?? false, opts.rateLimits, opts.requestBodyTimeoutMs, opts.trustProxy);

  await app.register(swagger, {
    openapi: {
      info: { title: 'Audiences, traits and revenue attribution', version: '1.0.0' },
      tags: [
        { name: 'persons and events', description: 'Identify people, merge their traits, record product events (secret key).' },
        { name: 'page views', description: 'The browser tracker and the page views it sends (publishable key).' },
        { name: 'audiences', description: 'Validate and estimate criteria; saved audiences, their members, exports and deliveries.' },
        { name: 'payments', description: 'Signed payment-processor notifications that link paying customers to visitors.' },
        { name: 'people', description: 'Look customers up, with their link state and first-touch channel.' },
        { name: 'reports', description: 'Revenue per period, attributed to channels or grouped by traits (secret key).' },
        { name: 'privacy', description: 'Delete and suppress people by their identifiers (secret key), processed in the background.' },
        { name: 'segment', description: 'Segment\'s HTTP Tracking API (track, identify, page, screen, group, alias, batch): the write key as the HTTP Basic user name; acknowledged once durably logged, resolved in the background.' },
        { name: 'workspace', description: 'The key\'s workspace, where to point the payment webhook, and the names criteria may use.' },
        { name: 'service', description: 'Liveness (/live) and readiness (/health: every store answers and can write).' },
      ],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: criteriaComponents() },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  await app.register(authPlugin, { workspaces });
  const clock = opts.clock ?? (() => new Date());
  const ingest = opts.ingest ?? new Ingest(opts.stores);
  const segment = await SegmentIngest.open(ingest, opts.stores, opts.ingestLog ?? {}, clock, (err) => app.log.error({ err }, 'resolving the ingest log failed'));
  app.decorate('segment', segment);
  // Registered before the stores close (app.close() runs first): the resolver stops, the log closes.
  app.addHook('onClose', () => segment.close());
  await app.register(healthRoutes, { stores: opts.stores, timeoutMs: opts.healthTimeoutMs ?? SERVICE_BOUNDS.healthTimeoutMs, ingestStatus: () => segment.status() });
  await app.register(compileRoutes, { stores: opts.stores, budgetMs: opts.estimateBudgetMs, exactShare: opts.estimateExactShare, clock });
  const audiences = createAudienceService(opts.stores, clock, (err) => app.log.error({ err }, 'audience refresh or delivery failed'), opts.audiences);
  app.decorate('audiences', audiences);
  // Stops the scheduler before the store closes (app.close() runs before store.close()).
  app.addHook('onClose', () => audiences.scheduler.stop());
  await app.register(audienceRoutes, { stores: opts.stores, ...audiences, clock });
  await app.register(ingestRoutes, { ingest });
  await app.register(segmentRoutes, { segment, workspaces });
  await app.register(trackerRoutes);
  await app.register(workspaceRoutes, { workspaces, publicUrl: opts.publicUrl ?? 'http://127.0.0.1:3000' });
  await app.register(definitionRoutes, { analytics: opts.stores.analytics });
  await app.register(webhookRoutes, { webhook: new PaymentWebhook(opts.stores, ingest) });
  await app.register(peopleRoutes, { stores: opts.stores });
  await app.register(mergeRoutes, { stores: opts.stores, clock, lease: opts.audiences?.lease });
  const privacy = createPrivacyService(opts.stores, clock, app.log,
    opts.privacyIntervalMs, opts.audiences?.lease);
  app.decorate('privacy', privacy);
  app.addHook('onClose', () => privacy.stop());
  await app.register(privacyRoutes, { control: opts.stores.control, worker: privacy.worker, clock });
  await app.register(reportRoutes, { stores: opts.stores, budgetMs: opts.estimateBudgetMs, clock });
  await app.register(consoleRoutes);
  await app.ready();
  return app;
}

/** The data app for DATA_PORT: the people lookup only. */
export async function buildDataApp(opts: {
  stores: Stores; logger?: boolean; rateLimits?: RateLimits; requestBodyTimeoutMs?: number; trustProxy?: TrustProxy;
}): Promise<FastifyInstance> {
  const { app, workspaces } = await baseApp(opts.stores, opts.logger ?? false, opts.rateLimits, opts.requestBodyTimeoutMs, opts.trustProxy);
  await app.register(authPlugin, { workspaces });
  await app.register(peopleRoutes, { stores: opts.stores });
  await app.ready();
  return app;
}
