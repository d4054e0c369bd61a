/**
 * The request gate, run on every request before the body is read (decisions §11 order):
 * 405 for a known path with the wrong method, then credentials (401 / 503 auth_unavailable),
 * then the per-key rate limit (429).
 */
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Accounts } from '../accounts/accounts.js';
import { QuarryError } from '../errors.js';
import { sendError } from './error-handler.js';
import type { RateLimiter } from './rate-limiter.js';

export type AuthMode = 'key' | 'admin' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    methodNotAllowed?: { allow: string };
  }
  interface FastifyRequest {
    accountId: string;
  }
}

/** The key from `X-API-Key` or `Authorization: Bearer`. */
export function credentialOf(request: FastifyRequest): string | undefined {
  const header = request.headers['x-api-key'];
  if (typeof header === 'string' && header) return header;
  const auth = request.headers.authorization;
  if (auth) {
    const m = /^Bearer\s+(.+)$/i.exec(auth);
    if (m) return m[1]!.trim();
  }
  return undefined;
}

function sameSecret(a: string, b: string): boolean {
  const x = crypto.createHash('sha256').update(a).digest();
  const y = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(x, y);
}

export function registerAuth(app: FastifyInstance, deps: { accounts: Accounts; adminKey: string | undefined; limiter: RateLimiter }): void {
  app.decorateRequest('accountId', '');
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const config = request.routeOptions.config;
    if (config.methodNotAllowed) {
      const { allow } = config.methodNotAllowed;
      return sendError(reply, request, new QuarryError('method_not_allowed', `${request.method} is not allowed here; use ${allow}.`, { headers: { Allow: allow } }));
    }
    if (request.is404 || config.auth === 'none') return;
    const credential = credentialOf(request);
    if (config.auth === 'admin') {
      if (!deps.adminKey) return sendError(reply, request, new QuarryError('not_found', 'Admin routes are off: set QUARRY_ADMIN_KEY to enable them.'));
      if (!credential || !sameSecret(credential, deps.adminKey)) {
        return sendError(reply, request, new QuarryError('unauthorized', 'Admin routes need the admin key in X-API-Key or Authorization: Bearer.'));
      }
      return;
    }
    if (!credential) return sendError(reply, request, new QuarryError('unauthorized', 'No API key: send it in X-API-Key or Authorization: Bearer.'));
    const key = await deps.accounts.verifyKey(credential);
    if (!key) return sendError(reply, request, new QuarryError('unauthorized', 'The API key is invalid or revoked.'));
    request.accountId = key.accountId;
    const wait = await deps.limiter.take(key.keyId);
    if (wait > 0) {
      return sendError(reply, request, new QuarryError('rate_limited', `Too many requests for this key: wait ${wait} s, then resend.`, { retry_after: wait }));
    }
  });
}
