/**
 * The one catalogue of errors Quarry answers with (interface §7). Every error body and every
 * turn's `error` event is built from an entry here; routes and modules throw QuarryError (or,
 * inside a turn, build a turnError) and never write an error body by hand.
 */

export interface ErrorDetail {
  type: string;
  loc: (string | number)[];
  msg: string;
}

interface CatalogueEntry {
  /** The HTTP status; null for codes that only a turn's `error` event carries. */
  status: number | null;
  error: string;
  retryable: boolean;
  message: string;
}

/** Keyed by a name for the case; `error` is the stable wire code (two cases may share one). */
export const ERROR_CATALOGUE = {
  invalid_request: { status: 400, error: 'invalid_request', retryable: false, message: 'The request was rejected.' },
  validation_failed: { status: 422, error: 'invalid_request', retryable: false, message: 'A field failed validation.' },
  unauthorized: { status: 401, error: 'unauthorized', retryable: false, message: 'Credentials are missing or invalid: send X-API-Key or Authorization: Bearer.' },
  out_of_credits: { status: 402, error: 'out_of_credits', retryable: false, message: 'The account has no credits left: add credits, then resend.' },
  origin_not_allowed: { status: 403, error: 'origin_not_allowed', retryable: false, message: 'Requests from this web origin are not accepted here.' },
  task_not_found: { status: 404, error: 'task_not_found', retryable: false, message: 'No task with that id.' },
  source_not_found: { status: 404, error: 'source_not_found', retryable: false, message: 'No source snapshot with that id for this task.' },
  group_not_found: { status: 404, error: 'group_not_found', retryable: false, message: 'No task group with that id.' },
  webhook_not_found: { status: 404, error: 'webhook_not_found', retryable: false, message: 'No webhook endpoint with that id.' },
  delivery_not_found: { status: 404, error: 'delivery_not_found', retryable: false, message: 'No delivery with that id for this endpoint.' },
  not_found: { status: 404, error: 'not_found', retryable: false, message: 'No such route.' },
  method_not_allowed: { status: 405, error: 'method_not_allowed', retryable: false, message: 'Wrong method for this route.' },
  request_timeout: { status: 408, error: 'request_timeout', retryable: true, message: 'The request did not arrive in time: send it again, whole.' },
  task_executing: { status: 409, error: 'task_executing', retryable: true, message: 'A turn is running: poll /state until active is false, then resend.' },
  task_in_cron_mode: { status: 409, error: 'task_in_cron_mode', retryable: false, message: 'The task runs on a schedule and takes no messages.' },
  task_exists: { status: 409, error: 'task_exists', retryable: false, message: 'A task with that task_id already exists: continue it instead.' },
  webhook_limit_reached: { status: 409, error: 'webhook_limit_reached', retryable: false, message: 'The account has as many webhook endpoints as it may: delete one first.' },
  payload_too_large: { status: 413, error: 'payload_too_large', retryable: false, message: 'The body is too large: send large inputs via POST /upload-url.' },
  unsupported_media_type: { status: 415, error: 'unsupported_media_type', retryable: false, message: 'The body must be JSON with Content-Type: application/json.' },
  expectation_failed: { status: 417, error: 'invalid_request', retryable: false, message: 'The Expect header asks for something other than 100-continue.' },
  rate_limited: { status: 429, error: 'rate_limited', retryable: true, message: 'Too many requests for this key.' },
  headers_too_large: { status: 431, error: 'invalid_request', retryable: false, message: 'The request line and headers are too large.' },
  internal_error: { status: 500, error: 'internal_error', retryable: true, message: 'Something went wrong on our side.' },
  bad_gateway: { status: 502, error: 'bad_gateway', retryable: true, message: 'An upstream service failed: resend shortly.' },
  service_unavailable: { status: 503, error: 'service_unavailable', retryable: true, message: 'Task state cannot be read right now.' },
  at_capacity: { status: 503, error: 'at_capacity', retryable: true, message: 'Too many turns are waiting to run.' },
  auth_unavailable: { status: 503, error: 'auth_unavailable', retryable: true, message: 'Key verification is unavailable right now.' },
  limit_reached: { status: null, error: 'limit_reached', retryable: false, message: "The turn hit one of the spec's limits." },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorName = keyof typeof ERROR_CATALOGUE;
type Catalogue = typeof ERROR_CATALOGUE;
/** The cases an HTTP answer can carry. */
export type HttpErrorName = { [K in ErrorName]: Catalogue[K]['status'] extends number ? K : never }[ErrorName];
/** Every stable wire code, in catalogue order without repeats. */
export const ERROR_CODES = [...new Set(Object.values(ERROR_CATALOGUE).map((e) => e.error))] as Catalogue[ErrorName]['error'][];
export type ErrorCode = Catalogue[ErrorName]['error'];

/** How a turn failed, as its `error` event and the turn record carry it. */
export interface TurnError {
  error: ErrorCode;
  message: string;
  retryable: boolean;
}

/** A turn's failure from the catalogue: the code and retryable come from the entry, the message says what happened. */
export function turnError(name: ErrorName, message?: string): TurnError {
  const entry: CatalogueEntry = ERROR_CATALOGUE[name];
  return { error: entry.error as ErrorCode, message: message ?? entry.message, retryable: entry.retryable };
}

export interface ErrorExtras {
  param?: string;
  detail?: ErrorDetail[];
  task_id?: string;
  task_created?: boolean;
  retry_after?: number;
  resolve?: string;
  /** Extra headers, e.g. Allow on 405. */
  headers?: Record<string, string>;
}

export class QuarryError extends Error {
  readonly name = 'QuarryError';
  readonly entry: CatalogueEntry;
  readonly extras: ErrorExtras;

  constructor(name: HttpErrorName, message?: string, extras: ErrorExtras = {}) {
    const entry = ERROR_CATALOGUE[name];
    super(message ?? entry.message);
    this.entry = entry;
    this.extras = extras;
  }

  get status(): number { return this.entry.status!; }
  get code(): ErrorCode { return this.entry.error as ErrorCode; }
  get retryable(): boolean { return this.entry.retryable; }

  /** The JSON error body of interface §7 (request_id is added by the HTTP layer). */
  toBody(requestId: string): Record<string, unknown> {
    const { headers: _headers, ...extras } = this.extras;
    const body: Record<string, unknown> = { error: this.code, message: this.message, retryable: this.retryable, request_id: requestId };
    for (const [k, v] of Object.entries(extras)) if (v !== undefined) body[k] = v;
    return body;
  }

  static validation(param: string, message: string, detail?: ErrorDetail[]): QuarryError {
    return new QuarryError('validation_failed', message, {
      param,
      detail: detail ?? [{ type: 'value_error', loc: ['body', ...param.split('.')], msg: message }],
    });
  }

  static taskNotFound(taskId: string, extras: ErrorExtras = {}): QuarryError {
    return new QuarryError('task_not_found', `No task with task_id "${taskId}".`, { task_id: taskId, ...extras });
  }
}
