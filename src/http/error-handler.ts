/**
 * Turns every failure into the one error body of interface §7: QuarryErrors as they are,
 * Fastify's own refusals (media type, size, JSON syntax, schema validation) mapped onto the
 * catalogue, anything else a 500 without internals. Refusals from below the routes (Node's HTTP
 * parser, request timeouts, Expect, CONNECT) get the same body, written on the socket.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler, preParsingHookHandler } from 'fastify';
import { isClientId, pooledIds } from '../ids.js';
import { QuarryError, type ErrorDetail } from '../errors.js';
import { NO_NUL_PATTERN, NUL_PROBLEM } from '../contract/common.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import { isUndecodableBody } from './content-encoding.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set once a request has created a task, so an unexpected failure afterwards can name it. */
    createdTaskId?: string;
  }
}

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

const LOC_ROOT: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

const TYPE_NAMES: Record<string, (e: AjvError) => string> = {
  required: () => 'missing',
  type: (e) => `${String(e.params.type).split(',')[0]}_type`,
  minLength: () => 'string_too_short',
  maxLength: () => 'string_too_long',
  pattern: () => 'string_pattern_mismatch',
  minimum: () => 'greater_than_equal',
  exclusiveMinimum: () => 'greater_than',
  maximum: () => 'less_than_equal',
  minItems: () => 'too_short',
  maxItems: () => 'too_long',
  const: () => 'literal_error',
  enum: () => 'literal_error',
  anyOf: () => 'union_error',
  additionalProperties: () => 'extra_forbidden',
  uniqueItems: () => 'unique_items',
};

function describe(e: AjvError): string {
  switch (e.keyword) {
    case 'required': return 'is required';
    case 'pattern':
      if (e.params.pattern === NO_NUL_PATTERN) return NUL_PROBLEM;
      return e.instancePath.endsWith('/prompt') || e.instancePath.endsWith('/message') || e.instancePath.endsWith('/instruction')
      ? 'must contain text (not only white space)'
      : `must match the pattern ${String(e.params.pattern)}`;
    case 'const': return `must be ${JSON.stringify(e.params.allowedValue)}`;
    case 'enum': return `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'anyOf': return 'does not match any allowed shape';
    default: return e.message ?? 'is invalid';
  }
}

/** `task.outputs[0].id` from loc `['body','task','outputs',0,'id']`. */
function paramOf(loc: (string | number)[]): string {
  let out = '';
  for (const part of loc.slice(1)) out += typeof part === 'number' ? `[${part}]` : out ? `.${part}` : part;
  return out || loc[0] as string;
}

export function validationError(errors: AjvError[], context: string): QuarryError {
  const detail: ErrorDetail[] = errors.map((e) => {
    const loc: (string | number)[] = [LOC_ROOT[context] ?? context];
    for (const part of e.instancePath.split('/').slice(1)) loc.push(/^\d+$/.test(part) ? Number(part) : part.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (e.keyword === 'required') loc.push(String(e.params.missingProperty));
    return { type: (TYPE_NAMES[e.keyword] ?? (() => e.keyword))(e), loc, msg: describe(e) };
  });
  const first = detail[0]!;
  const param = paramOf(first.loc);
  return new QuarryError('validation_failed', `${param} ${first.msg}`, { param, detail });
}

export function toQuarryError(err: FastifyError & { validation?: AjvError[]; validationContext?: string }): QuarryError | null {
  if (err instanceof QuarryError) return err;
  if (err.validation) return validationError(err.validation, err.validationContext ?? 'body');
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new QuarryError('unsupported_media_type', 'The body must be JSON with Content-Type: application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new QuarryError('invalid_request', 'Content-Length does not match the body.');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new QuarryError('payload_too_large', 'The body is larger than the server accepts: send large inputs via POST /upload-url.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new QuarryError('invalid_request', 'The body is not valid JSON.');
  }
  if (isUndecodableBody(err)) return new QuarryError('invalid_request', `The body is not the ${err.code === 'Z_BUF_ERROR' ? 'complete ' : ''}gzip or deflate data its Content-Encoding says.`);
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    return new QuarryError('invalid_request', 'The body is not valid JSON.');
  }
  if (err.statusCode === 415) return new QuarryError('unsupported_media_type');
  if (err.statusCode === 413) return new QuarryError('payload_too_large');
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return new QuarryError('invalid_request', err.message);
  if (isStoreUnavailable(err)) return new QuarryError('service_unavailable', 'The task store is unavailable right now: wait retry_after seconds, then resend.', { retry_after: 2 });
  return null;
}

export function sendError(reply: FastifyReply, request: FastifyRequest, error: QuarryError): FastifyReply {
  const { headers, retry_after } = error.extras;
  reply.header('X-Request-ID', request.id);
  if (headers) for (const [k, v] of Object.entries(headers)) reply.header(k, v);
  if (retry_after !== undefined) reply.header('Retry-After', String(retry_after));
  if (error.code === 'unauthorized') reply.header('WWW-Authenticate', 'Bearer realm="quarry"');
  return reply.code(error.status).type('application/json; charset=utf-8').send(error.toBody(request.id));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError & { validation?: AjvError[]; validationContext?: string }, request, reply) => {
    const known = isEmptyPathParam(err) ? noRoute(request) : toQuarryError(err);
    if (known) {
      if (known.status >= 500) request.log.warn({ err }, 'request failed: store unavailable');
      else request.log.info({ err: { code: known.code, message: known.message } }, 'request refused');
      return sendError(reply, request, known);
    }
    request.log.error({ err }, 'unexpected failure');
    const taskId = request.createdTaskId;
    const error = new QuarryError('internal_error', taskId
      ? 'Something went wrong after the task was created: continue that task instead of starting another.'
      : 'Something went wrong on our side: resend the request.', taskId ? { task_id: taskId } : {});
    return sendError(reply, request, error);
  });
}

/**
 * The answer to a path no route matches, set in a scope of its own registered after every
 * global hook: `hooks` are those the other routes are given as they are added (body decoding,
 * answer metrics), which onRoute hooks do not reach here.
 */
export function registerNotFound(scope: FastifyInstance, hooks: { preParsing: preParsingHookHandler; onResponse: onResponseHookHandler }): void {
  scope.addHook('preParsing', hooks.preParsing);
  scope.addHook('onResponse', hooks.onResponse);
  scope.setNotFoundHandler((request, reply) => {
    sendError(reply, request, noRoute(request));
  });
}

function noRoute(request: FastifyRequest): QuarryError {
  return new QuarryError('not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
}

/**
 * `/group//rows` and `/task/` match their routes with an empty id, which every path parameter
 * refuses (minLength 1). Such a path names no resource: it is answered as an unknown path (404),
 * not as a request with a bad field (422).
 */
function isEmptyPathParam(err: { validation?: AjvError[]; validationContext?: string }): boolean {
  return err.validationContext === 'params' && (err.validation ?? []).some((e) => e.keyword === 'minLength' && e.params.limit === 1);
}

/**
 * Makes a known path asked with the wrong method a 405 with Allow, not a 404. Registered after
 * every route: it adds a route per path for the methods that path lacks, which the auth hook
 * answers before the body is read (405 comes before 401, 415 and 413).
 */
export function registerMethodNotAllowed(app: FastifyInstance, routes: { url: string; method: string | string[] }[]): void {
  const byPath = new Map<string, Set<string>>();
  for (const r of routes) {
    const set = byPath.get(r.url) ?? new Set<string>();
    for (const m of [r.method].flat()) set.add(m.toUpperCase());
    byPath.set(r.url, set);
  }
  for (const [url, methods] of byPath) {
    // Every method Fastify routes (OPTIONS, TRACE, QUERY and HEAD included); others are 404 anywhere.
    const missing = app.supportedMethods.filter((m) => !methods.has(m));
    if (missing.length === 0) continue;
    const allow = [...methods].filter((m) => m !== 'HEAD').sort().join(', ');
    app.route({
      method: missing,
      url,
      config: { auth: 'none', methodNotAllowed: { allow } },
      // Not an operation of the API: left out of /openapi.json.
      schema: { hide: true },
      // The auth hook answers first; this handler is never reached.
      handler: async () => undefined,
    });
  }
}

// ---- answers below the routes ------------------------------------------------------------------

/**
 * The id each raw request was given, so an answer written on its socket later (a timeout) names
 * the same one. A property of the request rather than a WeakMap entry: a WeakMap set at every
 * request cost more than making the id.
 */
const REQUEST_ID = Symbol('quarry.requestId');
type IdentifiedRequest = IncomingMessage & { [REQUEST_ID]?: string };

/** `req_` and 128 random bits as 32 hex digits. */
const newRequestId = pooledIds('req_', 16);

/** Fastify's genReqId: a valid client X-Request-ID is kept, anything else gets a fresh req_ id. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && isClientId(given) ? given : newRequestId();
  (req as IdentifiedRequest)[REQUEST_ID] = id;
  return id;
}

/** A refusal below the routes: logged as a refused request, and its body and headers, which close the connection. */
function refusal(log: FastifyBaseLogger, error: QuarryError, requestId: string): { body: string; headers: Record<string, string | number> } {
  log.info({ request_id: requestId, err: { code: error.code, message: error.message } }, 'request refused below the routes');
  const body = JSON.stringify(error.toBody(requestId));
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Request-ID': requestId,
    Connection: 'close',
  };
  if (error.extras.retry_after !== undefined) headers['Retry-After'] = error.extras.retry_after;
  return { body, headers };
}

/** The whole HTTP/1.1 answer for a refusal: for sockets Fastify has no reply on. */
function rawAnswer(error: QuarryError, { body, headers }: ReturnType<typeof refusal>): string {
  const head = [`HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status] ?? ''}`, ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  return `${head.join('\r\n')}\r\n\r\n${body}`;
}

/** Sockets already answered: a parser in error answers every later chunk with the same error. */
const answeredSockets = new WeakSet<Duplex>();

/** Writes the answer, then closes: at once when it is out, within a second when the client does not read it. */
function answerAndClose(socket: Duplex, answer: string): void {
  answeredSockets.add(socket);
  const timer = setTimeout(() => socket.destroy(), 1000);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('finish', () => socket.destroy());
  socket.end(answer);
}

interface ClientError extends Error {
  code?: string;
  /** llhttp's description of a parse error, e.g. "Invalid method encountered". */
  reason?: string;
}

function clientErrorOf(err: ClientError): QuarryError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new QuarryError('request_timeout', 'The request (headers and body) did not arrive in time, so the connection is closed: send it again, whole.');
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    return new QuarryError('headers_too_large', `The request line and headers are larger than the ${http.maxHeaderSize} bytes the server accepts.`);
  }
  const reason = typeof err.reason === 'string' && err.reason ? err.reason : 'malformed request';
  return new QuarryError('invalid_request', `The request is not valid HTTP/1.1 (${reason.replace(/\.$/, '')}), so nothing was done.`);
}

/**
 * Fastify's clientErrorHandler: what Node's HTTP parser rejects (bad bytes, Content-Length with
 * Transfer-Encoding, oversized headers) and requests that took too long to arrive. Nothing is
 * written when an answer has already begun on the socket; it is only closed.
 */
export function answerClientError(log: FastifyBaseLogger, err: ClientError, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // The request Fastify is handling on this socket, if any (Node's own clientError logic looks here too).
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
  if (answeredSockets.has(socket) || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const requestId = (inFlight?.req as IdentifiedRequest | undefined)?.[REQUEST_ID] ?? newRequestId();
  const error = clientErrorOf(err);
  answerAndClose(socket, rawAnswer(error, refusal(log, error, requestId)));
}

/** Node's 'checkExpectation': an Expect other than 100-continue (which Node answers itself). */
export function refuseExpectation(log: FastifyBaseLogger, req: IncomingMessage, res: ServerResponse): void {
  const error = new QuarryError('expectation_failed', 'Only Expect: 100-continue is supported: send the request without this Expect header.');
  const { body, headers } = refusal(log, error, requestIdOf(req));
  // The client may be holding its body back: close rather than read what comes next as a request.
  res.writeHead(error.status, headers);
  res.end(body);
}

/** Node's 'connect': Quarry is no proxy, and a CONNECT has no path a route could match. */
export function refuseConnect(log: FastifyBaseLogger, req: IncomingMessage, socket: Duplex): void {
  const error = new QuarryError('invalid_request', 'CONNECT is not supported: Quarry is not a proxy.');
  answerAndClose(socket, rawAnswer(error, refusal(log, error, requestIdOf(req))));
}
