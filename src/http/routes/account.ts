import type { FastifyInstance } from 'fastify';
import { fromMicros } from '../../domain/credits.js';
import { ROUTES } from '../../contract/index.js';
import { contractRoute, typed } from '../contract-route.js';

/** The caller's own account (decisions §20): any API key reads the account it belongs to. */
export async function accountRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { accounts } = app.deps;

  app.route({
    ...contractRoute(ROUTES.getOwnAccount),
    handler: async (request) => {
      const a = await accounts.getAccount(request.accountId);
      return { account_id: a.id, name: a.name, balance: fromMicros(a.balanceMicros), credits_used: fromMicros(a.creditsUsedMicros) };
    },
  });
}
