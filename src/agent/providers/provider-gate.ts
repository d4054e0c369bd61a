/**
 * Where every call to a provider (the model, the search provider) waits its place under the
 * provider's limits, shared by every turn and every process of a cluster through the store
 * (decisions §18, docs/deploy.md#provider-limits).
 *
 * - Pacing: each call reserves its start in the store's `provider_limits` row, moving the
 *   provider's next request time on by 60 s / RPM and its next token time by tokens · 60 s / TPM.
 *   The limits are the fixed ones (QUARRY_MODEL_RPM, …) or, lower, those the provider's headers
 *   stated; calls are spread evenly, never sent in bursts the provider would refuse.
 * - Blocks: a 429 (its Retry-After) or a spent limit (`remaining: 0` until its reset) blocks
 *   every call of the cluster until then, not only the one that met it.
 * - Concurrency: QUARRY_MODEL_CONCURRENCY calls in flight at once, each under a lease in
 *   `provider_calls`, so that a process that died frees its places.
 *
 * A waiting call costs one queue entry: each process keeps one queue per provider and one pump
 * that reserves for its head, then for the next, up to a second ahead of their starts; one timer
 * starts the reserved calls in order, and one more paces the pump (to a second before the last
 * reserved start, or, when every place is taken, until a call here ends or a short while for
 * those elsewhere).
 * With no fixed limit and nothing learned a call reserves nothing: it reads the shared state at
 * most once a second.
 */
import type { ProviderLimits } from '../../config.js';
import type { ProviderLimitState } from '../../domain/records.js';
import { pooledIds } from '../../ids.js';
import type { LimitedProvider, Metrics } from '../../metrics/metrics.js';
import type { RateLimitReport } from '../../retry-policy.js';
import type { Store } from '../../store/store.js';

/** Calls are spaced 2% wider than the limit allows: a call sent a little late never puts two too close for a provider's window. */
const HEADROOM = 1.02;
/** A call expected to wait this long shows its turn as waiting (the Task's `waiting`); shorter waits write nothing. */
const SHOWN_AFTER_MS = 1000;
/** With no fixed limit, how long the shared state read from the store is taken as current. */
const KNOWN_FOR_MS = 1000;
/** Every place taken: how often to look again for places freed by other processes. */
const BUSY_RECHECK_MS = 250;
/** A call in flight holds its place at most this long (a process that died mid-call). */
const CALL_LEASE_MS = 15 * 60_000;
/** How far ahead of its start a call's place is reserved while the one before it waits for its own. */
const LOOKAHEAD_MS = 1000;
/** A 429 that names no wait blocks the provider this long. */
const BARE_429_BLOCK_MS = 1000;
/** A call's place among those in flight: 96 random bits. */
const newCallId = pooledIds('', 12);

/** The store as the gate uses it. */
export type GateStore = Pick<Store, 'transaction' | 'cluster'>;

/** A place to make one call; released when the call ends. */
export interface Permit {
  /** The call ended; `tokens` is what it used, when known (TPM counts the difference to the estimate). */
  release(tokens?: number): void;
}

export interface AcquireOptions {
  /** The call's estimated tokens, for a tokens-per-minute limit (asked only under one). */
  tokens: () => number;
  signal: AbortSignal;
  /** A place that could only start at or after this time is not waited for: ProviderWaitTooLong. */
  deadline: number;
  /** Called when the call is expected to wait long (SHOWN_AFTER_MS); the function returned is called when it stops waiting. */
  onLongWait?: () => () => void;
}

/** The provider's limits would make the call start past its deadline. */
export class ProviderWaitTooLong extends Error {
  constructor(readonly provider: LimitedProvider, readonly waitMs: number) {
    super(`the ${provider} provider's rate limits leave no place for ${Math.ceil(waitMs / 1000)} s`);
    this.name = 'ProviderWaitTooLong';
  }
}

interface Waiter extends AcquireOptions {
  enqueuedAt: number;
  resolve(permit: Permit): void;
  reject(err: unknown): void;
  endShown?: () => void;
  onAbort: () => void;
}

type Reservation = { startAt: number; callId?: string; tpm?: number; tokens?: number } | { busy: true };

export interface ProviderGateOptions {
  provider: LimitedProvider;
  limits: ProviderLimits;
  store: GateStore;
  metrics: Pick<Metrics, 'providerWait' | 'providerWaiting'>;
  now?: () => number;
}

export class ProviderGate {
  private readonly queue: Waiter[] = [];
  private pumping = false;
  /** The pump's one timer, and how to end its sleep early (an abort, a freed place). */
  private timer: NodeJS.Timeout | undefined;
  private wake: (() => void) | undefined;
  /** Calls with a reserved start not yet come, in start order, and the one timer that starts them. */
  private readonly starting: { waiter: Waiter; startAt: number; reservation: { startAt: number; callId?: string; tpm?: number; tokens?: number } }[] = [];
  private startTimer: NodeJS.Timeout | undefined;
  /** The pump waits for a place (every one taken): a call that ends here wakes it. */
  private waitingForPlace = false;
  private known: ProviderLimitState | undefined;
  private knownAt = -Infinity;
  private readonly now: () => number;

  constructor(private readonly opts: ProviderGateOptions) {
    this.now = opts.now ?? Date.now;
  }

  get provider(): LimitedProvider {
    return this.opts.provider;
  }

  /** Waits for the call's place: resolves when it may be sent; rejects on abort (the signal's reason) or ProviderWaitTooLong. */
  acquire(options: AcquireOptions): Promise<Permit> {
    if (options.signal.aborted) return Promise.reject(options.signal.reason);
    return new Promise<Permit>((resolve, reject) => {
      const waiter: Waiter = {
        ...options, enqueuedAt: this.now(), resolve, reject,
        onAbort: () => {
          const reserved = this.starting.findIndex((s) => s.waiter === waiter);
          if (reserved >= 0) {
            const { reservation } = this.starting.splice(reserved, 1)[0]!;
            this.leave(waiter);
            this.releaseCall(reservation.callId);
            reject(options.signal.reason);
            // The starting line's timer is set for the next call left, if any; and with no call
            // queued behind it, the pump's wait to reserve the next start is over.
            this.armStart();
            if (this.queue.length === 0) this.wake?.();
            return;
          }
          const at = this.queue.indexOf(waiter);
          // The head is the pump's: it is woken and drops it.
          if (at > 0) {
            this.queue.splice(at, 1);
            this.leave(waiter);
            reject(options.signal.reason);
          } else if (at === 0) this.wake?.();
        },
      };
      options.signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.queue.push(waiter);
      this.opts.metrics.providerWaiting(this.opts.provider, 1);
      if (this.queue.length > 1 && this.expectedWaitMs(this.queue.length - 1) >= SHOWN_AFTER_MS) this.show(waiter);
      void this.pump();
    });
  }

  /**
   * learn() as a provider call's listener for what each answer says: a report that could not be
   * stored is dropped (the next answer says it again). One function for every call.
   */
  readonly onRateLimits = (report: RateLimitReport): void => void this.learn(report).catch(() => undefined);

  /**
   * What an answer said of the provider's limits (a 429 or not): every process keeps to it from
   * now on. A 429 blocks for its Retry-After, or a second when it names none.
   */
  async learn(report: RateLimitReport, rejected?: { retryAfterMs: number | undefined }): Promise<void> {
    // An answer that says nothing of the limits (most, from a server that sends no such headers) teaches nothing.
    if (!rejected && report.spentForMs === undefined && report.requestsPerMinute === undefined && report.tokensPerMinute === undefined) return;
    const now = this.now();
    const blockMs = rejected ? rejected.retryAfterMs ?? report.spentForMs ?? BARE_429_BLOCK_MS : report.spentForMs;
    const blockedUntil = blockMs === undefined ? undefined : now + blockMs;
    const known = this.known;
    const news = blockedUntil !== undefined && blockedUntil > (known?.blockedUntil ?? 0)
      || (report.requestsPerMinute !== undefined && report.requestsPerMinute !== known?.learnedRpm)
      || (report.tokensPerMinute !== undefined && report.tokensPerMinute !== known?.learnedTpm);
    // Most answers say what the last one said: nothing is written then.
    if (!news && this.knownAt + KNOWN_FOR_MS > now) return;
    const state = await this.opts.store.transaction(async (tx) => {
      const stored = await tx.cluster.providerLimits(this.opts.provider, { lock: true });
      const next: ProviderLimitState = {
        ...stored,
        blockedUntil: Math.max(stored.blockedUntil, blockedUntil ?? 0),
        learnedRpm: report.requestsPerMinute ?? stored.learnedRpm,
        learnedTpm: report.tokensPerMinute ?? stored.learnedTpm,
      };
      await tx.cluster.setProviderLimits(this.opts.provider, { blockedUntil: next.blockedUntil, learnedRpm: next.learnedRpm, learnedTpm: next.learnedTpm });
      return next;
    });
    this.remember(state, now);
  }

  /** The wait expected of the call at `position` in the queue, from what is known here. */
  private expectedWaitMs(position: number): number {
    const now = this.now();
    const rpm = this.rpm(this.known);
    const blocked = Math.max(0, (this.known?.blockedUntil ?? 0) - now);
    return blocked + (rpm ? (position * 60_000) / rpm : 0);
  }

  private rpm(state: ProviderLimitState | undefined): number | undefined {
    return lowest(this.opts.limits.requestsPerMinute, state?.learnedRpm ?? undefined);
  }

  private tpm(state: ProviderLimitState | undefined): number | undefined {
    return lowest(this.opts.limits.tokensPerMinute, state?.learnedTpm ?? undefined);
  }

  private remember(state: ProviderLimitState, at: number): void {
    this.known = state;
    this.knownAt = at;
  }

  private show(waiter: Waiter): void {
    waiter.endShown ??= waiter.onLongWait?.();
  }

  /**
   * Shows the wait of every call queued here for SHOWN_AFTER_MS or more: when every place is
   * taken no wait can be foreseen, so a call behind the head shows it only once it has waited.
   */
  private showLongWaits(): void {
    const shownBefore = this.now() - SHOWN_AFTER_MS;
    // The queue is in order of arrival: the first that has not waited long ends the scan.
    for (const waiter of this.queue) {
      if (waiter.enqueuedAt > shownBefore) break;
      this.show(waiter);
    }
  }

  /** The waiter is out of the queue, granted or not. */
  private leave(waiter: Waiter): void {
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    waiter.endShown?.();
    this.opts.metrics.providerWaiting(this.opts.provider, -1);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        this.showLongWaits();
        const head = this.queue[0]!;
        if (head.signal.aborted) {
          this.queue.shift();
          this.leave(head);
          head.reject(head.signal.reason);
          continue;
        }
        let reservation: Reservation;
        try {
          reservation = await this.reserve(head.tokens);
        } catch (err) {
          this.queue.shift();
          this.leave(head);
          head.reject(err);
          continue;
        }
        // Aborted while its start was being reserved (its abort found no pump asleep to wake): the
        // reservation is handed back now, not when its start would have come.
        if (head.signal.aborted) {
          this.queue.shift();
          this.leave(head);
          if (!('busy' in reservation)) this.releaseCall(reservation.callId);
          head.reject(head.signal.reason);
          continue;
        }
        if ('busy' in reservation) {
          this.waitingForPlace = true;
          await this.sleepUntil(this.now() + BUSY_RECHECK_MS);
          this.waitingForPlace = false;
          continue;
        }
        const { startAt, callId } = reservation;
        if (startAt >= head.deadline) {
          this.queue.shift();
          this.leave(head);
          this.releaseCall(callId);
          head.reject(new ProviderWaitTooLong(this.opts.provider, startAt - this.now()));
          continue;
        }
        if (startAt - this.now() >= SHOWN_AFTER_MS) this.show(head);
        // Reserved: the call leaves the queue for the starting line, and the next one's place is
        // reserved at once, up to LOOKAHEAD_MS ahead, so that a slow store transaction does not
        // slow the calls down to one per transaction.
        this.queue.shift();
        this.starting.push({ waiter: head, startAt, reservation });
        this.armStart();
        if (startAt - this.now() > LOOKAHEAD_MS) await this.sleepUntil(startAt - LOOKAHEAD_MS);
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Starts the reserved calls whose time has come, and sets the starting line's timer for the next. */
  private armStart(): void {
    clearTimeout(this.startTimer);
    this.startTimer = undefined;
    const now = this.now();
    // A hold learned after these calls were given their start (a 429 of a call that started
    // before them) holds them too: the provider asked for no call before its end. One that would
    // then start past its deadline is not waited for, as in the queue.
    const heldUntil = this.known?.blockedUntil ?? 0;
    for (let i = 0; heldUntil > now && i < this.starting.length; ) {
      const reserved = this.starting[i]!;
      if (reserved.startAt < heldUntil && heldUntil >= reserved.waiter.deadline) {
        this.starting.splice(i, 1);
        this.leave(reserved.waiter);
        this.releaseCall(reserved.reservation.callId);
        reserved.waiter.reject(new ProviderWaitTooLong(this.opts.provider, heldUntil - now));
        continue;
      }
      reserved.startAt = Math.max(reserved.startAt, heldUntil);
      i++;
    }
    while (this.starting.length > 0 && this.starting[0]!.startAt <= now) {
      const { waiter, reservation } = this.starting.shift()!;
      this.leave(waiter);
      if (waiter.signal.aborted) {
        this.releaseCall(reservation.callId);
        waiter.reject(waiter.signal.reason);
        continue;
      }
      this.opts.metrics.providerWait(this.opts.provider, (now - waiter.enqueuedAt) / 1000);
      waiter.resolve(this.permit(reservation));
    }
    const next = this.starting[0];
    if (next) this.startTimer = setTimeout(() => this.armStart(), next.startAt - now);
  }

  /** Sleeps until `at` on the gate's one timer, or until woken. */
  private sleepUntil(at: number): Promise<void> {
    const ms = at - this.now();
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.wake = undefined;
        resolve();
      };
      this.wake = done;
      this.timer = setTimeout(done, ms);
    });
  }

  /** Reserves the head's start in the shared state (or, with no limit at all, starts it now). */
  private async reserve(tokens: () => number): Promise<Reservation> {
    const now = this.now();
    const { limits, provider, store } = this.opts;
    if (limits.requestsPerMinute === undefined && limits.tokensPerMinute === undefined && limits.concurrency === undefined) {
      if (this.knownAt + KNOWN_FOR_MS <= now) this.remember(await store.cluster.providerLimits(provider), now);
      const known = this.known!;
      if (known.blockedUntil <= now && known.learnedRpm === null && known.learnedTpm === null) return { startAt: now };
    }
    return store.transaction(async (tx) => {
      const state = await tx.cluster.providerLimits(provider, { lock: true });
      this.remember(state, now);
      const rpm = this.rpm(state);
      const tpm = this.tpm(state);
      const startAt = Math.max(now, state.blockedUntil, rpm ? state.nextRequestAt : 0, tpm ? state.nextTokenAt : 0);
      let callId: string | undefined;
      if (limits.concurrency !== undefined) {
        if ((await tx.cluster.countProviderCalls(provider, now)) >= limits.concurrency) return { busy: true };
        callId = newCallId();
        await tx.cluster.addProviderCall(provider, callId, now + CALL_LEASE_MS);
      }
      const estimated = tpm ? tokens() : undefined;
      await tx.cluster.setProviderLimits(provider, {
        ...(rpm ? { nextRequestAt: startAt + (60_000 * HEADROOM) / rpm } : {}),
        ...(tpm ? { nextTokenAt: startAt + (estimated! * 60_000 * HEADROOM) / tpm } : {}),
      });
      return { startAt, callId, tpm, tokens: estimated };
    });
  }

  private permit(reservation: { callId?: string; tpm?: number; tokens?: number }): Permit {
    let released = false;
    return {
      release: (tokens) => {
        if (released) return;
        released = true;
        this.releaseCall(reservation.callId);
        // The reservation counted the estimate: the tokens really used move the next token time on (or back).
        const { tpm, tokens: estimated } = reservation;
        if (tpm && estimated !== undefined && tokens !== undefined && tokens !== estimated) void this.adjustTokens(((tokens - estimated) * 60_000 * HEADROOM) / tpm);
      },
    };
  }

  private releaseCall(callId: string | undefined): void {
    if (callId === undefined) return;
    // A place freed here: the pump, when it waits for one, looks again at once.
    void this.opts.store.cluster.removeProviderCall(this.opts.provider, callId).then(() => {
      if (this.waitingForPlace) this.wake?.();
    }, () => undefined);
  }

  private async adjustTokens(ms: number): Promise<void> {
    await this.opts.store.transaction(async (tx) => {
      const state = await tx.cluster.providerLimits(this.opts.provider, { lock: true });
      await tx.cluster.setProviderLimits(this.opts.provider, { nextTokenAt: state.nextTokenAt + ms });
    }).catch(() => undefined);
  }
}

function lowest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}
