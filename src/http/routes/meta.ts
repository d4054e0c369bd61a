import type { FastifyInstance } from 'fastify';
import { ROUTES } from '../../contract/index.js';
import { QuarryError } from '../../errors.js';
import type { Store } from '../../store/store.js';
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
      await storeAnswers(app.deps.store);
      return { ok: true };
    },
  });
}

/** How long /readyz waits for the store: a probe is retried soon, and a lost PostgreSQL host can leave a connect hanging. */
const STORE_CHECK_MS = 2000;

/** Resolves once the store answers a trivial query; throws what a route meeting the outage would (503 service_unavailable). */
async function storeAnswers(store: Store): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new QuarryError('service_unavailable', `The task store did not answer within ${STORE_CHECK_MS / 1000} s.`, { retry_after: 2 })), STORE_CHECK_MS);
  });
  try {
    await Promise.race([store.ping(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The service's self-description. */
export async function metaRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  app.route({ ...contractRoute(ROUTES.workflow), handler: async () => WORKFLOW });
  app.route({ ...contractRoute(ROUTES.metaprompt), handler: async () => metaprompt() });
}
