/**
 * The HTTP application: Fastify with our request gate, error catalogue, JSON parsing rules,
 * validation and routes. Built from already-constructed services so tests and the process
 * entry point assemble it the same way (see src/server.ts).
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swaggerUi from '@fastify/swagger-ui';
import type { ValidateFunction } from 'ajv';
import buildSerializer from 'fast-json-stringify';
import type { Logger } from 'pino';
import type { Accounts } from './accounts/accounts.js';
import type { Config } from './config.js';
import type { EventFollower } from './events/event-follower.js';
import type { ScrapableMetrics } from './metrics/metrics.js';
import type { IdempotencyRecords } from './tasks/idempotency-records.js';
import type { TaskCommands } from './tasks/task-commands.js';
import type { TaskQueries } from './tasks/task-queries.js';
import type { Uploads } from './uploads/uploads.js';
import type { Webhooks } from './webhooks/webhooks.js';
import type { GroupService } from './groups/group-service.js';
import { registerAuth } from './http/auth.js';
import { registerContentDecoding } from './http/content-encoding.js';
import { registerCors } from './http/cors.js';
import { QuarryError } from './errors.js';
import { answerClientError, refuseConnect, refuseExpectation, registerErrorHandling, registerMethodNotAllowed, registerNotFound, requestIdOf, sendError } from './http/error-handler.js';
import { registerIdempotency } from './http/idempotency.js';
import { registerOpenApi } from './http/openapi.js';
import { registerRequestMetrics } from './http/request-metrics.js';
import { requestLoggers } from './http/request-logger.js';
import { MemoryRateLimiter, StoreRateLimiter, type RateWindows } from './http/rate-limiter.js';
import { accountRoutes } from './http/routes/account.js';
import { adminRoutes } from './http/routes/admin.js';
import { consoleRoutes } from './http/routes/console.js';
import { healthRoutes, metaRoutes } from './http/routes/meta.js';
import { metricsRoutes } from './http/routes/metrics.js';
import { outputRoutes } from './http/routes/outputs.js';
import { taskRoutes } from './http/routes/tasks.js';
import { uploadRoutes } from './http/routes/uploads.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { groupRoutes } from './http/routes/groups.js';
import { schemaValidator } from './domain/json-schema.js';
import { guardMcpOrigins, mcpRoutes } from './frontends/mcp/mcp-routes.js';
import { a2aRoutes } from './frontends/a2a/a2a-routes.js';

export interface AppDeps {
  config: Config;
  logger: Logger;
  /** Follows a task's or a group's stored events: every stream and long-poll waits through it. */
  events: EventFollower;
  /** The write side of tasks: every change a route makes goes through it. */
  commands: TaskCommands;
  /** The read side of tasks, and which tasks an account sees. */
  queries: TaskQueries;
  accounts: Accounts;
  uploads: Uploads;
  /** Webhook endpoints and their deliveries. */
  webhooks: Webhooks;
  /** The Idempotency-Key records the edge replays answers from. */
  idempotency: IdempotencyRecords;
  /** Task groups: every change and read of a group. */
  groups: GroupService;
  /** The operator's metrics: requests and streams are counted here, `GET /metrics` shows them all. */
  metrics: ScrapableMetrics;
  /** Whether the workers are ready (GET /readyz). */
  ready: () => boolean;
  /** Resolves once the store answers a trivial query (GET /readyz). */
  pingStore: () => Promise<void>;
  /** The per-minute request counts that processes sharing a database keep there; null: this process counts alone, in memory. */
  rateWindows: RateWindows | null;
}

declare module 'fastify' {
  interface FastifyInstance {
    deps: AppDeps;
  }
}


/**
 * How deep a JSON body may nest. Above any shape the contract accepts (free-form JSON inside a
 * body, such as a records schema, is held to 64 levels of its own): deeper bodies are refused
 * before parsing, so no code that walks a body recursively (serializing it for the idempotency
 * fingerprint, say) can run out of stack.
 */
const MAX_BODY_DEPTH = 100;

/** Whether JSON text opens more than `max` objects or arrays inside each other (brackets within strings do not count). */
function nestsDeeperThan(text: string, max: number): boolean {
  // Nesting deeper than `max` needs more than `max` characters.
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const requestTimeoutMs = deps.config.requestTimeoutSeconds * 1000;
  // Node's default for headers, but never longer than the whole request may take.
  const headersTimeoutMs = Math.min(60_000, requestTimeoutMs);
  const app = Fastify({
    loggerInstance: requestLoggers(deps.logger as FastifyBaseLogger),
    bodyLimit: deps.config.maxBodyBytes,
    // Request ids: a valid client X-Request-ID is kept, anything else gets a fresh req_ id.
    genReqId: requestIdOf,
    // Receiving a whole request (headers and body) is bounded, so a client that never finishes
    // its body cannot hold a connection for ever. It ends when the request has arrived: answers,
    // long polls and event streams are not limited by it.
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      // How often Node looks for requests past their time: a fraction of it, so one is cut close to it.
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(headersTimeoutMs / 4))),
      // An HTTP/1.1 request without Host is refused by the first onRequest hook, with our error body.
      requireHostHeader: false,
    },
    // What Node's HTTP parser rejects, and requests past their time, get our error body too.
    clientErrorHandler(err, socket) {
      answerClientError(deps.logger as FastifyBaseLogger, err, socket);
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
  app.server.on('checkExpectation', (req, res) => refuseExpectation(deps.logger as FastifyBaseLogger, req, res));
  app.server.on('connect', (req, socket) => refuseConnect(deps.logger as FastifyBaseLogger, req, socket));

  // Validators and serializers are compiled on a route's first use, not at start: the contract
  // declares every answer of every route (hundreds of schemas), and compiling them all up front
  // cost seconds at every start of a process.
  const bodyAjv = schemaValidator('body');
  const queryAjv = schemaValidator('query');
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : queryAjv;
    let compiled: ValidateFunction | undefined;
    // Fastify reads `errors` only after a failure: a pass stores nothing.
    const validate = (data: unknown) => {
      compiled ??= ajv.compile(schema);
      const valid = compiled(data);
      if (!valid) validate.errors = compiled.errors;
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
    if (nestsDeeperThan(text, MAX_BODY_DEPTH)) {
      return done(new QuarryError('validation_failed', `The body nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep.`, { param: 'body' }), undefined);
    }
    jsonParser(req, text, done);
  });

  // Callback-style hooks on the hot path: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    // Lower case, as Fastify keeps header names (it would lower-case the name at every request).
    reply.header('x-request-id', request.id);
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') {
      sendError(reply, request, new QuarryError('invalid_request', 'HTTP/1.1 requests need a Host header.', { headers: { Connection: 'close' } }));
      return;
    }
    done();
  });
  const decodeBody = registerContentDecoding(app);
  const countUnmatched = registerRequestMetrics(app, deps.metrics);
  registerErrorHandling(app);
  // Before the request gate: a preflight carries no key, and refusals need the CORS headers
  // for a browser to let its script read them.
  if (deps.config.corsOrigins.length > 0) await registerCors(app, deps.config.corsOrigins);
  registerIdempotency(app);
  guardMcpOrigins(app, deps.config);
  // Before the request gate, which picks each route's gate from its config as the route is added.
  const routes: { url: string; method: string | string[] }[] = [];
  app.addHook('onRoute', (route) => {
    // The rendered reference is public, like /openapi.json.
    if (route.url.startsWith('/docs')) {
      route.config = { ...route.config, auth: 'none' };
      return;
    }
    if (!route.config?.methodNotAllowed) routes.push({ url: route.url, method: route.method });
  });
  registerAuth(app, { accounts: deps.accounts, adminKey: deps.config.adminKey, limiter: deps.rateWindows
      ? new StoreRateLimiter(deps.rateWindows, deps.config.rateLimitPerMin)
      : new MemoryRateLimiter(deps.config.rateLimitPerMin),
  });

  await registerOpenApi(app, deps.config.publicUrl);

  await app.register(healthRoutes);
  await app.register(metricsRoutes);
  // A worker node runs turns and cron only; it answers nothing but its health probes and metrics.
  if (deps.config.role !== 'worker') {
    await app.register(metaRoutes);
    await app.register(accountRoutes);
    await app.register(taskRoutes);
    await app.register(outputRoutes);
    await app.register(uploadRoutes);
    await app.register(groupRoutes);
    await app.register(webhookRoutes);
    await app.register(mcpRoutes);
    await app.register(a2aRoutes);
    await app.register(adminRoutes);
    await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
    await app.register(consoleRoutes);
    app.get('/openapi.json', { config: { auth: 'none' }, schema: { hide: true } }, async () => app.swagger());
  }

  await app.register(async (scope) => registerMethodNotAllowed(scope, routes));
  await app.register(async (scope) => registerNotFound(scope, { preParsing: decodeBody, onResponse: countUnmatched }));
  return app;
}

