/**
 * Per-key request limits (429 rate_limited). One process keeps token buckets in memory; processes
 * sharing a database count fixed one-minute windows in it, so the limit holds across nodes.
 */
import type { Store } from '../store/store.js';

export interface RateLimiter {
  /** Counts one request: 0 when allowed, else the whole seconds to wait (a promise when it must ask the store). */
  take(keyId: string): number | Promise<number>;
}

/** Token buckets: a burst up to the minute's budget, then requests paced as they refill. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly refillPerMs: number;

  constructor(
    private readonly perMinute: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.refillPerMs = perMinute / 60_000;
  }

  take(keyId: string): number {
    const now = this.clock();
    const bucket = this.buckets.get(keyId) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (now - bucket.at) * this.refillPerMs);
    bucket.at = now;
    this.buckets.set(keyId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.refillPerMs / 1000));
  }
}

const WINDOW_MS = 60_000;

/** Fixed one-minute windows counted in the shared store: one upsert per request. */
export class StoreRateLimiter implements RateLimiter {
  constructor(
    private readonly store: Store,
    private readonly perMinute: number,
    private readonly clock: () => number = Date.now,
  ) {}

  async take(keyId: string): Promise<number> {
    const now = this.clock();
    const start = now - (now % WINDOW_MS);
    const hits = await this.store.cluster.hitRateWindow(keyId, new Date(start).toISOString());
    return hits <= this.perMinute ? 0 : Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000));
  }
}
