/**
 * CORS for the origins in QUARRY_CORS_ORIGINS (off when unset), through @fastify/cors. Decided
 * per request: a request from another origin gets no CORS headers and goes on as usual; only an
 * OPTIONS from an allowed origin that names Access-Control-Request-Method is a preflight,
 * answered 204 before the key is checked; any other OPTIONS is an ordinary request (405 on a
 * known path, 404 elsewhere). Event streams copy the reply's headers onto their head (sse.ts).
 */
import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/** Request headers a browser may send cross-origin, and answer headers its script may read. */
const ALLOWED_HEADERS = ['X-API-Key', 'Authorization', 'Content-Type', 'Idempotency-Key', 'Last-Event-ID', 'X-Request-ID'];
const EXPOSED_HEADERS = ['X-Request-ID', 'X-Next-Cursor', 'Link', 'Retry-After', 'Idempotent-Replayed', 'WWW-Authenticate', 'Allow', 'Content-Disposition'];

function corsOptions(origins: string[]): FastifyCorsOptions {
  const any = origins.includes('*');
  const allowed = new Set(origins);
  const common: FastifyCorsOptions = {
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
  };
  const off: FastifyCorsOptions = { origin: false };
  return {
    hook: 'onRequest',
    delegator: (request, cb) => {
      const origin = request.headers.origin;
      if (!origin || !(any || allowed.has(origin))) return cb(null, off);
      const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
      cb(null, { ...common, origin: any ? '*' : origin, preflight });
    },
  };
}

/** Registers CORS; call it before the request gate (auth), whose refusals need the headers too. */
export async function registerCors(app: FastifyInstance, origins: string[]): Promise<void> {
  app.addHook('onRoute', (route) => {
    // The plugin's catch-all OPTIONS route only hands what is no preflight on to the 404: no key for that.
    if (route.url === '*' && route.method === 'OPTIONS') route.config = { ...route.config, auth: 'none' };
  });
  await app.register(fastifyCors, corsOptions(origins));
}
