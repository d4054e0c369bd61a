/**
 * The HTTP application: Fastify with our request gate, error catalogue, JSON parsing rules,
 * validation and routes. Built from already-constructed services so tests and the process
 * entry point assemble it the same way (see src/server.ts).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import { Ajv, type ValidateFunction } from 'ajv';
import buildSerializer from 'fast-json-stringify';
import addFormatsModule from 'ajv-formats';
import type { Logger } from 'pino';
import type { Accounts } from '../accounts/accounts.js';
import type { Config } from '../config.js';
import type { EventBus } from '../events/event-bus.js';
import { isClientId } from '../ids.js';
import type { Store } from '../store/store.js';
import type { TaskCommands } from '../tasks/task-commands.js';
import type { TaskQueries } from '../tasks/task-queries.js';
import type { Uploads } from '../uploads/uploads.js';
import { registerAuth } from './auth.js';
import { QuarryError } from '../errors.js';
import { registerErrorHandling, registerMethodNotAllowed, sendError } from './error-handler.js';
import { registerIdempotency } from './idempotency.js';
import { registerOpenApi } from './openapi.js';
import { MemoryRateLimiter, StoreRateLimiter } from './rate-limiter.js';
import { adminRoutes } from './routes/admin.js';
import { healthRoutes, metaRoutes } from './routes/meta.js';
import { outputRoutes } from './routes/outputs.js';
import { taskRoutes } from './routes/tasks.js';
import { uploadRoutes } from './routes/uploads.js';

export interface AppDeps {
  config: Config;
  logger: Logger;
  store: Store;
  bus: EventBus;
  /** The write side of tasks: every change a route makes goes through it. */
  commands: TaskCommands;
  /** The read side of tasks, and which tasks an account sees. */
  queries: TaskQueries;
  accounts: Accounts;
  uploads: Uploads;
  /** Whether the store and workers are ready (GET /readyz). */
  ready: () => boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}

// ajv-formats is published as CommonJS; under NodeNext its function is the module's `default`.
const addFormats = addFormatsModule.default;

/** Two validators: bodies are never coerced (a number is not a string), query and path values are. */
function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({ coerceTypes: coerce ? 'array' : false, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  addFormats(ajv);
  return ajv;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: deps.config.maxBodyBytes,
    // Request ids: a valid client X-Request-ID is kept, anything else gets a fresh req_ id.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && isClientId(given) ? given : `req_${randomUUID().replace(/-/g, '')}`;
    },
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    return503OnClosing: false,
    // Path parameters are checked by route schemas (and a long unknown id is simply not found).
    routerOptions: { maxParamLength: 8192 },
    // Errors the router raises before any hook (malformed percent-encoding) get our error body too.
    frameworkErrors: (error, request, reply) => {
      sendError(reply, request, new QuarryError('invalid_request', `The request URL is not valid: ${error.message}`));
    },
    forceCloseConnections: true,
  });
  app.decorate('deps', deps);

  // Validators and serializers are compiled on a route's first use, not at start: the contract
  // declares every answer of every route (hundreds of schemas), and compiling them all up front
  // cost seconds at every start of a process.
  const bodyAjv = makeAjv(false);
  const queryAjv = makeAjv(true);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : queryAjv;
    let compiled: ValidateFunction | undefined;
    const validate = (data: unknown) => {
      compiled ??= ajv.compile(schema);
      const valid = compiled(data);
      validate.errors = compiled.errors;
      return valid;
    };
    validate.errors = null as ValidateFunction['errors'];
    return validate;
  });
  app.setSerializerCompiler(({ schema }) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data) => (serialize ??= buildSerializer(schema as Parameters<typeof buildSerializer>[0]))(data);
  });

  // An empty body with Content-Type: application/json is no body at all (stop, execute).
  // JSON is the only body type (415 for anything else).
  const jsonParser = app.getDefaultJsonParser('error', 'ignore');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = body.toString();
    if (text.trim() === '') return done(null, undefined);
    jsonParser(req, text, done);
  });

  // Callback-style hooks on the hot path: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-ID', request.id);
    done();
  });
  registerErrorHandling(app);
  registerIdempotency(app);
  registerAuth(app, { accounts: deps.accounts, adminKey: deps.config.adminKey, limiter: deps.store.shared
      ? new StoreRateLimiter(deps.store, deps.config.rateLimitPerMin)
      : new MemoryRateLimiter(deps.config.rateLimitPerMin),
  });

  await registerOpenApi(app, deps.config.publicUrl);

  const routes: { url: string; method: string | string[] }[] = [];
  app.addHook('onRoute', (route) => {
    // The rendered reference is public, like /openapi.json.
    if (route.url.startsWith('/docs')) {
      route.config = { ...route.config, auth: 'none' };
      return;
    }
    if (!route.config?.methodNotAllowed) routes.push({ url: route.url, method: route.method });
  });

  await app.register(healthRoutes);
  // A worker node runs turns and cron only; it answers nothing but its health probes.
  if (deps.config.role !== 'worker') {
    await app.register(metaRoutes);
    await app.register(taskRoutes);
    await app.register(outputRoutes);
    await app.register(uploadRoutes);
    await app.register(adminRoutes);
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
    app.get('/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async () => app.swagger());
  }

  await app.register(async (scope) => registerMethodNotAllowed(scope, routes));
  return app;
}

