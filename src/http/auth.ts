/**
 * The request gate, run on every request before the body is read (decisions §11 order):
 * 405 for a known path with the wrong method, then credentials (401 / 503 auth_unavailable),
 * then the per-key rate limit (429).
 */
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Accounts, VerifiedKey } from '../accounts/accounts.js';
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
  // Callback style, with no promise on the hot path: a key verified moments ago and an in-memory
  // rate limit are answered synchronously. A hook that answers the request does not call done.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const config = request.routeOptions.config;
    if (config.methodNotAllowed) {
      const { allow } = config.methodNotAllowed;
      sendError(reply, request, new QuarryError('method_not_allowed', `${request.method} is not allowed here; use ${allow}.`, { headers: { Allow: allow } }));
      return;
    }
    if (request.is404 || config.auth === 'none') return done();
    const credential = credentialOf(request);
    if (config.auth === 'admin') {
      if (!deps.adminKey) {
        sendError(reply, request, new QuarryError('not_found', 'Admin routes are off: set QUARRY_ADMIN_KEY to enable them.'));
      } else if (!credential || !sameSecret(credential, deps.adminKey)) {
        sendError(reply, request, new QuarryError('unauthorized', 'Admin routes need the admin key in X-API-Key or Authorization: Bearer.'));
      } else {
        done();
      }
      return;
    }
    if (!credential) {
      sendError(reply, request, new QuarryError('unauthorized', 'No API key: send it in X-API-Key or Authorization: Bearer.'));
      return;
    }
    const afterWait = (wait: number) => {
      if (wait > 0) sendError(reply, request, new QuarryError('rate_limited', `Too many requests for this key: wait ${wait} s, then resend.`, { retry_after: wait }));
      else done();
    };
    const admit = (key: VerifiedKey | null) => {
      if (!key) {
        sendError(reply, request, new QuarryError('unauthorized', 'The API key is invalid or revoked.'));
        return;
      }
      request.accountId = key.accountId;
      const wait = deps.limiter.take(key.keyId);
      if (typeof wait === 'number') afterWait(wait);
      else wait.then(afterWait, done);
    };
    const cached = deps.accounts.cachedKey(credential);
    if (cached !== undefined) admit(cached);
    else deps.accounts.verifyKey(credential).then(admit, done);
  });
}
