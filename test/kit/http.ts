/**
 * One JSON-over-HTTP request as the tests and the benchmarks send it: the API key as X-API-Key,
 * a JSON body, and the answer read whole (its text, and its body parsed when it is JSON). Over a
 * real socket (`fetchJson`; `httpClient` for one server), or through a Fastify app's `inject()`,
 * which runs the same routes, hooks and serializers without a socket (`injectRequest`).
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

export interface RequestOptions {
  /** Sent as JSON (with Content-Type application/json unless a content-type header is given). */
  body?: unknown;
  /** Sent as is. */
  rawBody?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Sent as X-API-Key, unless null or the headers carry a key already. */
  key?: string | null;
  /** Over a socket, aborts the request after this long (default 120 s, past any long-poll). */
  timeoutMs?: number;
}

/** Sends one request: the shape every test client and `waitIdle` take. */
export type Send = (method: string, path: string, opts?: RequestOptions) => Promise<TestResponse>;

function prepare(opts: RequestOptions): { headers: Record<string, string>; body: string | Uint8Array | undefined } {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key && headers['x-api-key'] === undefined && headers.authorization === undefined) headers['x-api-key'] = opts.key;
  let body = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  return { headers, body };
}

function answer(status: number, headers: Headers, text: string): TestResponse {
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status, headers, body, text };
}

/** One request over a socket (fetch) to `url`. */
export async function fetchJson(method: string, url: string, opts: RequestOptions = {}): Promise<TestResponse> {
  const { headers, body } = prepare(opts);
  const res = await fetch(url, { method, headers, body: body instanceof Uint8Array ? new Uint8Array(body) : body, signal: AbortSignal.timeout(opts.timeoutMs ?? 120_000) });
  return answer(res.status, res.headers, await res.text());
}

/** One request through `app.inject()`: no socket, the same routes, hooks and serializers. */
export async function injectRequest(app: FastifyInstance, method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> {
  const { headers, body } = prepare(opts);
  const res = await app.inject({ method: method as 'GET', url: path, headers, payload: body instanceof Uint8Array ? Buffer.from(body) : body });
  const h = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) h.append(name, v);
    else if (value !== undefined) h.set(name, String(value));
  }
  return answer(res.statusCode, h, res.body);
}

/** A `Send` for one base URL and key (a key given per request wins). */
export function httpClient(baseUrl: string, key?: string): Send {
  return (method, path, opts = {}) => fetchJson(method, baseUrl + path, { ...opts, key: opts.key === undefined ? key : opts.key });
}

/**
 * Long-polls GET /task/{id}/state?wait=5 until no turn runs (and, with `queueEmpty`, no message
 * waits), bounded by `timeoutMs`. A refused poll fails at once unless `tolerateErrors`.
 */
export async function waitIdle(
  send: Send, taskId: string,
  opts: { key?: string; timeoutMs?: number; queueEmpty?: boolean; tolerateErrors?: boolean } = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  let last: TestResponse | undefined;
  while (Date.now() < deadline) {
    last = await send('GET', `/task/${encodeURIComponent(taskId)}/state?wait=5`, opts.key === undefined ? {} : { key: opts.key });
    if (last.status !== 200) {
      if (opts.tolerateErrors) continue;
      throw new Error(`GET /task/${taskId}/state answered ${last.status}: ${last.text}`);
    }
    if (last.body.active === false && (!opts.queueEmpty || last.body.queued_messages === 0)) return;
  }
  throw new Error(`task ${taskId} did not become idle within ${timeoutMs} ms: ${last?.text}`);
}

/**
 * A 503 as the store's outages answer it: retryable, retry_after in body and header alike.
 * `service_unavailable`, or with `keyed`, either that or `auth_unavailable`: a keyed request
 * reaches its route (service_unavailable) only while its key's check of the last 5 s holds, and
 * how long ago that was is up to the host's speed (docs/durability.md).
 */
export function assertUnavailable(res: TestResponse, what: string, opts: { keyed?: boolean } = {}): void {
  assert.equal(res.status, 503, `${what}: ${res.status} ${res.text}`);
  if (opts.keyed) assert.ok(['service_unavailable', 'auth_unavailable'].includes(res.body.error), `${what}: ${res.text}`);
  else assert.equal(res.body.error, 'service_unavailable', what);
  assert.equal(res.body.retryable, true, what);
  assert.ok(res.body.retry_after >= 1, what);
  assert.equal(String(res.body.retry_after), res.headers.get('retry-after'), what);
}
