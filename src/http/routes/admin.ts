import type { FastifyInstance } from 'fastify';
import { roundCredits } from '../../tasks/task-view.js';
import { AccountBody, AccountParams, CreditsBody, KeyParams } from '../schemas.js';

/** Admin routes (decisions §7), guarded by QUARRY_ADMIN_KEY; answered 404 when no admin key is set. */
export async function adminRoutes(app: FastifyInstance): Promise<void> {
  const { accounts } = app.deps;
  const admin = { auth: 'admin' as const };
  const tags = ['admin'];

  app.post('/admin/accounts', { config: admin, schema: { body: AccountBody, tags, summary: 'Create an account with credits and a first key' } }, async (request, reply) => {
    const { name, credits } = request.body as { name: string; credits: number };
    const created = await accounts.createAccount(name, credits);
    return reply.code(201).send({ account_id: created.account.id, name, balance: created.account.balance, api_key: created.apiKey, key_id: created.keyId });
  });

  app.get('/admin/accounts/:account_id', { config: admin, schema: { params: AccountParams, tags, summary: 'An account and its balance' } }, async (request) => {
    const a = await accounts.getAccount((request.params as { account_id: string }).account_id);
    return { account_id: a.id, name: a.name, balance: roundCredits(a.balance), credits_used: roundCredits(a.creditsUsed), created_at: a.createdAt };
  });

  app.post('/admin/accounts/:account_id/credits', { config: admin, schema: { params: AccountParams, body: CreditsBody, tags, summary: 'Add (or, negative, take) credits; the balance never goes below 0' } }, async (request) => {
    const { account_id } = request.params as { account_id: string };
    const balance = await accounts.addCredits(account_id, (request.body as { amount: number }).amount);
    return { account_id, balance: roundCredits(balance) };
  });

  app.post('/admin/accounts/:account_id/keys', { config: admin, schema: { params: AccountParams, tags, summary: 'Create another API key (shown once)' } }, async (request, reply) => {
    const key = await accounts.createKey((request.params as { account_id: string }).account_id);
    return reply.code(201).send({ key_id: key.keyId, api_key: key.apiKey });
  });

  app.get('/admin/accounts/:account_id/keys', { config: admin, schema: { params: AccountParams, tags, summary: "An account's keys (never the secrets)" } }, async (request) => {
    const keys = await accounts.listKeys((request.params as { account_id: string }).account_id);
    return { keys: keys.map((k) => ({ key_id: k.id, created_at: k.createdAt, revoked_at: k.revokedAt })) };
  });

  app.delete('/admin/accounts/:account_id/keys/:key_id', { config: admin, schema: { params: KeyParams, tags, summary: 'Revoke a key: it is 401 from then on' } }, async (request) => {
    const { account_id, key_id } = request.params as { account_id: string; key_id: string };
    const key = await accounts.revokeKey(account_id, key_id);
    return { key_id: key.id, revoked_at: key.revokedAt };
  });

  app.get('/admin/accounts/:account_id/usage', { config: admin, schema: { params: AccountParams, tags, summary: 'Per-turn usage' } }, async (request) => {
    const turns = await accounts.usage((request.params as { account_id: string }).account_id);
    return {
      turns: turns.map((t) => ({ task_id: t.taskId, turn_id: t.id, kind: t.kind, status: t.status, credits: roundCredits(t.creditsUsed), tokens_in: t.tokensIn, tokens_out: t.tokensOut, tool_calls: t.toolCalls })),
    };
  });
}
