import type { FastifyInstance } from 'fastify';
import { ROUTES } from '../../contract/index.js';
import { readWithin } from '../../store/store-errors.js';
import { metaprompt, WORKFLOW } from '../../tasks/workflow.js';
import { contractRoute, typed } from '../contract-route.js';

/** Health probes: no key needed, served by every role. */
export async function healthRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  app.route({ ...contractRoute(ROUTES.health), handler: async () => ({ ok: true as const }) });
  app.route({
    ...contractRoute(ROUTES.ready),
    handler: async (_request, reply) => {
      if (!app.deps.ready()) return reply.code(503).send({ ok: false });
      // A store that does not answer is what a route meeting the outage would get: 503 service_unavailable.
      await readWithin(app.deps.pingStore(), STORE_CHECK_MS, { retry_after: STORE_CHECK_MS / 1000 });
      return { ok: true };
    },
  });
}

/** How long /readyz waits for the store: a probe is retried soon, and a lost PostgreSQL host can leave a connect hanging. */
const STORE_CHECK_MS = 2000;

/** The service's self-description. */
export async function metaRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  app.route({ ...contractRoute(ROUTES.workflow), handler: async () => WORKFLOW });
  app.route({ ...contractRoute(ROUTES.metaprompt), handler: async () => metaprompt() });
}
