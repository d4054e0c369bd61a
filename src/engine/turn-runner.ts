/**
 * The worker side: claims ready turns under a lease (TurnQueue), runs each through the agent with
 * a TaskTurnPort (the agent's TurnPort, implemented over TurnWrites), renews the lease
 * while it runs, and reports the end. At most `maxConcurrentTurns` run at once; the rest wait in
 * the store, and a process that runs turns also fires the cron ticks (CronScheduler).
 */
import type { Logger } from 'pino';
import type { Agent, TurnResult } from '../agent/agent-loop.js';
import { ClaimLoop } from '../claim-loop.js';
import type { Config } from '../config.js';
import { crashPoint } from '../crash-points.js';
import type { TaskRecord, TurnRecord } from '../domain/records.js';
import { turnError } from '../errors.js';
import { NO_METRICS } from '../metrics/metrics.js';
import type { SourceSnapshots } from '../outputs/source-snapshots.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import type { StoreCluster } from '../store/store.js';
import type { TurnQueries } from '../tasks/turn-queries.js';
import type { TurnQueue } from '../tasks/turn-queue.js';
import type { TurnWrites } from '../tasks/turn-writes.js';
import type { Uploads } from '../uploads/uploads.js';
import type { StoredStep } from '../agent/turn-port.js';
import { CronScheduler, type CronSchedulerOptions } from './cron-scheduler.js';
import { startLeaseHeartbeat } from './lease-heartbeat.js';
import { retryWhileStoreUnavailable } from './retry-while-store-unavailable.js';
import { TaskTurnPort, type TurnMetrics } from './task-turn-port.js';
import { TurnAbort } from './turn-abort.js';

export interface TurnRunnerOptions {
  /** The running turns' writes: their start, events, rows, steps and end. */
  writes: TurnWrites;
  /** What the cron scheduler fires due ticks through. */
  tasks: CronSchedulerOptions['tasks'];
  groups?: CronSchedulerOptions['groups'];
  queue: TurnQueue;
  queries: TurnQueries;
  sources: SourceSnapshots;
  /** Where the cron scheduler's lock is taken. */
  locks: Pick<StoreCluster, 'tryLock'>;
  agent: Agent;
  uploads: Uploads;
  config: Config;
  logger: Logger;
  /** Where turn ends, tokens and store outages are counted (none when left out). */
  metrics?: TurnMetrics;
  /** How often to look for claimable turns without being woken (turns from other nodes, expired leases). */
  pollIntervalMs?: number;
  /** How often to fire due cron ticks; 0 disables the scheduler on this node. */
  cronIntervalMs?: number;
}

export class TurnRunner {
  private readonly running = new Map<string, AbortController>();
  /** Aborted at shutdown: ends the waits of turn ends that could not be stored yet. */
  private readonly shutdownSignal = new AbortController();
  private readonly finished = new Set<Promise<void>>();
  /** Claims turns when woken, as many as there are free slots. */
  private readonly claims: ClaimLoop = new ClaimLoop({
    pass: () => this.claim(),
    hasRoom: () => this.running.size < this.opts.config.maxConcurrentTurns,
    onError: (err) => this.logFailure(err, 'claiming turns failed'),
  });
  /**
   * The next claim also looks for turns whose worker died. Only the poll asks for that: a wake
   * means a new turn, and a lease runs out on its own time, so once per poll is soon enough.
   */
  private expiredDue = true;
  private stopped = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private readonly cron: CronScheduler;

  private readonly metrics: TurnMetrics;

  constructor(private readonly opts: TurnRunnerOptions) {
    this.metrics = opts.metrics ?? NO_METRICS;
    this.cron = new CronScheduler({
      tasks: opts.tasks, groups: opts.groups, locks: opts.locks, intervalMs: opts.cronIntervalMs ?? 1000,
      onError: (err) => this.logFailure(err, 'cron tick failed'),
    });
  }

  get activeTurns(): number {
    return this.running.size;
  }

  /**
   * Starts claiming. With `reclaimAll` (an embedded store only one process uses), turns left
   * running by a previous process are taken up at once instead of after their lease runs out.
   */
  async start(opts: { reclaimAll?: boolean } = {}): Promise<void> {
    if (opts.reclaimAll) {
      const taken = await this.opts.queue.releaseLeases();
      if (taken > 0) this.opts.logger.info({ turns: taken }, 'resuming turns left running by the previous process');
    }
    const poll = this.opts.pollIntervalMs ?? 1000;
    this.pollTimer = setInterval(() => {
      this.expiredDue = true;
      this.wake();
    }, poll);
    this.pollTimer.unref();
    this.cron.start();
    this.wake();
  }

  /**
   * Says a turn may have become ready: claims as many as there are free slots. Safe to call
   * often: the wakes of one turn of the event loop share one claim.
   */
  wake(): void {
    this.claims.wake();
  }

  /** An outage of the store is expected to pass (the next poll tries again): a warning, not an error. */
  private logFailure(err: unknown, msg: string): void {
    if (isStoreUnavailable(err)) {
      this.metrics.storeUnavailable('turns');
      this.opts.logger.warn({ err }, `${msg}: the store is unavailable`);
    } else {
      this.opts.logger.error({ err }, msg);
    }
  }

  /** Abandons a turn's work in this process (it was stopped or deleted). */
  cancel(turnId: string): void {
    this.running.get(turnId)?.abort(new TurnAbort('stopped'));
  }

  /** Stops claiming, aborts running turns and hands their leases back so a restart resumes them. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    this.shutdownSignal.abort(new TurnAbort('shutdown'));
    clearInterval(this.pollTimer);
    // Its timer stops at once; the tick under way is waited for below.
    const cronStopped = this.cron.stop();
    // The claim under way: the turns it takes must be handed back with the rest.
    await this.claims.stop();
    for (const controller of this.running.values()) controller.abort(new TurnAbort('shutdown'));
    await Promise.allSettled([...this.finished]);
    await cronStopped;
    await this.opts.queue.releaseLeases(this.opts.config.workerId).catch((err) => {
      // The leases then simply run out, and another worker (or the next start) takes the turns.
      this.opts.logger.warn({ err }, 'releasing leases at shutdown failed');
    });
  }

  private async claim(): Promise<void> {
    const { config, queue } = this.opts;
    while (!this.stopped && this.claims.mayHaveWork) {
      const free = config.maxConcurrentTurns - this.running.size;
      // Still maybe ready: the next turn to end claims again.
      if (free <= 0) return;
      this.claims.mayHaveWork = false;
      const takeOverExpired = this.expiredDue;
      this.expiredDue = false;
      // No transaction around it: each of a claim's statements takes its turns atomically on its
      // own, and most claims of a busy cluster find nothing (every worker is woken).
      const turns = await queue.claim(config.workerId, free, config.leaseSeconds, { takeOverExpired });
      // Stopped meanwhile: shutdown hands these back with the rest of this worker's leases.
      if (this.stopped) return;
      for (const turn of turns) this.launch(turn);
      // As many as asked for: more may be waiting. Fewer: nothing else is ready until a wake
      // (a commit here, a notice from another node, or the poll).
      if (turns.length === free) this.claims.mayHaveWork = true;
    }
  }

  private launch(turn: TurnRecord): void {
    // Its lease ran out while the store was unavailable and this claim took it again: the run
    // already here goes on (under the lease just renewed) rather than a second one beside it.
    if (this.running.has(turn.id)) return;
    const controller = new AbortController();
    this.running.set(turn.id, controller);
    const done = this.run(turn, controller)
      .catch((err) => this.opts.logger.error({ err, turn_id: turn.id }, 'turn crashed'))
      .finally(() => {
        this.running.delete(turn.id);
        this.finished.delete(done);
        this.claims.soon();
      });
    this.finished.add(done);
  }

  private async run(turn: TurnRecord, controller: AbortController): Promise<void> {
    const { writes, queue, queries, config, logger } = this.opts;
    const { metrics } = this;
    const began = performance.now();
    // A turn's start time is stored when its start is recorded: one that has it was started before.
    const resumed = turn.startedAt !== null;
    crashPoint('turn.claimed');
    const durable = <T>(write: () => Promise<T>) => retryWhileStoreUnavailable(write, controller.signal, { logger, turnId: turn.id, metrics });
    let task: TaskRecord | null;
    let steps: StoredStep[];
    let inputs: string[];
    let cappedGroupId: string | undefined;
    try {
      task = await durable(() => writes.turnStarted(turn, resumed));
      if (!task) return;
      // Only a resumed turn has checkpoints to replay.
      steps = resumed ? await durable(() => queries.steps(turn.id)) : [];
      inputs = await durable(() => queries.inputs(turn));
      const groupId = task.group?.id;
      if (groupId) cappedGroupId = await durable(() => queries.cappedGroup(groupId));
    } catch (err) {
      if (!(err instanceof TurnAbort)) throw err;
      // Stopped or shut down before it began: its lease is handed back or runs out.
      logger.debug({ turn_id: turn.id, reason: err.reason }, 'turn abandoned before it started');
      return;
    }
    const port = new TaskTurnPort(this.opts, turn, task, {
      signal: controller.signal,
      steps,
      userMessages: [...(task.spec.prompt ? [task.spec.prompt] : []), ...inputs],
      cappedGroupId,
      onLeaseLost: () => controller.abort(new TurnAbort('lease_lost')),
    });
    const maxSeconds = task.spec.limits.max_turn_seconds;

    const stopHeartbeat = startLeaseHeartbeat(
      { queue, turnId: turn.id, workerId: config.workerId, leaseSeconds: config.leaseSeconds, logger },
      () => controller.abort(new TurnAbort('lease_lost')),
    );
    const deadline = setTimeout(() => controller.abort(new TurnAbort('timeout')), maxSeconds * 1000);

    let result: TurnResult | undefined;
    try {
      // The reply a resumed turn's worker was streaming when it stopped (a crash, a lost lease)
      // is asked for again: the text it had stored is withdrawn first, as after a failed try.
      await port.withdrawText();
      result = await this.opts.agent.runTurn(port);
      await port.flushText();
    } catch (err) {
      // The port throws a TurnAbort of its own when TurnWrites says the turn no longer runs.
      const abort: unknown = controller.signal.aborted ? controller.signal.reason : err;
      const reason = abort instanceof TurnAbort ? abort.reason : undefined;
      if (reason === 'timeout') {
        result = { outcome: 'failed', error: turnError('limit_reached', `The turn ran longer than its limit of ${maxSeconds} s (spec.limits.max_turn_seconds).`) };
      } else if (reason) {
        // Stopped, deleted, lost to another worker or shut down: whoever did that recorded the end.
        logger.debug({ turn_id: turn.id, reason }, 'turn abandoned');
        // Only a stop ends the turn; one lost or shut down is taken up again by a worker.
        if (reason === 'stopped') metrics.turnEnded('stopped', (performance.now() - began) / 1000);
      } else {
        logger.error({ err, turn_id: turn.id }, 'turn failed unexpectedly');
        result = { outcome: 'failed', error: turnError('internal_error', 'The turn failed unexpectedly; its rows are kept. Continue the task to try again.') };
      }
    } finally {
      stopHeartbeat();
      clearTimeout(deadline);
      port.close();
    }
    if (result) {
      crashPoint('turn.finishing');
      const { outcome } = result;
      const error = result.outcome === 'failed' ? result.error : null;
      // The turn's own signal may have aborted (its time limit): its end is stored anyway, waiting
      // out an outage until shutdown; a turn whose end is never stored is resumed once its lease runs out.
      // True: this worker stored the end; false: the turn was stopped meanwhile; null: it is
      // another worker's now (taken over, or taken up again after this shutdown), to count there.
      const ended = await retryWhileStoreUnavailable(() => writes.finishTurn(turn, outcome, error), this.shutdownSignal.signal, { logger, turnId: turn.id, metrics }).catch((err) => {
        if (!(err instanceof TurnAbort)) throw err;
        if (err.reason === 'lease_lost') logger.info({ turn_id: turn.id }, 'another worker took the turn over before its end was stored: its end is theirs to store');
        else logger.info({ turn_id: turn.id }, 'shut down before the turn\'s end could be stored: it is resumed on the next start');
        return null;
      });
      if (ended !== null) metrics.turnEnded(ended ? outcome : 'stopped', (performance.now() - began) / 1000);
    }
  }
}

