/**
 * How long to wait before trying again, for every retry Quarry makes: a model call that failed
 * (agent/agent-loop.ts), a store write during an outage (engine/), a webhook delivery
 * (webhooks/dispatcher.ts), the cluster link's listening connection (store/postgres). Each use
 * holds a policy of its own (its base, cap, schedule and number of tries, some fixed by the docs);
 * how a wait is derived from them is decided here, once:
 *
 * - the wait before retry n grows exponentially (`baseMs · factor^(n-1)`, at most `capMs`), or
 *   follows an explicit schedule (`delaysMs`, whose last wait repeats);
 * - with `jitter: 'full'` the wait is drawn uniformly between 0 and that, so that many callers
 *   that failed together (every turn of a worker when the database restarts) do not come back
 *   together;
 * - a `retry_after` the other side sent (HTTP `Retry-After`, `retry-after-ms`) takes precedence
 *   over the computed wait, unless it asks for longer than the use waits at all.
 *
 * - a rate-limited answer (HTTP 429) is no failed try (`spendsATry`): the caller waits its place
 *   under the provider's limits (agent/providers/provider-gate.ts) and tries again, its retries
 *   untouched, however many 429s it meets before its deadline.
 *
 * No clock and no sleeping here: callers wait the answer out themselves, and tests pass their own
 * random source.
 */

export interface RetryPolicyOptions {
  /** The wait before the first retry, in ms; multiplied by `factor` for each retry after it. */
  baseMs?: number;
  /** Growth per retry (default 2; 1 keeps the wait fixed). */
  factor?: number;
  /** The longest computed wait (default none). A `retry_after` is not cut to it. */
  capMs?: number;
  /** An explicit schedule instead of base and factor: the waits before retry 1, 2, …; the last repeats. */
  delaysMs?: readonly number[];
  /** Retries after the first try; unlimited when left out. */
  retries?: number;
  /** `full` (default): a wait drawn uniformly from [0, computed]; `none`: the computed wait itself. */
  jitter?: 'full' | 'none';
  /**
   * How a `retry_after` is used: it `replaces` the computed wait (default), or the wait is the
   * longer of the two (`at-least`, where the docs promise a schedule that a server may only lengthen).
   */
  retryAfter?: 'replaces' | 'at-least';
  /** The longest `retry_after` honoured: asking for more ends the retries (`retry_after_too_long`). */
  maxRetryAfterMs?: number;
}

/** Whether to try again, and after how long. */
export type RetryDecision =
  | { retry: true; delayMs: number }
  | { retry: false; reason: 'exhausted' | 'retry_after_too_long' };

export class RetryPolicy {
  private readonly baseMs: number;
  private readonly factor: number;
  private readonly capMs: number;

  constructor(private readonly opts: RetryPolicyOptions, private readonly random: () => number = Math.random) {
    if (opts.delaysMs?.length === 0 && opts.retries !== 0) throw new Error('a retry schedule needs at least one wait');
    this.baseMs = opts.baseMs ?? 0;
    this.factor = opts.factor ?? 2;
    this.capMs = opts.capMs ?? Infinity;
  }

  /** Whether a failure with this HTTP status counts against the retries: a 429 does not (see above). */
  static spendsATry(status: number | undefined): boolean {
    return status !== 429;
  }

  /** The retries this policy allows after the first try (Infinity: no limit). */
  get retries(): number {
    return this.opts.retries ?? Infinity;
  }

  /**
   * Whether retry `retry` (1 = the retry after the first failure) may be made, and the wait
   * before it; `retryAfterMs` is the wait the failure asked for, when it named one.
   */
  next(retry: number, retryAfterMs?: number): RetryDecision {
    if (retry > this.retries) return { retry: false, reason: 'exhausted' };
    if (retryAfterMs !== undefined && retryAfterMs > (this.opts.maxRetryAfterMs ?? Infinity)) return { retry: false, reason: 'retry_after_too_long' };
    return { retry: true, delayMs: this.delay(retry, retryAfterMs) };
  }

  /** The wait before retry `retry` (1-based), the number of retries left aside. */
  delay(retry: number, retryAfterMs?: number): number {
    const drawn = this.opts.jitter === 'none' ? this.scheduled(retry) : this.random() * this.scheduled(retry);
    if (retryAfterMs === undefined) return drawn;
    return this.opts.retryAfter === 'at-least' ? Math.max(drawn, retryAfterMs) : retryAfterMs;
  }

  /**
   * For a schedule followed by the time since the retries began rather than by counting them
   * (webhook deliveries, see docs/webhooks.md): the retry whose wait, counting the waits before
   * it, still ends after `elapsedMs`; the last one once all have passed.
   */
  retryAt(elapsedMs: number): number {
    let passed = 0;
    const last = this.opts.delaysMs?.length ?? Infinity;
    for (let retry = 1; retry < last; retry++) {
      passed += this.scheduled(retry);
      if (passed > elapsedMs) return retry;
    }
    return last;
  }

  /** The wait before retry `retry` without jitter: from the schedule, or grown from the base up to the cap. */
  private scheduled(retry: number): number {
    const { delaysMs } = this.opts;
    if (delaysMs) return Math.min(this.capMs, delaysMs[Math.min(retry, delaysMs.length) - 1]!);
    return Math.min(this.capMs, this.baseMs * this.factor ** Math.max(0, retry - 1));
  }
}

/** The longest `Retry-After` read (a day): each use decides how much of it to wait (maxRetryAfterMs). */
const RETRY_AFTER_READ_CAP_MS = 86_400_000;

/**
 * The wait a server asks for in an answer's headers: `retry-after-ms` (OpenAI's, milliseconds),
 * else `Retry-After` as seconds or as an HTTP date. Undefined when neither is there or readable.
 */
export function retryAfterMs(header: (name: string) => string | undefined, now = Date.now()): number | undefined {
  const ms = Number.parseFloat(header('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.min(Math.ceil(ms), RETRY_AFTER_READ_CAP_MS);
  const value = header('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.min(Math.ceil(Number(value) * 1000), RETRY_AFTER_READ_CAP_MS);
  const until = msUntil(value, now);
  return until === undefined ? undefined : Math.min(until, RETRY_AFTER_READ_CAP_MS);
}

/** The ms from `now` until a time written as a date (an HTTP date, RFC 3339), 0 once past; undefined when it is none. */
function msUntil(value: string, now: number): number | undefined {
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A limit is spent for `ms` more (when known): the report keeps the longest hold, up to the longest read. */
function holdFor(report: RateLimitReport, ms: number | undefined): void {
  if (ms !== undefined) report.spentForMs = Math.min(Math.max(report.spentForMs ?? 0, ms), RETRY_AFTER_READ_CAP_MS);
}

/**
 * What a provider's answer says of its rate limits (decisions §18): the limits it states, and
 * how long until it takes another call when one of them is spent. Read from every answer, a 429
 * or a success alike, so that every caller can slow down before the provider refuses.
 */
export interface RateLimitReport {
  /** Requests a minute the provider allows (`x-ratelimit-limit-requests`, `anthropic-ratelimit-requests-limit`). */
  requestsPerMinute?: number;
  /** Tokens a minute it allows (`x-ratelimit-limit-tokens`; Anthropic's `-tokens-limit` or `-input-tokens-limit`). */
  tokensPerMinute?: number;
  /** A limit is spent (its `remaining` is 0) until this many ms from now (its `reset`). */
  spentForMs?: number;
}

/**
 * Reads OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (resets as durations:
 * "20ms", "1s", "6m0s"), Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,
 * output-tokens}-{limit,remaining,reset}` (resets as RFC 3339 times), and the request windows of
 * a search API such as Brave's (windowRequests). Values that do not read as numbers are ignored
 * (Azure sends -1 for "none").
 */
export function rateLimitReport(header: (name: string) => string | undefined, now = Date.now()): RateLimitReport {
  const report: RateLimitReport = {};
  const count = (name: string) => {
    const value = Number(header(name) ?? '');
    return header(name) !== undefined && Number.isInteger(value) && value >= 0 ? value : undefined;
  };
  const spent = (remaining: string, reset: string, read: (value: string) => number | undefined) => {
    if (count(remaining) !== 0) return;
    const value = header(reset);
    holdFor(report, value === undefined ? undefined : read(value.trim()));
  };
  const positive = (n: number | undefined) => (n !== undefined && n > 0 ? n : undefined);
  const minimum = (...values: (number | undefined)[]) => {
    const known = values.filter((v): v is number => v !== undefined);
    return known.length ? Math.min(...known) : undefined;
  };

  const requests = minimum(positive(count('x-ratelimit-limit-requests')), positive(count('anthropic-ratelimit-requests-limit')));
  const tokens = minimum(positive(count('x-ratelimit-limit-tokens')), positive(count('anthropic-ratelimit-tokens-limit')), positive(count('anthropic-ratelimit-input-tokens-limit')));
  if (requests !== undefined) report.requestsPerMinute = requests;
  if (tokens !== undefined) report.tokensPerMinute = tokens;
  for (const kind of ['requests', 'tokens']) spent(`x-ratelimit-remaining-${kind}`, `x-ratelimit-reset-${kind}`, durationMs);
  for (const kind of ['requests', 'tokens', 'input-tokens', 'output-tokens']) spent(`anthropic-ratelimit-${kind}-remaining`, `anthropic-ratelimit-${kind}-reset`, (value) => msUntil(value, now));
  windowRequests(header, report, now);
  return report;
}

/** A window's reset of more than this (2001-09-09 in seconds) is a Unix time, not a number of seconds to wait. */
const EPOCH_RESET_S = 1_000_000_000;

/** A window's reset as ms from now: seconds to wait, a Unix time in seconds or in ms, or an HTTP date. */
function resetMs(value: string, now: number): number | undefined {
  if (!/^\d+(\.\d+)?$/.test(value)) return msUntil(value, now);
  const n = Number(value);
  if (n > EPOCH_RESET_S * 1000) return Math.max(0, n - now);
  if (n > EPOCH_RESET_S) return Math.max(0, n * 1000 - now);
  return Math.ceil(n * 1000);
}

/**
 * Request windows as Brave's search API states them (and the IETF draft's `RateLimit-*` fields,
 * with or without `x-`): `x-ratelimit-limit: 1, 15000`, `x-ratelimit-remaining: 0, 14999` and
 * `x-ratelimit-reset: 1, 1419704` (seconds), one entry per window, whose lengths
 * `x-ratelimit-policy: 1;w=1, 15000;w=2592000` gives. A window with none remaining is spent until
 * its reset (a month's quota too: up to the longest hold read); a window of a minute or less
 * sets the requests a minute. A reset is read as seconds to wait, or as a time as other APIs
 * send it: a Unix time in seconds (GitHub's) or milliseconds (OpenRouter's), or an HTTP date.
 */
function windowRequests(header: (name: string) => string | undefined, report: RateLimitReport, now: number): void {
  const raw = (name: string) => header(`x-${name}`) ?? header(name);
  const list = (name: string) => raw(name)?.split(',').map((v) => v.trim());
  const remaining = list('ratelimit-remaining');
  // An HTTP date has a comma of its own: a reset that is not a list of numbers is one value.
  const reset = raw('ratelimit-reset');
  const resets = reset === undefined || /^[\d.,\s]+$/.test(reset) ? list('ratelimit-reset') : [reset.trim()];
  remaining?.forEach((value, i) => {
    if (value === '0' && resets?.[i]) holdFor(report, resetMs(resets[i], now));
  });
  for (const entry of list('ratelimit-policy') ?? []) {
    const [, limit, window] = /^(\d+)\s*;\s*w\s*=\s*(\d+)/.exec(entry) ?? [];
    if (!limit || !window || Number(limit) === 0 || Number(window) === 0 || Number(window) > 60) continue;
    const perMinute = (Number(limit) * 60) / Number(window);
    report.requestsPerMinute = Math.min(report.requestsPerMinute ?? Infinity, perMinute);
  }
}

const DURATION_UNITS_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };

/** A Go-style duration as OpenAI writes its resets ("6m0s", "20ms", "1.5s"; a bare number is seconds), in ms rounded up. */
export function durationMs(value: string): number | undefined {
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  const parts = /^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/.test(value) ? value.match(/\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns)/g) : null;
  if (!parts) return undefined;
  let ms = 0;
  for (const part of parts) {
    const [, amount, unit] = /^(\d+(?:\.\d+)?)(.+)$/.exec(part)!;
    ms += Number(amount) * DURATION_UNITS_MS[unit!]!;
  }
  return Math.ceil(ms);
}
