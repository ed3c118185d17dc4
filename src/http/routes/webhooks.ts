// POST /v1/webhooks/stripe/:workspace_id: payment-processor notifications. No API key: the
// Stripe-Signature over the raw body, checked against the workspace's secret, authenticates.

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { PaymentWebhook } from '../../attribution/webhook.js';

export const webhookRoutes: FastifyPluginAsyncZod<{ webhook: PaymentWebhook }> = async (app, { webhook }) => {
  // This plugin's scope only: keep the exact bytes, the signature is over them.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.post('/v1/webhooks/stripe/:workspace_id', {
    config: { limit: 'notifications' },
    schema: {
      tags: ['payments'], summary: 'Receive a Stripe notification (signed with the workspace\'s webhook secret)',
      params: z.object({ workspace_id: z.string() }),
      description: 'A notification of the processor\'s other mode (livemode against the workspace\'s payments mode) is acknowledged with ignored: "livemode" and stored nowhere.',
      response: { 200: z.object({ received: z.literal(true), duplicate: z.boolean().optional(), ignored: z.literal('livemode').optional() }) },
    },
  }, async (request) => {
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const { duplicate, ignored } = await webhook.receive(request.params.workspace_id, raw, request.headers['stripe-signature']);
    return ignored ? { received: true as const, ignored } : { received: true as const, duplicate };
  });
};
