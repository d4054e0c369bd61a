/**
 * Sends one call to Quarry: builds the URL and headers, applies the per-attempt timeout and the
 * caller's AbortSignal, and resends by the retry rule with the same X-Request-ID (and, on routes
 * that take one, the same Idempotency-Key) on every attempt. Resources build on this; nothing
 * here knows about tasks.
 */
import {
  AuthenticationError, ConnectionError, ConnectionTimeoutError, QuarryAbortError, QuarryError, errorFromResponse,
} from '../errors.js';
import type { Fetch, RequestOptions } from '../request-options.js';
import { anySignal } from './any-signal.js';
import { retryDelayMs, sleep, type BackoffOptions } from './retry.js';

/** How a route is called. */
export interface RouteCall {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A path below the base URL, already percent-encoded; or an absolute URL (signed uploads). */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is (uploads); must be re-readable for retries (not a one-shot stream). */
  body?: Blob | Uint8Array | string;
  /** Which credential to send. */
  auth: 'key' | 'admin' | 'none';
  /** The route takes an Idempotency-Key; the client then sends one and may resend freely. */
  idempotencyKey?: boolean;
  /**
   * Whether resending after a failure where no answer arrived (a dropped connection, a timeout)
   * is safe. True for reads and idempotent writes; false for writes that could take effect twice.
   */
  resendable: boolean;
  /** A 500 carrying `task_id` means the task was created: such an answer is not resent. */
  createsTask?: boolean;
  accept?: string;
  /** Resolve at the response head (streams and exports); the body is read by the caller. */
  streaming?: boolean;
  headers?: Record<string, string>;
}

export interface TransportOptions extends BackoffOptions {
  baseURL: string;
  apiKey: string | undefined;
  adminKey: string | undefined;
  fetch: Fetch;
  maxRetries: number;
  timeoutMs: number;
  defaultHeaders: Record<string, string>;
}

/** The answer of a call that succeeded. */
export interface CallResult {
  response: Response;
  /** The body as text (empty for streaming calls). */
  text: string;
  requestId: string;
}

/** `qc_` and 32 hex digits: valid as an X-Request-ID (1-64 of `A-Z a-z 0-9 _ . : -`). */
function newRequestId(): string {
  return `qc_${globalThis.crypto.randomUUID().replace(/-/g, '')}`;
}

export class Transport {
  constructor(readonly options: TransportOptions) {}

  /** Sends `call` by the retry rule; resolves with the successful answer or throws a QuarryError. */
  async send(call: RouteCall, opts: RequestOptions = {}): Promise<CallResult> {
    const requestId = opts.requestId ?? newRequestId();
    const idempotencyKey = call.idempotencyKey ? (opts.idempotencyKey ?? `idem_${globalThis.crypto.randomUUID()}`) : undefined;
    const maxRetries = Math.max(0, opts.maxRetries ?? this.options.maxRetries);
    const url = this.url(call);
    const init = this.init(call, opts, requestId, idempotencyKey);
    const resendable = call.resendable || idempotencyKey !== undefined;

    for (let attempt = 0; ; attempt++) {
      if (opts.signal?.aborted) throw new QuarryAbortError({ request_id: requestId, cause: opts.signal.reason });
      let outcome: CallResult | QuarryError;
      try {
        outcome = await this.attempt(url, init, call, opts, requestId);
      } catch (err) {
        if (err instanceof QuarryAbortError) throw err;
        outcome = err instanceof QuarryError ? err : new ConnectionError(`Could not reach ${new URL(url).origin}: ${describeFailure(err)}`, { cause: err, request_id: requestId });
      }
      if (!(outcome instanceof QuarryError)) return outcome;
      const noAnswer = outcome.status === undefined;
      const mayResend = outcome.retryable
        && (!noAnswer || resendable)
        && !(call.createsTask && outcome.error === 'internal_error' && outcome.task_id !== undefined);
      if (!mayResend || attempt >= maxRetries) throw outcome;
      await sleep(retryDelayMs(outcome, attempt, this.options), opts.signal, requestId);
    }
  }

  /** Sends `call` and parses the JSON answer. */
  async json<T>(call: RouteCall, opts?: RequestOptions): Promise<T> {
    const { text } = await this.send(call, opts);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Builds the full URL of a call. */
  url(call: Pick<RouteCall, 'path' | 'query'>): string {
    const absolute = /^https?:\/\//i.test(call.path);
    const url = new URL(absolute ? call.path : this.options.baseURL + call.path);
    for (const [k, v] of Object.entries(call.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    return url.toString();
  }

  private init(call: RouteCall, opts: RequestOptions, requestId: string, idempotencyKey: string | undefined): RequestInit {
    const headers: Record<string, string> = {
      accept: call.accept ?? 'application/json',
      ...this.options.defaultHeaders,
      ...call.headers,
      ...opts.headers,
      'x-request-id': requestId,
    };
    if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
    if (call.auth !== 'none') {
      const key = call.auth === 'admin' ? this.options.adminKey : this.options.apiKey;
      if (!key) {
        const which = call.auth === 'admin' ? 'adminKey (or QUARRY_ADMIN_KEY)' : 'apiKey (or QUARRY_API_KEY)';
        throw new AuthenticationError({ error: 'unauthorized', message: `No credentials: set ${which}.`, retryable: false, request_id: requestId });
      }
      headers.authorization = `Bearer ${key}`;
    }
    let body: RequestInit['body'];
    if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers['content-type'] = 'application/json';
    } else if (call.body !== undefined) {
      body = call.body as RequestInit['body'];
    }
    return { method: call.method, headers, body };
  }

  /** One attempt: fetch, and (unless streaming) read the body, all within the attempt's timeout. */
  private async attempt(url: string, init: RequestInit, call: RouteCall, opts: RequestOptions, requestId: string): Promise<CallResult | QuarryError> {
    const timeoutMs = opts.timeoutMs ?? this.options.timeoutMs;
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), timeoutMs);
    const signal = opts.signal ? anySignal([opts.signal, timer.signal]) : timer.signal;
    try {
      const response = await this.options.fetch(url, { ...init, signal });
      if (!response.ok) {
        const text = await response.text().catch(() => '');
        return errorFromResponse(response.status, response.headers, text, requestId);
      }
      const text = call.streaming ? '' : await response.text();
      return { response, text, requestId };
    } catch (err) {
      if (opts.signal?.aborted) throw new QuarryAbortError({ request_id: requestId, cause: opts.signal.reason });
      if (timer.signal.aborted) return new ConnectionTimeoutError(`No answer from ${new URL(url).origin} within ${timeoutMs} ms.`, { request_id: requestId });
      throw err;
    } finally {
      clearTimeout(timeout);
    }
  }
}

/** `fetch failed (ECONNREFUSED)`: undici hides the reason in `cause`. */
function describeFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  const reason = cause?.code ?? cause?.message;
  return reason && !message.includes(reason) ? `${message} (${reason})` : message;
}
