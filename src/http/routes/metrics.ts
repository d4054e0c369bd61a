import type { FastifyInstance } from 'fastify';

/**
 * `GET /metrics` (decisions §15.5): Prometheus' text format, with the admin key unless
 * QUARRY_METRICS_PUBLIC=1. An operator's route, not an operation of the API: left out of
 * /openapi.json, like the document itself. Served by every role, workers included: they run the turns.
 */
export async function metricsRoutes(app: FastifyInstance): Promise<void> {
  const { config, metrics } = app.deps;
  app.get('/metrics', { schema: { hide: true }, config: { auth: config.metricsPublic ? 'none' : 'admin' } }, async (_request, reply) => {
    const text = await metrics.scrape();
    return reply.type(metrics.contentType).header('Cache-Control', 'no-store').send(text);
  });
}
