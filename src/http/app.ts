// The Fastify application: plugins, error mapping, routes. Tests build it with buildApp() and
// call app.inject(); main.ts listens.

import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Store } from '../store/db.js';
import { Workspaces } from '../store/workspaces.js';
import { authPlugin } from './auth.js';
import { registerErrorHandling } from './errors.js';
import { Ingest } from '../ingest/ingest.js';
import { compileRoutes } from './routes/compile.js';
import { healthRoutes } from './routes/health.js';
import { ingestRoutes } from './routes/ingest.js';
import { trackerRoutes } from './routes/tracker.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface AppOptions {
  store: Store;
  estimateBudgetMs: number;
  /** Evaluation time for estimates; injectable so tests are deterministic. */
  clock?: () => Date;
  logger?: boolean;
  /** The ingest feature, when the caller wants to listen to it (attribution); made here otherwise. */
  ingest?: Ingest;
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);

  await app.register(swagger, {
    openapi: {
      info: { title: 'Audiences, traits and revenue attribution', version: '1.0.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  const workspaces = new Workspaces(opts.store);
  await app.register(authPlugin, { workspaces });
  await app.register(healthRoutes);
  await app.register(compileRoutes, {
    store: opts.store,
    budgetMs: opts.estimateBudgetMs,
    clock: opts.clock ?? (() => new Date()),
  });
  await app.register(ingestRoutes, { ingest: opts.ingest ?? new Ingest(opts.store) });
  await app.register(trackerRoutes);
  await app.ready();
  return app;
}
