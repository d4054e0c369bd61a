import type { FastifyInstance } from 'fastify';
import { metaprompt, WORKFLOW } from '../../tasks/workflow.js';

/** Health probes: no key needed, served by every role. */
export async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get('/healthz', { config: { auth: 'none' }, schema: { tags: ['health'], security: [] } }, async () => ({ ok: true }));

  app.get('/readyz', { config: { auth: 'none' }, schema: { tags: ['health'], security: [] } }, async (_request, reply) => {
    const ready = app.deps.ready();
    return reply.code(ready ? 200 : 503).send({ ok: ready });
  });
}

/** The service's self-description. */
export async function metaRoutes(app: FastifyInstance): Promise<void> {

  app.get('/task/workflow', { schema: { tags: ['meta'], summary: 'Route map and state machine' } }, async () => WORKFLOW);
  app.get('/task/metaprompt', { schema: { tags: ['meta'], summary: 'Spec schema, output kinds and a metaprompt for caller-side agents' } }, async () => metaprompt());
}
