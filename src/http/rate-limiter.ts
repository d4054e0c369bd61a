/**
 * Per-key request limits (429 rate_limited). One process keeps token buckets in memory; processes
 * sharing a database count fixed one-minute windows in it, so the limit holds across nodes.
 */
/** Request counts per key and window, shared by the processes of one database. */
export interface RateWindows {
  /** Adds `hits` requests to the key's count for the window starting at `windowStart` (ISO 8601); the count after. */
  hitRateWindow(keyId: string, windowStart: string, hits: number): Promise<number>;
}

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

/** The length of a shared window; the pruner deletes those that ended. */
export const RATE_WINDOW_MS = 60_000;

/** How long a process counts requests before adding them to the store's count. */
const FLUSH_MS = 50;
/** How long the store's count, as a write returned it, is taken as current. */
const FRESH_MS = 100;

interface KeyWindow {
  /** The window's start (ms). */
  start: number;
  /** The store's count for the window at this process's last write to it, and when that returned. */
  known: number;
  knownAt: number;
  /** Requests counted here and not yet added to the store's count. */
  pending: number;
}

/**
 * Fixed one-minute windows counted in the shared store, so the limit holds across nodes. A
 * process adds its requests to the store's count in one upsert per key every 50 ms rather than
 * one per request: the window's row is one row for every request of a key, and writing it at
 * every request put all of a key's requests, on every node, in one queue behind its lock.
 *
 * A request is let through at once while the store's count, as this process's last write (at
 * most 100 ms ago) returned it, plus this process's requests since stays under the limit. Any
 * other request (the first after a pause, or one that would reach the limit) is counted in the
 * store first and decided on the store's total. So one process alone never exceeds the limit,
 * and beyond it a cluster lets through at most what its other nodes admitted in the last 100 ms.
 */
export class StoreRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, KeyWindow>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly counts: RateWindows,
    private readonly perMinute: number,
    private readonly clock: () => number = Date.now,
  ) {}

  take(keyId: string): number | Promise<number> {
    const now = this.clock();
    const start = now - (now % RATE_WINDOW_MS);
    let window = this.windows.get(keyId);
    if (!window || window.start !== start) {
      window = { start, known: 0, knownAt: Number.NEGATIVE_INFINITY, pending: 0 };
      this.windows.set(keyId, window);
    }
    if (window.known + window.pending < this.perMinute && now - window.knownAt <= FRESH_MS) {
      window.pending++;
      this.flushSoon();
      return 0;
    }
    const wait = Math.max(1, Math.ceil((start + RATE_WINDOW_MS - now) / 1000));
    return this.write(keyId, window, 1).then((hits) => (hits <= this.perMinute ? 0 : wait));
  }

  private flushSoon(): void {
    this.flushTimer ??= setTimeout(() => {
      this.flushTimer = undefined;
      const current = this.clock() - (this.clock() % RATE_WINDOW_MS);
      for (const [keyId, window] of this.windows) {
        if (window.pending > 0) void this.write(keyId, window, 0).catch(() => {});
        else if (window.start < current) this.windows.delete(keyId);
      }
    }, FLUSH_MS).unref();
  }

  /** Adds the window's pending requests and `extra` more to the store's count; the store's total. */
  private async write(keyId: string, window: KeyWindow, extra: number): Promise<number> {
    const hits = window.pending + extra;
    window.pending = 0;
    try {
      const total = await this.counts.hitRateWindow(keyId, new Date(window.start).toISOString(), hits);
      window.known = Math.max(window.known, total);
      window.knownAt = this.clock();
      return total;
    } catch (err) {
      // Not counted in the store: counted here again, for the next write.
      window.pending += hits - extra;
      if (window.pending > 0) this.flushSoon();
      throw err;
    }
  }
}
