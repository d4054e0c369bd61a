import type { FastifyInstance } from 'fastify';
import { fromMicros } from '../../domain/credits.js';
import { ROUTES } from '../../contract/index.js';
import { contractRoute, typed } from '../contract-route.js';

/** Admin routes (decisions §7), guarded by QUARRY_ADMIN_KEY; answered 404 when no admin key is set. */
export async function adminRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { accounts } = app.deps;

  app.route({
    ...contractRoute(ROUTES.createAccount),
    handler: async (request, reply) => {
      const { name, credits } = request.body;
      const created = await accounts.createAccount(name, credits);
      return reply.code(201).send({ account_id: created.account.id, name, balance: fromMicros(created.account.balanceMicros), api_key: created.apiKey, key_id: created.keyId });
    },
  });

  app.route({
    ...contractRoute(ROUTES.getAccount),
    handler: async (request) => {
      const a = await accounts.getAccount(request.params.account_id);
      return { account_id: a.id, name: a.name, balance: fromMicros(a.balanceMicros), credits_used: fromMicros(a.creditsUsedMicros), created_at: a.createdAt };
    },
  });

  app.route({
    ...contractRoute(ROUTES.addCredits),
    handler: async (request) => {
      const { account_id } = request.params;
      const balanceMicros = await accounts.addCredits(account_id, request.body.amount);
      return { account_id, balance: fromMicros(balanceMicros) };
    },
  });

  app.route({
    ...contractRoute(ROUTES.createKey),
    handler: async (request, reply) => {
      const key = await accounts.createKey(request.params.account_id);
      return reply.code(201).send({ key_id: key.keyId, api_key: key.apiKey });
    },
  });

  app.route({
    ...contractRoute(ROUTES.listKeys),
    handler: async (request) => {
      const keys = await accounts.listKeys(request.params.account_id);
      return { keys: keys.map((k) => ({ key_id: k.id, created_at: k.createdAt, revoked_at: k.revokedAt })) };
    },
  });

  app.route({
    ...contractRoute(ROUTES.revokeKey),
    handler: async (request) => {
      const key = await accounts.revokeKey(request.params.account_id, request.params.key_id);
      return { key_id: key.id, revoked_at: key.revokedAt };
    },
  });

  app.route({
    ...contractRoute(ROUTES.getUsage),
    handler: async (request) => {
      const turns = await accounts.usage(request.params.account_id);
      return {
        turns: turns.map((t) => ({
          task_id: t.taskId, turn_id: t.id, kind: t.kind, status: t.status, credits: fromMicros(t.creditsUsedMicros), tokens_in: t.tokensIn, tokens_in_cached: t.tokensInCached, tokens_out: t.tokensOut, tool_calls: t.toolCalls, compactions: t.compactions,
          rows_written: t.rowsWritten, verified_rows: t.verifiedRows, unverified_rows: t.rowsWritten - t.verifiedRows,
        })),
      };
    },
  });
}
