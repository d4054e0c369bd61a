/**
 * Per-key request limits (429 rate_limited). One process keeps token buckets in memory; processes
 * sharing a database take tokens of fixed one-minute windows from it, so the limit holds across
 * nodes.
 */
/** Request counts per key and window, shared by the processes of one database. */
export interface RateWindows {
  /** Adds `hits` (negative: takes them off) to the key's count for the window starting at `windowStart` (ISO 8601); the count after. */
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

/** A node takes at most this share of what is left of a key's minute from the store at a time. */
const RESERVE_SHARE = 8;
/** Past the last 1/NEAR_FULL_SHARE of a key's minute, a node takes only as many tokens as it has requests waiting. */
const NEAR_FULL_SHARE = 2;
/** Tokens a node holds for a key it has not seen a request of for this long go back to the store. */
const IDLE_MS = 1000;
/** A window the store said is full is taken as full for this long before the store is asked again (tokens given back may free some). */
const FULL_MS = 1000;

interface KeyWindow {
  /** The window's start (ms). */
  start: number;
  /** Requests this node may still let through in the window without asking the store. */
  tokens: number;
  /** The store's count for the window as this node last saw it, and when. */
  known: number;
  knownAt: number;
  lastTakeAt: number;
  /** The reservation under way: requests that find no token wait for it rather than each asking. */
  reserving: Promise<void> | undefined;
  /** Requests waiting for a token of this node. */
  waiting: number;
}

/**
 * Fixed one-minute windows counted in the shared store, so the limit holds across nodes, and
 * exactly: the store's count is of tokens handed to nodes, never above the limit, and a node lets a
 * request through only on a token it holds. A node with no token left for a key takes a batch
 * from the store in one upsert (an eighth of what is left of the minute at first, less as it
 * fills, at least one), and keeps
 * what the store could not give back to it at once; requests that arrive meanwhile wait for that
 * one write. So the common request costs a map look-up and a decrement, a node writes a key's row
 * a few times a minute while far from the limit (per request only over its last few dozen), and a
 * cluster's nodes together never let more than the limit through. A node that
 * stops seeing a key's requests gives its unused tokens back after a second, so a quiet node does
 * not hold the minute from the others.
 */
export class StoreRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, KeyWindow>();
  private idleTimer: NodeJS.Timeout | undefined;

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
      window = { start, tokens: 0, known: 0, knownAt: Number.NEGATIVE_INFINITY, lastTakeAt: now, reserving: undefined, waiting: 0 };
      this.windows.set(keyId, window);
    }
    window.lastTakeAt = now;
    if (window.tokens > 0) {
      window.tokens--;
      return 0;
    }
    if (window.known >= this.perMinute && now - window.knownAt < FULL_MS) return Math.max(1, Math.ceil((start + RATE_WINDOW_MS - now) / 1000));
    const w = window;
    w.waiting++;
    w.reserving ??= this.reserve(keyId, w).finally(() => {
      w.reserving = undefined;
    });
    // Decided again once the batch is in: a token of it, or the store's word that the minute is
    // full. A request stops waiting here whether the batch came or the store failed.
    return w.reserving.finally(() => w.waiting--).then(() => this.take(keyId));
  }

  /** Takes a batch of tokens for the window from the store; what the limit leaves of it stays here, the rest goes back. */
  private async reserve(keyId: string, window: KeyWindow): Promise<void> {
    // An eighth of what is left while much is left, shrinking faster as the minute fills (one at a
    // time over the last few dozen): tokens one node holds unused are refused to the others. In
    // the last half no more than the requests waiting here, so that no node holds tokens it
    // has no request for while another node is refused.
    const left = Math.max(0, this.perMinute - window.known);
    const share = Math.max(1, Math.floor((left * left) / (RESERVE_SHARE * this.perMinute)));
    const want = left * NEAR_FULL_SHARE < this.perMinute ? Math.max(1, Math.min(share, window.waiting)) : share;
    const windowStart = new Date(window.start).toISOString();
    const total = await this.counts.hitRateWindow(keyId, windowStart, want);
    const granted = Math.min(want, Math.max(0, this.perMinute - (total - want)));
    // The store's count stays the tokens nodes hold: what went over the limit is taken off again.
    if (granted < want) await this.counts.hitRateWindow(keyId, windowStart, granted - want);
    window.tokens += granted;
    window.known = total - (want - granted);
    window.knownAt = this.clock();
    if (granted > 0) this.giveBackWhenIdle();
  }

  /** Hands the tokens of keys idle for IDLE_MS back to the store, and forgets past windows. */
  private giveBackWhenIdle(): void {
    this.idleTimer ??= setTimeout(() => {
      this.idleTimer = undefined;
      const now = this.clock();
      let holding = false;
      for (const [keyId, window] of this.windows) {
        if (window.start + RATE_WINDOW_MS <= now) {
          this.windows.delete(keyId);
        } else if (window.tokens > 0 && !window.reserving && now - window.lastTakeAt >= IDLE_MS) {
          const tokens = window.tokens;
          window.tokens = 0;
          void this.counts.hitRateWindow(keyId, new Date(window.start).toISOString(), -tokens).catch(() => {
            // Not given back: they go unused this minute, which only ever refuses more, never lets more through.
          });
        } else if (window.tokens > 0) {
          holding = true;
        }
      }
      if (holding) this.giveBackWhenIdle();
    }, IDLE_MS).unref();
  }
}
