/**
 * When to resend and how long to wait first (docs/api.md, Retries): only errors whose body says
 * `retryable: true` (or failures where no answer arrived), after `retry_after` seconds when the
 * server names them, else after an exponential backoff with jitter.
 */
import { QuarryAbortError, type QuarryError } from '../errors.js';

export interface BackoffOptions {
  /** First backoff, doubled on every retry. */
  baseDelayMs: number;
  /** Backoffs never exceed this (a server's `retry_after` always wins). */
  maxDelayMs: number;
}

/**
 * Exponential backoff with jitter: `base * 2^attempt`, capped, minus up to 25% so that clients
 * that failed together do not come back together.
 */
export function backoffMs(attempt: number, opts: BackoffOptions): number {
  const ceiling = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
  return Math.round(ceiling * (1 - Math.random() * 0.25));
}

/**
 * How long to wait before resending after `error`. A `retry_after` is honoured in full, plus a
 * little jitter on top (up to 10%, at most 1 s) so that a crowd told "wait 5 s" does not return
 * in the same millisecond.
 */
export function retryDelayMs(error: QuarryError, attempt: number, opts: BackoffOptions): number {
  if (error.retry_after !== undefined && error.retry_after >= 0) {
    const wait = error.retry_after * 1000;
    return Math.round(wait + Math.random() * Math.min(1000, wait * 0.1));
  }
  return backoffMs(attempt, opts);
}

/** Waits `ms`, or throws QuarryAbortError as soon as `signal` fires. */
export function sleep(ms: number, signal?: AbortSignal, requestId?: string): Promise<void> {
  if (signal?.aborted) return Promise.reject(new QuarryAbortError({ request_id: requestId, cause: signal.reason }));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new QuarryAbortError({ request_id: requestId, cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
