/** Options of a single call, and the `fetch` the client uses. */

/**
 * The `fetch` the client calls; any WHATWG-compatible implementation works.
 *
 * @example
 * ```ts
 * const logged: Fetch = async (url, init) => {
 *   const res = await fetch(url, init);
 *   console.log(init.method, url, res.status);
 *   return res;
 * };
 * const client = new QuarryClient({ fetch: logged });
 * ```
 */
export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/**
 * Options every call takes as its last argument.
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * await client.tasks.list({ limit: 20 }, { signal: ac.signal, maxRetries: 0, timeoutMs: 5_000 });
 * ```
 */
export interface RequestOptions {
  /** Aborts the call (every attempt, any wait between attempts, and a stream's reading). */
  signal?: AbortSignal;
  /** Per-attempt timeout in ms, up to the response head for streams and exports. */
  timeoutMs?: number;
  /** Retries after the first attempt (so at most `maxRetries + 1` attempts). */
  maxRetries?: number;
  /** The X-Request-ID to send (1-64 of `A-Z a-z 0-9 _ . : -`); one is made up otherwise. */
  requestId?: string;
  /** Idempotency-Key for creates, continue and execute; one is made up per call otherwise. */
  idempotencyKey?: string;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}
