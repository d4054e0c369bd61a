/**
 * Error classes of the client. Every failure the client throws is a {@link QuarryError}: an error
 * answer of the server becomes the subclass for its `error` code (or, failing that, its status),
 * carrying the body's facts (`error`, `retryable`, `retry_after`, `request_id`, `task_id`…);
 * a network failure is a {@link ConnectionError}; an aborted call a {@link QuarryAbortError}.
 * Branch on the class or on `error`, never on `message`.
 */

import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];

/**
 * One entry of a 422's `detail`.
 *
 * @example
 * ```ts
 * if (err instanceof ValidationError) for (const d of err.detail ?? []) console.error(d.loc.join('.'), d.msg);
 * ```
 */
export type ErrorDetail = NonNullable<Schemas['Error']['detail']>[number];

/**
 * The optional facts an error answer may carry, each also a property of {@link QuarryError}.
 *
 * @example
 * ```ts
 * const facts: ErrorFacts = { retry_after: 2, task_id: 'tsk_…' };
 * ```
 */
export type ErrorFacts = Pick<Schemas['Error'], 'retry_after' | 'resolve' | 'param' | 'detail' | 'task_id' | 'task_created'>;

/**
 * The JSON error body of every Quarry error answer (docs/api.md, Errors).
 *
 * @example
 * ```ts
 * if (err instanceof QuarryError && err.body) console.error(JSON.stringify(err.body));
 * ```
 */
export type ErrorBody = Schemas['Error'] & { [field: string]: unknown };

/** @internal What an error is built from. */
export interface QuarryErrorInit extends ErrorFacts {
  status?: number;
  error: string;
  message: string;
  retryable: boolean;
  request_id?: string;
  body?: ErrorBody;
  headers?: Headers;
  cause?: unknown;
}

/**
 * The base of every error the client throws.
 *
 * @example
 * ```ts
 * try {
 *   await client.tasks.execute(taskId);
 * } catch (err) {
 *   if (err instanceof QuarryError) console.error(err.error, err.message, err.request_id);
 *   throw err;
 * }
 * ```
 */
export class QuarryError extends Error {
  /** HTTP status; undefined when no answer arrived (network failure, abort). */
  readonly status: number | undefined;
  /** Stable snake_case code: `task_executing`, `rate_limited`, `connection_error`… */
  readonly error: string;
  /** True when the same request may succeed later. */
  readonly retryable: boolean;
  /** The request's `X-Request-ID` (the same on every retry of one call). */
  readonly request_id: string | undefined;
  /** Seconds the server asked to wait (429 and 503). */
  readonly retry_after: number | undefined;
  /** Where to fix the cause (402). */
  readonly resolve: string | undefined;
  /** The field that failed validation (422). */
  readonly param: string | undefined;
  /** The validator's output (422). */
  readonly detail: ErrorDetail[] | undefined;
  /** The task the error refers to. On a 500 it means the task exists: continue it. */
  readonly task_id: string | undefined;
  /** `false` on a refused create: no task exists. */
  readonly task_created: boolean | undefined;
  /** The whole error body, as sent. */
  readonly body: ErrorBody | undefined;
  /** The answer's headers. */
  readonly headers: Headers | undefined;

  constructor(init: QuarryErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.error = init.error;
    this.retryable = init.retryable;
    this.request_id = init.request_id;
    this.retry_after = init.retry_after;
    this.resolve = init.resolve;
    this.param = init.param;
    this.detail = init.detail;
    this.task_id = init.task_id;
    this.task_created = init.task_created;
    this.body = init.body;
    this.headers = init.headers;
  }
}

/**
 * 400 `invalid_request`: the request was rejected (e.g. the body is not JSON).
 *
 * @example
 * ```ts
 * if (err instanceof InvalidRequestError) console.error(err.param ?? '', err.message);
 * ```
 */
export class InvalidRequestError extends QuarryError {}

/**
 * 422 `invalid_request`: a field failed validation; see `param` and `detail`.
 *
 * @example
 * ```ts
 * if (err instanceof ValidationError) console.error(`fix ${err.param}: ${err.message}`);
 * ```
 */
export class ValidationError extends InvalidRequestError {}

/**
 * 401 `unauthorized`: the key is missing, unknown or revoked.
 *
 * @example
 * ```ts
 * if (err instanceof AuthenticationError) console.error('check QUARRY_API_KEY');
 * ```
 */
export class AuthenticationError extends QuarryError {}

/**
 * 402 `out_of_credits`: no turn started; add credits (`resolve`), then resend.
 *
 * @example
 * ```ts
 * if (err instanceof OutOfCreditsError) console.error(`add credits at ${err.resolve}`);
 * ```
 */
export class OutOfCreditsError extends QuarryError {}

/**
 * 404 `not_found`: no such route, output, account or key; also `webhook_not_found` and
 * `delivery_not_found` (no such webhook endpoint, or no such delivery of it).
 *
 * @example
 * ```ts
 * if (err instanceof NotFoundError) console.error('no such thing:', err.message);
 * ```
 */
export class NotFoundError extends QuarryError {}

/**
 * 404 `task_not_found`: no task with that id for this account (or it was deleted).
 *
 * @example
 * ```ts
 * if (err instanceof TaskNotFoundError) console.error(`no task ${err.task_id}`);
 * ```
 */
export class TaskNotFoundError extends NotFoundError {}

/**
 * 405 `method_not_allowed`.
 *
 * @example
 * ```ts
 * if (err instanceof MethodNotAllowedError) console.error(err.headers?.get('allow'));
 * ```
 */
export class MethodNotAllowedError extends QuarryError {}

/**
 * 409: the task's state refuses the request (see the subclasses), or another conflict such as
 * `webhook_limit_reached` (the account has as many webhook endpoints as it may).
 *
 * @example
 * ```ts
 * if (err instanceof ConflictError) console.error(err.error); // task_executing, task_exists, webhook_limit_reached…
 * ```
 */
export class ConflictError extends QuarryError {}

/**
 * 409 `task_executing` (retryable): a turn runs and execute is never queued, or the message
 * queue is full. Wait with `client.tasks.waitForTurn(id)`, then resend.
 *
 * @example
 * ```ts
 * if (err instanceof TaskExecutingError) await client.tasks.waitForTurn(taskId);
 * ```
 */
export class TaskExecutingError extends ConflictError {}

/**
 * 409 `task_in_cron_mode`: the task runs on a schedule and takes no messages.
 *
 * @example
 * ```ts
 * if (err instanceof TaskInCronModeError) await client.tasks.update(taskId, { schedule: null });
 * ```
 */
export class TaskInCronModeError extends ConflictError {}

/**
 * 409 `task_exists`: a create named a `task_id` that is taken; continue that task instead.
 *
 * @example
 * ```ts
 * if (err instanceof TaskExistsError) await client.tasks.continue(err.task_id!, { message });
 * ```
 */
export class TaskExistsError extends ConflictError {}

/**
 * 413 `payload_too_large`: send large inputs with `client.uploads.upload()`.
 *
 * @example
 * ```ts
 * if (err instanceof PayloadTooLargeError) await client.uploads.upload({ data, filename: 'big.csv' });
 * ```
 */
export class PayloadTooLargeError extends QuarryError {}

/**
 * 415 `unsupported_media_type`.
 *
 * @example
 * ```ts
 * if (err instanceof UnsupportedMediaTypeError) console.error(err.message);
 * ```
 */
export class UnsupportedMediaTypeError extends QuarryError {}

/**
 * 429 `rate_limited` (retryable): thrown once the client's retries are used up.
 *
 * @example
 * ```ts
 * if (err instanceof RateLimitedError) console.error(`slow down: ${err.retry_after} s`);
 * ```
 */
export class RateLimitedError extends QuarryError {}

/**
 * 500 `internal_error` (retryable). With `task_id` the task was created: continue it instead of
 * starting another (the client does not resend such a request).
 *
 * @example
 * ```ts
 * if (err instanceof InternalServerError && err.task_id) await client.tasks.continue(err.task_id, { message });
 * ```
 */
export class InternalServerError extends QuarryError {}

/**
 * 502 `bad_gateway` (retryable): an upstream service failed.
 *
 * @example
 * ```ts
 * if (err instanceof BadGatewayError) console.error('upstream failed, try again shortly');
 * ```
 */
export class BadGatewayError extends QuarryError {}

/**
 * 503 `service_unavailable` (retryable), and the base of the other 503 codes.
 *
 * @example
 * ```ts
 * if (err instanceof ServiceUnavailableError) console.error(`retry in ${err.retry_after} s`);
 * ```
 */
export class ServiceUnavailableError extends QuarryError {}

/**
 * 503 `at_capacity` (retryable): too many turns are waiting to run.
 *
 * @example
 * ```ts
 * if (err instanceof AtCapacityError) console.error('the service is busy');
 * ```
 */
export class AtCapacityError extends ServiceUnavailableError {}

/**
 * 503 `auth_unavailable` (retryable): key verification is down for now.
 *
 * @example
 * ```ts
 * if (err instanceof AuthUnavailableError) console.error('cannot check keys right now');
 * ```
 */
export class AuthUnavailableError extends ServiceUnavailableError {}

/**
 * No answer arrived: the connection failed or dropped (retryable).
 *
 * @example
 * ```ts
 * if (err instanceof ConnectionError) console.error('is Quarry running at', client.baseURL, '?');
 * ```
 */
export class ConnectionError extends QuarryError {
  constructor(message: string, opts: { cause?: unknown; request_id?: string; error?: string } = {}) {
    super({ error: opts.error ?? 'connection_error', message, retryable: true, request_id: opts.request_id, cause: opts.cause });
  }
}

/**
 * An attempt took longer than `timeoutMs` (retryable).
 *
 * @example
 * ```ts
 * const client = new QuarryClient({ timeoutMs: 5_000 });
 * ```
 */
export class ConnectionTimeoutError extends ConnectionError {
  constructor(message: string, opts: { request_id?: string } = {}) {
    super(message, { ...opts, error: 'timeout' });
  }
}

/**
 * The caller's `AbortSignal` fired. Never retried.
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * setTimeout(() => ac.abort(), 1000);
 * await client.tasks.list({}, { signal: ac.signal }); // throws QuarryAbortError after 1 s
 * ```
 */
export class QuarryAbortError extends QuarryError {
  constructor(opts: { request_id?: string; cause?: unknown } = {}) {
    super({ error: 'aborted', message: 'The request was aborted.', retryable: false, request_id: opts.request_id, cause: opts.cause });
  }
}

type ErrorClass = new (init: QuarryErrorInit) => QuarryError;

const BY_CODE: Record<string, ErrorClass> = {
  task_not_found: TaskNotFoundError,
  not_found: NotFoundError,
  task_executing: TaskExecutingError,
  task_in_cron_mode: TaskInCronModeError,
  task_exists: TaskExistsError,
  at_capacity: AtCapacityError,
  auth_unavailable: AuthUnavailableError,
  service_unavailable: ServiceUnavailableError,
  out_of_credits: OutOfCreditsError,
  unauthorized: AuthenticationError,
  rate_limited: RateLimitedError,
  bad_gateway: BadGatewayError,
  internal_error: InternalServerError,
  payload_too_large: PayloadTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  method_not_allowed: MethodNotAllowedError,
};

const BY_STATUS: Record<number, ErrorClass> = {
  400: InvalidRequestError,
  401: AuthenticationError,
  402: OutOfCreditsError,
  404: NotFoundError,
  405: MethodNotAllowedError,
  409: ConflictError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  422: ValidationError,
  429: RateLimitedError,
  500: InternalServerError,
  502: BadGatewayError,
  503: ServiceUnavailableError,
};

/** The status of codes that can also arrive inside a stream, as the HTTP answer would carry it. */
const STATUS_OF_CODE: Record<string, number> = {
  out_of_credits: 402,
  task_executing: 409,
  task_in_cron_mode: 409,
  task_exists: 409,
  service_unavailable: 503,
};

function classFor(status: number | undefined, code: string): ErrorClass {
  // invalid_request is shared by 400 and 422: the status decides.
  if (code === 'invalid_request') return status === 422 ? ValidationError : InvalidRequestError;
  return BY_CODE[code] ?? (status !== undefined ? BY_STATUS[status] : undefined) ?? (status !== undefined && status >= 500 ? InternalServerError : QuarryError);
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.error === 'string' && typeof v.message === 'string' && typeof v.retryable === 'boolean';
}

/**
 * @internal
 * Builds the error for an error answer. A body that is not Quarry's (a proxy's HTML page, say)
 * carries no `retryable`; then only 502, 503 and 504 count as retryable, like a dropped connection.
 */
export function errorFromResponse(status: number, headers: Headers, text: string, requestId: string | undefined): QuarryError {
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (isErrorBody(parsed)) {
    const headerWait = Number(headers.get('retry-after'));
    const retryAfter = typeof parsed.retry_after === 'number' ? parsed.retry_after : Number.isFinite(headerWait) && headers.has('retry-after') ? headerWait : undefined;
    return new (classFor(status, parsed.error))({
      status,
      error: parsed.error,
      message: parsed.message,
      retryable: parsed.retryable,
      request_id: parsed.request_id ?? headers.get('x-request-id') ?? requestId,
      retry_after: retryAfter,
      resolve: parsed.resolve,
      param: parsed.param,
      detail: parsed.detail,
      task_id: parsed.task_id,
      task_created: parsed.task_created,
      body: parsed,
      headers,
    });
  }
  const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  return new (classFor(status, ''))({
    status,
    error: `http_${status}`,
    message: `The server answered ${status} without a Quarry error body${snippet ? `: ${snippet}` : ''}.`,
    retryable: status === 502 || status === 503 || status === 504,
    request_id: headers.get('x-request-id') ?? requestId,
    headers,
  });
}

/**
 * @internal
 * Builds the error for an `error` event that refused a request inside its stream (docs/api.md,
 * Refusals inside a stream): the same class the HTTP answer with that code would give.
 */
export function errorFromRefusal(event: { error: string; message: string; retryable: boolean; task_id: string | null }, requestId: string | undefined): QuarryError {
  const status = STATUS_OF_CODE[event.error];
  return new (classFor(status, event.error))({
    status,
    error: event.error,
    message: event.message,
    retryable: event.retryable,
    request_id: requestId,
    task_id: event.task_id ?? undefined,
  });
}
