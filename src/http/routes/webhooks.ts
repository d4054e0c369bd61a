import type { FastifyInstance } from 'fastify';
import { ROUTES } from '../../contract/index.js';
import { contractRoute, typed } from '../contract-route.js';
import { publicBaseUrl } from '../public-url.js';

/** Webhook endpoints and their deliveries (decisions §15.3): schema → one call to Webhooks → reply. */
export async function webhookRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { webhooks, config } = app.deps;

  app.route({
    ...contractRoute(ROUTES.createWebhook),
    handler: async (request, reply) => reply.code(201).send(await webhooks.create(request.accountId, request.body)),
  });

  app.route({
    ...contractRoute(ROUTES.listWebhooks),
    handler: async (request) => ({ webhooks: await webhooks.list(request.accountId) }),
  });

  app.route({
    ...contractRoute(ROUTES.getWebhook),
    handler: async (request) => webhooks.view(request.accountId, request.params.webhook_id),
  });

  app.route({
    ...contractRoute(ROUTES.deleteWebhook),
    handler: async (request) => webhooks.delete(request.accountId, request.params.webhook_id),
  });

  app.route({
    ...contractRoute(ROUTES.rotateWebhookSecret),
    handler: async (request) => webhooks.rotateSecret(request.accountId, request.params.webhook_id),
  });

  app.route({
    ...contractRoute(ROUTES.listDeliveries),
    handler: async (request, reply) => {
      const { webhook_id } = request.params;
      const limit = request.query.limit ?? 50;
      const page = await webhooks.deliveries(request.accountId, webhook_id, limit, request.query.cursor);
      if (page.nextCursor) {
        reply.header('X-Next-Cursor', page.nextCursor);
        reply.header('Link', `<${publicBaseUrl(request, config.publicUrl)}/webhooks/${webhook_id}/deliveries?limit=${limit}&cursor=${page.nextCursor}>; rel="next"`);
      }
      return { deliveries: page.deliveries };
    },
  });

  app.route({
    ...contractRoute(ROUTES.getDelivery),
    handler: async (request) => webhooks.delivery(request.accountId, request.params.webhook_id, request.params.delivery_id),
  });

  app.route({
    ...contractRoute(ROUTES.redeliver),
    handler: async (request, reply) => reply.code(202).send(await webhooks.redeliver(request.accountId, request.params.webhook_id, request.params.delivery_id)),
  });
}
