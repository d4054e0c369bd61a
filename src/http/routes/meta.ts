import type { FastifyInstance } from 'fastify';
import { ROUTES } from '../../contract/index.js';
import { metaprompt, WORKFLOW } from '../../tasks/workflow.js';
import { contractRoute, typed } from '../contract-route.js';

/** Health probes: no key needed, served by every role. */
export async function healthRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  app.route({ ...contractRoute(ROUTES.health), handler: async () => ({ ok: true as const }) });
  app.route({
    ...contractRoute(ROUTES.ready),
    handler: async (_request, reply) => {
      const ready = app.deps.ready();
      return reply.code(ready ? 200 : 503).send({ ok: ready });
    },
  });
}

/** The service's self-description. */
export async function metaRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  app.route({ ...contractRoute(ROUTES.workflow), handler: async () => WORKFLOW });
  app.route({ ...contractRoute(ROUTES.metaprompt), handler: async () => metaprompt() });
}
