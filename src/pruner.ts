/**
 * Deletes what has expired, so a service that runs for a year does not fill its disk
 * (docs/durability.md#what-is-pruned-and-when): idempotency records past their 24 h, rate-limit
 * windows that ended, delivered and dead webhook deliveries past their retention, uploads never
 * finished, the data of tasks deleted longer ago than the grace period, and (when
 * QUARRY_EVENT_RETENTION_DAYS is set) the events of turns that ended before the retention.
 *
 * Every statement deletes one bounded batch (store.prune), and the pass yields to the event loop
 * between batches, so no statement holds locks for long and requests are served meanwhile. One
 * process prunes at a time (the holder of the prune lock, as with the cron scheduler); were two
 * to run at once, their deletes would only find fewer rows.
 */
import { setImmediate as yieldToRequests } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { PruneConfig } from './config.js';
import { RATE_WINDOW_MS } from './http/rate-limiter.js';
import { isStoreUnavailable } from './store/store-errors.js';
import type { HeldLock, RetentionCandidate, Store } from './store/store.js';
import { IDEMPOTENCY_WINDOW_MS } from './tasks/idempotency-records.js';
import { TASK_BODY_EVENTS } from './tasks/task-queries.js';

/**
 * What a purged task keeps of its events: its last, the `deleted` snapshot. `GET /task/{task_id}`
 * still shows the task `deleted` with its spec; keeping its body's last 100 events as well would
 * cost each deleted task tens of kilobytes for good, so a service that creates and deletes tasks
 * would grow without bound.
 */
const PURGED_TASK_EVENTS = 1;

const PRUNE_LOCK = 'quarry:pruner';
/** Rows per statement: a few milliseconds of work, short enough to sit between requests. */
const BATCH = 500;

export interface PruneCounts {
  idempotency: number;
  rateWindows: number;
  deliveries: number;
  uploads: number;
  /** Rows of deleted tasks' data, all tables together. */
  deletedTaskRows: number;
  /** Deleted tasks whose purge finished in this pass. */
  purgedTasks: number;
  events: number;
}

export interface PrunerOptions {
  store: Store;
  config: PruneConfig;
  /** An upload's PUT may still run this long after its URL expired (QUARRY_REQUEST_TIMEOUT_S). */
  requestTimeoutMs: number;
  logger: Logger;
  /** The time passes measure ages against (tests move it instead of waiting). */
  now?: () => number;
}

export class Pruner {
  private timer: NodeJS.Timeout | undefined;
  private lock: HeldLock | undefined;
  /** The pass under way, which stop() waits for. */
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly now: () => number;

  constructor(private readonly opts: PrunerOptions) {
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    if (this.opts.config.intervalMs <= 0) return;
    this.timer = setInterval(() => {
      if (this.running || this.stopped) return;
      this.running = this.passIfHolder()
        .catch((err) => {
          if (isStoreUnavailable(err)) this.opts.logger.warn({ err }, 'pruning failed: the store is unavailable');
          else this.opts.logger.error({ err }, 'pruning failed');
        })
        .finally(() => {
          this.running = undefined;
        });
    }, this.opts.config.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    await this.lock?.release();
  }

  private async passIfHolder(): Promise<void> {
    if (!this.lock?.held) this.lock = (await this.opts.store.cluster.tryLock(PRUNE_LOCK)) ?? undefined;
    if (!this.lock?.held) return;
    const counts = await this.pass();
    if (Object.values(counts).some((n) => n > 0)) this.opts.logger.info({ pruned: counts }, 'pruned expired data');
  }

  /** One pass over everything that may have expired; returns how much it deleted. */
  async pass(): Promise<PruneCounts> {
    const { store, config } = this.opts;
    const now = this.now();
    const ago = (ms: number) => new Date(now - ms).toISOString();
    return {
      idempotency: await this.drain((limit) => store.prune.idempotency(ago(IDEMPOTENCY_WINDOW_MS), limit)),
      // The window before the current one still answers a request that began in it.
      rateWindows: await this.drain((limit) => store.prune.rateWindows(ago(2 * RATE_WINDOW_MS), limit)),
      deliveries: await this.drain((limit) => store.prune.deliveries(ago(config.deliveryRetentionMs), limit)),
      uploads: await this.drain((limit) => store.prune.uploads(ago(this.opts.requestTimeoutMs), limit)),
      ...(await this.purgeDeletedTasks(ago(config.deletedTaskGraceMs), new Date(now).toISOString())),
      events: config.eventRetentionMs > 0 ? await this.dropOldEvents(ago(config.eventRetentionMs)) : 0,
    };
  }

  /** Runs `batch` until a batch comes back short; returns the total deleted. */
  private async drain(batch: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    while (!this.stopped) {
      const n = await batch(BATCH);
      total += n;
      if (n < BATCH) break;
      await yieldToRequests();
    }
    return total;
  }

  private async purgeDeletedTasks(before: string, now: string): Promise<{ deletedTaskRows: number; purgedTasks: number }> {
    const { store } = this.opts;
    let rows = 0;
    let purged = 0;
    while (!this.stopped) {
      // A purged task leaves the list, so each page starts from the oldest not yet purged.
      const tasks = await store.prune.deletedTasks(before, BATCH);
      for (const task of tasks) {
        for (;;) {
          if (this.stopped) return { deletedTaskRows: rows, purgedTasks: purged };
          const n = await store.prune.purgeTask(task.id, { keepEvents: PURGED_TASK_EVENTS, keepRows: task.groupRun, limit: BATCH, now });
          await yieldToRequests();
          if (n === 0) break;
          rows += n;
        }
        purged++;
      }
      if (tasks.length < BATCH) break;
    }
    return { deletedTaskRows: rows, purgedTasks: purged };
  }

  /**
   * Drops, task by task, the events of turns that ended before `before`, oldest first, up to
   * the first event of a turn that ended later or has not ended. Events outside any turn go with
   * the turns around them. A task's last TASK_BODY_EVENTS events (its body) and its last turn's
   * `error` (the idle stream sends it again) are always kept.
   */
  private async dropOldEvents(before: string): Promise<number> {
    const { store } = this.opts;
    let dropped = 0;
    let after: string | null = null;
    while (!this.stopped) {
      const tasks = await store.prune.retentionCandidates(after, TASK_BODY_EVENTS, BATCH);
      for (const task of tasks) dropped += await this.dropTaskEvents(task, before);
      if (tasks.length < BATCH) break;
      after = tasks[tasks.length - 1]!.id;
    }
    return dropped;
  }

  private async dropTaskEvents(task: RetentionCandidate, before: string): Promise<number> {
    const { store } = this.opts;
    const keepFrom = task.lastEventSeq - TASK_BODY_EVENTS;
    let from = task.prunedSeq;
    let dropped = 0;
    while (!this.stopped && from < keepFrom) {
      const events = (await store.prune.eventTurns(task.id, from, BATCH)).filter((e) => e.seq <= keepFrom);
      const ended = await store.prune.turnsEndedBefore([...new Set(events.flatMap((e) => (e.turnId ? [e.turnId] : [])))], before);
      let through = from;
      for (const e of events) {
        if (e.turnId === null) continue;
        if (!ended.has(e.turnId)) break;
        through = e.seq;
      }
      if (through === from) break;
      dropped += await store.prune.dropEvents(task.id, from, through, task.lastErrorSeq);
      from = through;
      await yieldToRequests();
    }
    return dropped;
  }
}
