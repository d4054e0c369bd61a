/**
 * RetryPolicy, the one rule every retry's wait follows: exponential or a fixed schedule, full
 * jitter, a cap, a number of tries, and a server's retry_after first. A fixed random source
 * stands in for Math.random, so each wait is known exactly and nothing sleeps.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { durationMs, rateLimitReport, RetryPolicy, retryAfterMs } from '../../src/retry-policy.js';

/** A random source that returns `values` in turn. */
function randoms(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length]!;
}

describe('RetryPolicy', () => {
  it('grows the wait from the base by the factor, up to the cap', () => {
    const policy = new RetryPolicy({ baseMs: 100, capMs: 3000, jitter: 'none' });
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 20].map((n) => policy.delay(n)), [100, 200, 400, 800, 1600, 3000, 3000, 3000]);
  });

  it('full jitter draws each wait between 0 and the computed wait', () => {
    assert.equal(new RetryPolicy({ baseMs: 100, capMs: 3000 }, randoms(0)).delay(3), 0);
    assert.equal(new RetryPolicy({ baseMs: 100, capMs: 3000 }, randoms(0.5)).delay(3), 200);
    assert.ok(new RetryPolicy({ baseMs: 100, capMs: 3000 }, randoms(0.999999)).delay(3) < 400);
    assert.ok(new RetryPolicy({ baseMs: 100, capMs: 3000 }, randoms(0.999999)).delay(30) <= 3000, 'the cap bounds a jittered wait too');
    const drawn = new RetryPolicy({ baseMs: 100, capMs: 3000 }, randoms(0.25, 0.75));
    assert.deepEqual([drawn.delay(1), drawn.delay(1)], [25, 75], 'each wait takes a fresh draw');
  });

  it('a retry_after replaces the computed wait, even past the cap', () => {
    const policy = new RetryPolicy({ baseMs: 100, capMs: 3000 }, randoms(0.5));
    assert.deepEqual(policy.next(1, 20), { retry: true, delayMs: 20 }, 'shorter than the computed wait');
    assert.deepEqual(policy.next(1, 10_000), { retry: true, delayMs: 10_000 }, 'longer than the cap');
    assert.deepEqual(policy.next(1, 0), { retry: true, delayMs: 0 });
  });

  it("with retryAfter 'at-least' the wait is the longer of the schedule's and the server's", () => {
    const policy = new RetryPolicy({ delaysMs: [500, 1000, 2000], jitter: 'none', retryAfter: 'at-least' });
    assert.equal(policy.delay(1, 100), 500);
    assert.equal(policy.delay(1, 1500), 1500);
    assert.equal(policy.delay(2), 1000);
  });

  it('a retry_after over maxRetryAfterMs ends the retries', () => {
    const policy = new RetryPolicy({ delaysMs: [500], retries: 3, maxRetryAfterMs: 60_000 });
    assert.deepEqual(policy.next(1, 60_001), { retry: false, reason: 'retry_after_too_long' });
    assert.equal(policy.next(1, 60_000).retry, true);
  });

  it('allows as many retries as `retries`, then says they are spent', () => {
    const policy = new RetryPolicy({ delaysMs: [500, 1000, 2000], retries: 3, jitter: 'none' });
    assert.deepEqual([1, 2, 3].map((n) => policy.next(n)), [500, 1000, 2000].map((delayMs) => ({ retry: true, delayMs })));
    assert.deepEqual(policy.next(4), { retry: false, reason: 'exhausted' });
    assert.deepEqual(policy.next(4, 10), { retry: false, reason: 'exhausted' }, 'a retry_after does not add a retry');
    assert.deepEqual(new RetryPolicy({ delaysMs: [], retries: 0 }).next(1), { retry: false, reason: 'exhausted' }, 'no retries at all');
    assert.equal(new RetryPolicy({ baseMs: 1 }, randoms(1)).next(1000).retry, true, 'no limit when retries is left out');
  });

  it("a schedule's last wait repeats, and retryAt follows it by the time since the retries began", () => {
    const policy = new RetryPolicy({ delaysMs: [5, 30, 120], jitter: 'none' });
    assert.deepEqual([1, 2, 3, 4, 9].map((n) => policy.delay(n)), [5, 30, 120, 120, 120]);
    assert.deepEqual([0, 4, 5, 34, 35, 154, 10_000].map((ms) => policy.retryAt(ms)), [1, 1, 2, 2, 3, 3, 3]);
  });
});

describe('retryAfterMs', () => {
  const headers = (h: Record<string, string>) => (name: string) => h[name];
  it('reads retry-after-ms, Retry-After seconds and an HTTP date', () => {
    assert.equal(retryAfterMs(headers({ 'retry-after-ms': '1500.2' })), 1501);
    assert.equal(retryAfterMs(headers({ 'retry-after': '7' })), 7000);
    const now = Date.parse('2025-03-01T07:00:00Z');
    assert.equal(retryAfterMs(headers({ 'retry-after': 'Sat, 01 Mar 2025 07:00:30 GMT' }), now), 30_000);
    assert.equal(retryAfterMs(headers({ 'retry-after': 'Sat, 01 Mar 2025 06:00:00 GMT' }), now), 0, 'a date passed means now');
    assert.equal(retryAfterMs(headers({ 'retry-after': 'soon' })), undefined);
    assert.equal(retryAfterMs(headers({})), undefined);
  });
});

describe('rateLimitReport', () => {
  const headers = (h: Record<string, string>) => (name: string) => h[name];
  it("reads OpenAI's limits a minute, and a spent one's reset as a duration", () => {
    assert.deepEqual(rateLimitReport(headers({
      'x-ratelimit-limit-requests': '5000', 'x-ratelimit-remaining-requests': '4999', 'x-ratelimit-reset-requests': '12ms',
      'x-ratelimit-limit-tokens': '160000', 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '6m0s',
    })), { requestsPerMinute: 5000, tokensPerMinute: 160_000, spentForMs: 360_000 });
    assert.deepEqual(rateLimitReport(headers({ 'x-ratelimit-limit-tokens': '-1', 'x-ratelimit-remaining-tokens': '-1', 'x-ratelimit-reset-tokens': '0' })), {}, "Azure's -1 says nothing");
  });
  it("reads Anthropic's limits, and a spent one's reset as an RFC 3339 time", () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.deepEqual(rateLimitReport(headers({
      'anthropic-ratelimit-requests-limit': '50', 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': '2026-01-01T00:00:20Z',
      'anthropic-ratelimit-input-tokens-limit': '30000', 'anthropic-ratelimit-output-tokens-remaining': '0', 'anthropic-ratelimit-output-tokens-reset': '2026-01-01T00:00:45Z',
    }), now), { requestsPerMinute: 50, tokensPerMinute: 30_000, spentForMs: 45_000 });
  });
  it("reads a search API's request windows (Brave's): a spent one's reset in seconds, a short one as requests a minute", () => {
    const brave = { 'x-ratelimit-limit': '1, 15000', 'x-ratelimit-policy': '1;w=1, 15000;w=2592000', 'x-ratelimit-remaining': '1, 14999', 'x-ratelimit-reset': '1, 1419704' };
    assert.deepEqual(rateLimitReport(headers(brave)), { requestsPerMinute: 60 }, 'a window of 1 a second is 60 a minute; none spent');
    assert.deepEqual(rateLimitReport(headers({ ...brave, 'x-ratelimit-remaining': '0, 14998' })), { requestsPerMinute: 60, spentForMs: 1000 });
    assert.deepEqual(rateLimitReport(headers({ ...brave, 'x-ratelimit-remaining': '1, 0' })), { requestsPerMinute: 60, spentForMs: 86_400_000 }, 'a month\'s quota spent holds for the longest hold read, a day');
    assert.deepEqual(rateLimitReport(headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '30', 'ratelimit-policy': '100;w=60' })), { requestsPerMinute: 100, spentForMs: 30_000 }, 'the IETF draft\'s fields, without x-');
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.deepEqual(rateLimitReport(headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 90) }), now), { spentForMs: 90_000 }, 'a reset as a Unix time');
    assert.deepEqual(rateLimitReport(headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now + 90_000) }), now), { spentForMs: 90_000 }, 'in ms');
    assert.deepEqual(rateLimitReport(headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': 'Thu, 01 Jan 2026 00:01:30 GMT' }), now), { spentForMs: 90_000 }, 'as an HTTP date');
    assert.deepEqual(rateLimitReport(headers({ 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': 'soon' }), now), {}, 'a reset that reads as no time says nothing');
  });
  it('reads Go durations', () => {
    assert.deepEqual(['20ms', '1s', '6m0s', '1m30.5s', '1h', '2.5', 'soon', ''].map(durationMs), [20, 1000, 360_000, 90_500, 3_600_000, 2500, undefined, undefined]);
  });
  it('a 429 spends no try; other failures do', () => {
    assert.equal(RetryPolicy.spendsATry(429), false);
    assert.equal(RetryPolicy.spendsATry(503), true);
    assert.equal(RetryPolicy.spendsATry(undefined), true);
  });
});
