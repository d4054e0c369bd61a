/**
 * The request gate, run on every request a route matches before its body is read (decisions §11 order):
 * 405 for a known path with the wrong method, then credentials (401 / 503 auth_unavailable),
 * then the per-key rate limit (429).
 */
import crypto from 'node:crypto';
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, onRequestHookHandler } from 'fastify';
import type { Accounts, VerifiedKey } from '../accounts/accounts.js';
import { QuarryError } from '../errors.js';
import { routeHooks } from './contract-route.js';
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

type GateDeps = { accounts: Accounts; adminKey: string | undefined; limiter: RateLimiter };

/**
 * Each route gets the gate its config calls for, as the route is added, after the route's own
 * onRequest hooks (the MCP Origin guard): a route anyone may call gets none, and no request
 * rebuilds the route's options to find out which it is. An unknown path (no route) needs no key.
 */
export function registerAuth(app: FastifyInstance, deps: GateDeps): void {
  app.decorateRequest('accountId', '');
  app.addHook('onRoute', (route) => {
    const gate = gateFor(route.config ?? {}, deps);
    if (gate) route.onRequest = [...routeHooks(route.onRequest), gate];
  });
}

/**
 * Callback style, with no promise on the hot path: a key verified moments ago and an in-memory
 * rate limit are answered synchronously, with no closure made. A hook that answers the request
 * does not call done.
 */
function gateFor(config: FastifyContextConfig, deps: GateDeps): onRequestHookHandler | undefined {
  if (config.methodNotAllowed) {
    const { allow } = config.methodNotAllowed;
    return (request, reply) => {
      sendError(reply, request, new QuarryError('method_not_allowed', `${request.method} is not allowed here; use ${allow}.`, { headers: { Allow: allow } }));
    };
  }
  if (config.auth === 'none') return undefined;
  if (config.auth === 'admin') {
    return (request, reply, done) => {
      const credential = credentialOf(request);
      if (!deps.adminKey) {
        sendError(reply, request, new QuarryError('not_found', 'Admin routes are off: set QUARRY_ADMIN_KEY to enable them.'));
      } else if (!credential || !sameSecret(credential, deps.adminKey)) {
        sendError(reply, request, new QuarryError('unauthorized', 'Admin routes need the admin key in X-API-Key or Authorization: Bearer.'));
      } else {
        done();
      }
    };
  }
  return (request, reply, done) => {
    const credential = credentialOf(request);
    if (!credential) {
      sendError(reply, request, new QuarryError('unauthorized', 'No API key: send it in X-API-Key or Authorization: Bearer.'));
      return;
    }
    const cached = deps.accounts.cachedKey(credential);
    if (cached !== undefined) admitKey(request, reply, done, cached, deps.limiter);
    else deps.accounts.verifyKey(credential).then((key) => admitKey(request, reply, done, key, deps.limiter), done);
  };
}

/** A verified key (null: unknown or revoked) through the rate limit. */
function admitKey(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, key: Readonly<VerifiedKey> | null, limiter: RateLimiter): void {
  if (!key) {
    sendError(reply, request, new QuarryError('unauthorized', 'The API key is invalid or revoked.'));
    return;
  }
  request.accountId = key.accountId;
  const wait = limiter.take(key.keyId);
  if (typeof wait === 'number') afterWait(request, reply, done, wait);
  else wait.then((seconds) => afterWait(request, reply, done, seconds), done);
}

function afterWait(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, wait: number): void {
  if (wait > 0) sendError(reply, request, new QuarryError('rate_limited', `Too many requests for this key: wait ${wait} s, then resend.`, { retry_after: wait }));
  else done();
}
