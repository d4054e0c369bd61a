/**
 * The worker side: claims ready turns from the store under a lease, runs each through the agent
 * with a TaskTurnPort (the agent's TurnPort, implemented against the task service), renews the
 * lease while it runs, and reports the end. At most `maxConcurrentTurns` run at once; the rest
 * wait in the store.
 */
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { Agent, TurnResult } from '../agent/agent-loop.js';
import type { Charge, InputFile, ReadSource, RowWriter, StepUsage, StoredStep, ToolEvent, TurnPort, TurnState } from '../agent/turn-port.js';
import { openTaskWorkspace } from '../sandbox/workspace.js';
import type { Uploads } from '../uploads/uploads.js';
import type { Config } from '../config.js';
import { crashPoint } from '../crash-points.js';
import { ClaimLoop } from '../claim-loop.js';
import { turnError } from '../errors.js';
import { newId } from '../ids.js';
import { sleep } from '../sleep.js';
import { NO_METRICS, type Metrics } from '../metrics/metrics.js';
import { isStoreUnavailable } from '../store/store-errors.js';
import type { SourceSnapshotRecord, TaskRecord, TurnRecord } from '../domain/records.js';
import type { TaskActivity, TaskPhase, TurnKind } from '../contract/index.js';
import type { HeldLock, Store } from '../store/store.js';
import type { TaskSpec } from '../contract/index.js';
import type { TaskService } from './task-service.js';

const TEXT_FLUSH_MS = 250;
const CRON_LOCK = 'quarry:cron-scheduler';
/**
 * Waits between tries of a store write that found the store unavailable (disk full, database
 * restarting): short at first, since most outages are a moment, then every few seconds.
 */
const STORE_RETRY_FIRST_MS = 100;
const STORE_RETRY_MAX_MS = 3000;

/**
 * Runs `write` until it succeeds, trying again while the store is unavailable (isStoreUnavailable)
 * with a growing wait, until `signal` aborts: then it throws the signal's reason. Any other
 * failure is thrown at once. A turn waits out a short outage this way instead of failing; the
 * signal bounds the wait (the turn's own time limit, a stop, a lost lease, shutdown). Only for
 * writes that are safe to send again: nothing of a failed transaction is stored.
 */
async function retryWhileStoreUnavailable<T>(write: () => Promise<T>, signal: AbortSignal, log: { logger: Logger; turnId: string; metrics: TurnMetrics }): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (!isStoreUnavailable(err)) throw err;
      log.metrics.storeUnavailable('turns');
      // Said now and then, not at every try.
      if (attempt === 1 || attempt % 20 === 0) log.logger.warn({ err, turn_id: log.turnId, attempt }, 'the store is unavailable: the turn waits and tries again');
      await sleep(Math.min(STORE_RETRY_MAX_MS, STORE_RETRY_FIRST_MS * 2 ** (attempt - 1)), signal);
    }
  }
}

/** Why a running turn's work was abandoned. */
type AbortReason = 'stopped' | 'shutdown' | 'lease_lost' | 'timeout';

class TurnAbort extends Error {
  constructor(readonly reason: AbortReason) {
    super(`turn aborted: ${reason}`);
    this.name = 'AbortError';
  }
}

/** What the runner and its ports report: turn ends, tokens, store outages. */
type TurnMetrics = Pick<Metrics, 'turnEnded' | 'modelTokens' | 'storeUnavailable'>;

export interface TurnRunnerOptions {
  store: Store;
  service: TaskService;
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
  private cronTimer: NodeJS.Timeout | undefined;
  private cronLock: HeldLock | undefined;
  /** The cron tick under way, which shutdown waits for: it may be taking the lock. */
  private cronRun: Promise<void> | undefined;

  private readonly metrics: TurnMetrics;

  constructor(private readonly opts: TurnRunnerOptions) {
    this.metrics = opts.metrics ?? NO_METRICS;
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
      const taken = await this.opts.store.turns.releaseLeases();
      if (taken > 0) this.opts.logger.info({ turns: taken }, 'resuming turns left running by the previous process');
    }
    const poll = this.opts.pollIntervalMs ?? 1000;
    this.pollTimer = setInterval(() => {
      this.expiredDue = true;
      this.wake();
    }, poll);
    this.pollTimer.unref();
    const cron = this.opts.cronIntervalMs ?? 1000;
    if (cron > 0) {
      this.cronTimer = setInterval(() => {
        if (this.cronRun || this.stopped) return;
        this.cronRun = this.fireCron()
          .catch((err) => this.logFailure(err, 'cron tick failed'))
          .finally(() => {
            this.cronRun = undefined;
          });
      }, cron);
      this.cronTimer.unref();
    }
    this.wake();
  }

  /**
   * Fires due cron ticks, on one process only: the holder of the scheduler lock. If that process
   * dies its lock goes with its connection, and the next process to try takes over.
   */
  private async fireCron(): Promise<void> {
    if (!this.cronLock?.held) this.cronLock = (await this.opts.store.cluster.tryLock(CRON_LOCK)) ?? undefined;
    if (this.cronLock?.held && !this.stopped) await this.opts.service.runDueCronTicks();
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
    clearInterval(this.cronTimer);
    // The claim under way: the turns it takes must be handed back with the rest.
    await this.claims.stop();
    for (const controller of this.running.values()) controller.abort(new TurnAbort('shutdown'));
    await Promise.allSettled([...this.finished]);
    await this.cronRun;
    await this.cronLock?.release();
    await this.opts.store.turns.releaseLeases(this.opts.config.workerId).catch((err) => {
      // The leases then simply run out, and another worker (or the next start) takes the turns.
      this.opts.logger.warn({ err }, 'releasing leases at shutdown failed');
    });
  }

  private async claim(): Promise<void> {
    const { config, store } = this.opts;
    while (!this.stopped && this.claims.mayHaveWork) {
      const free = config.maxConcurrentTurns - this.running.size;
      // Still maybe ready: the next turn to end claims again.
      if (free <= 0) return;
      this.claims.mayHaveWork = false;
      const now = new Date();
      const leaseUntil = new Date(now.getTime() + config.leaseSeconds * 1000).toISOString();
      const takeOverExpired = this.expiredDue;
      this.expiredDue = false;
      // No transaction around it: each of a claim's statements takes its turns atomically on its
      // own, and most claims of a busy cluster find nothing (every worker is woken).
      const turns = await store.turns.claim(config.workerId, free, now.toISOString(), leaseUntil, { takeOverExpired });
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
    const { service, store, config, logger } = this.opts;
    const { metrics } = this;
    const began = performance.now();
    // A turn's start time is stored when its start is recorded: one that has it was started before.
    const resumed = turn.startedAt !== null;
    crashPoint('turn.claimed');
    const durable = <T>(write: () => Promise<T>) => retryWhileStoreUnavailable(write, controller.signal, { logger, turnId: turn.id, metrics });
    let task: TaskRecord | null;
    let steps: StoredStep[];
    let inputs: string[];
    try {
      task = await durable(() => service.turnStarted(turn, resumed));
      if (!task) return;
      // Only a resumed turn has checkpoints to replay.
      steps = resumed ? (await durable(() => store.steps.list(turn.id))).map((s) => JSON.parse(s.data) as StoredStep) : [];
      inputs = await durable(() => store.turns.listInputs(turn.taskId, turn.id));
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
    });
    const maxSeconds = task.spec.limits.max_turn_seconds;

    const heartbeat = setInterval(() => {
      const until = new Date(Date.now() + config.leaseSeconds * 1000).toISOString();
      store.turns.renewLease(turn.id, config.workerId, until).then(
        (held) => { if (!held) controller.abort(new TurnAbort('lease_lost')); },
        (err) => logger.warn({ err, turn_id: turn.id }, 'lease renewal failed'),
      );
    }, Math.max(200, (config.leaseSeconds * 1000) / 3));
    const deadline = setTimeout(() => controller.abort(new TurnAbort('timeout')), maxSeconds * 1000);

    let result: TurnResult | undefined;
    try {
      result = await this.opts.agent.runTurn(port);
      await port.flushText();
    } catch (err) {
      // The port throws a TurnAbort of its own when the task service says the turn no longer runs.
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
      clearInterval(heartbeat);
      clearTimeout(deadline);
      port.close();
    }
    if (result) {
      crashPoint('turn.finishing');
      const { outcome } = result;
      const error = result.outcome === 'failed' ? result.error : null;
      // The turn's own signal may have aborted (its time limit): its end is stored anyway, waiting
      // out an outage until shutdown; a turn whose end is never stored is resumed once its lease runs out.
      const ended = await retryWhileStoreUnavailable(async () => {
        await service.finishTurn(turn.id, turn.taskId, outcome, error);
        return true;
      }, this.shutdownSignal.signal, { logger, turnId: turn.id, metrics }).catch((err) => {
        if (!(err instanceof TurnAbort)) throw err;
        logger.info({ turn_id: turn.id }, 'shut down before the turn\'s end could be stored: it is resumed on the next start');
        return false;
      });
      if (ended) metrics.turnEnded(outcome, (performance.now() - began) / 1000);
    }
  }
}

/**
 * The TurnPort of one claimed turn, against the task service: every change goes through it (one
 * transaction each), and a change refused because the turn no longer runs (stopped, deleted)
 * ends the turn's work with a TurnAbort. A change that finds the store unavailable is tried again
 * until it is stored or the turn's signal aborts (retryWhileStoreUnavailable).
 */
export class TaskTurnPort implements TurnPort {
  readonly turnId: string;
  readonly kind: TurnKind;
  readonly planOnly: boolean;
  readonly signal: AbortSignal;
  readonly steps: readonly StoredStep[];
  readonly userMessages: readonly string[];
  private currentSpec: TaskSpec;
  /** The phase and activity the task is in as far as this turn knows: as claimed, then as last set. */
  private phase: TaskPhase | null;
  private activity: TaskActivity | null;
  private textBuffer = '';
  private textTimer: NodeJS.Timeout | undefined;
  /** The text event being stored (it may be waiting for the store): the next change waits for it, so events keep their order. */
  private textWrite: Promise<void> = Promise.resolve();
  /** Text of the model reply under way has been stored: withdrawing it takes a `restart` event. */
  private replyTextStored = false;
  /** The last snapshot this turn stored or found per URL, with the text it was read as. */
  private readonly recordedSources = new Map<string, { text: string; id: string }>();
  private readonly metrics: TurnMetrics;

  constructor(
    private readonly deps: Pick<TurnRunnerOptions, 'service' | 'store' | 'uploads' | 'config' | 'logger' | 'metrics'>,
    private readonly turn: TurnRecord,
    private readonly task: TaskRecord,
    opts: { signal: AbortSignal; steps: readonly StoredStep[]; userMessages: readonly string[] },
  ) {
    this.turnId = turn.id;
    this.kind = turn.kind;
    this.planOnly = turn.planOnly;
    this.signal = opts.signal;
    this.steps = opts.steps;
    this.userMessages = opts.userMessages;
    this.currentSpec = task.spec;
    this.phase = task.phase;
    this.activity = task.activity;
    this.metrics = deps.metrics ?? NO_METRICS;
  }

  spec(): TaskSpec {
    return this.currentSpec;
  }

  private durable<T>(write: () => Promise<T>): Promise<T> {
    return retryWhileStoreUnavailable(write, this.signal, { logger: this.deps.logger, turnId: this.turnId, metrics: this.metrics });
  }

  async updateSpec(spec: TaskSpec): Promise<void> {
    if (!(await this.durable(() => this.deps.service.updateSpec(this.turn.id, this.turn.taskId, spec)))) throw new TurnAbort('stopped');
    this.currentSpec = spec;
  }

  async rowCounts(): Promise<Map<string, number>> {
    // No outputs declared, no rows to count (rows are only written to declared outputs).
    if (this.currentSpec.outputs.length === 0) return new Map();
    return new Map((await this.durable(() => this.deps.store.rows.stats(this.turn.taskId))).map((o) => [o.outputId, o.rowCount]));
  }

  async appendRows(writeKey: string, outputId: string, rows: RowWriter[], verifiedRows = 0): Promise<{ firstRow: number; count: number }> {
    // The write key makes a second try after an unclear failure write nothing twice.
    const written = await this.durable(() => this.deps.service.appendRows(this.turn.id, this.turn.taskId, outputId, writeKey, rows, verifiedRows));
    if (!written) throw new TurnAbort('stopped');
    return written;
  }

  async recordSource(read: ReadSource): Promise<string> {
    // Paging through one input hands over its (cached) text again and again: known without
    // hashing megabytes each time, and stored once.
    const known = this.recordedSources.get(read.url);
    if (known?.text === read.text) return known.id;
    // PostgreSQL's text cannot hold NUL (see NO_NUL_PATTERN): kept as U+FFFD, on both databases alike.
    const source = read.text.includes('\u0000') ? { ...read, text: read.text.replaceAll('\u0000', '\ufffd') } : read;
    const bytes = Buffer.from(source.text);
    const sha256 = crypto.createHash('sha256').update(bytes).digest('hex');
    const snapshot: SourceSnapshotRecord = {
      id: newId('src'), taskId: this.turn.taskId, url: source.url, finalUrl: source.finalUrl, uploadId: source.uploadId, title: source.title,
      fetchedAt: new Date().toISOString(), sha256, bytes: bytes.length, text: source.text,
    };
    const id = await this.durable(() => this.deps.store.sources.record(snapshot));
    this.recordedSources.set(read.url, { text: read.text, id });
    return id;
  }

  async citedSources(urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]> {
    return this.durable(() => this.deps.store.sources.cited(this.turn.taskId, urls, uploadIds));
  }

  async inputs(): Promise<InputFile[]> {
    const { uploads } = this.deps;
    const files: InputFile[] = [];
    for (const input of this.currentSpec.inputs) {
      const upload = await this.durable(() => uploads.findCompleted(this.task.accountId, input.upload_id));
      if (!upload) continue;
      files.push({ upload_id: upload.id, name: input.name ?? upload.filename, path: await this.durable(() => uploads.localPath(upload)), contentType: upload.contentType });
    }
    return files;
  }

  async workspaceDir(): Promise<string> {
    return openTaskWorkspace(this.deps.config.dataDir, this.turn.taskId);
  }

  async setState(state: TurnState): Promise<void> {
    const phase = state.phase ?? this.phase;
    const activity = state.activity ?? this.activity;
    // Most model calls and tool rounds find the task in the state they ask for: no transaction then.
    if (phase === this.phase && activity === this.activity) return;
    await this.flushText();
    await this.durable(() => this.deps.service.setTurnState(this.turn.id, this.turn.taskId, state));
    this.phase = phase;
    this.activity = activity;
  }

  text(delta: string): void {
    this.textBuffer += delta;
    this.textTimer ??= setTimeout(() => void this.flushText().catch((err) => this.deps.logger.warn({ err, turn_id: this.turn.id }, 'text event failed')), TEXT_FLUSH_MS);
  }

  async tool(event: ToolEvent): Promise<void> {
    await this.flushText();
    await this.durable(() => this.deps.service.turnEvent(this.turn.id, this.turn.taskId, 'tool', { ...event }));
  }

  async checkpoint(step: number, data: StoredStep, usage: StepUsage): Promise<Charge> {
    // The text streamed since the last flush goes into the checkpoint's own transaction (a model
    // step's text is stored with the step): one transaction fewer, and never one without the other.
    const text = await this.takeText();
    const charged = await this.durable(() => this.deps.service.checkpointStep(this.turn, step, JSON.stringify(data), usage, text));
    if (!charged) throw new TurnAbort('stopped');
    this.replyTextStored = false;
    // Counted once the step is stored: a resumed turn replays its stored steps without calling the model again.
    this.metrics.modelTokens(usage.tokensIn, usage.tokensOut);
    crashPoint('step.checkpointed');
    return charged;
  }

  /**
   * Stores the streamed text not yet stored as one `text` event, after the one being stored (the
   * timer's flush may still be waiting for the store when the next change flushes).
   */
  async flushText(): Promise<void> {
    clearTimeout(this.textTimer);
    this.textTimer = undefined;
    // A failed write is reported to its own caller only; the writes after it go ahead.
    const previous = this.textWrite.catch(() => {});
    if (!this.textBuffer) return previous;
    const text = this.textBuffer;
    this.textBuffer = '';
    const write = previous.then(async () => {
      await this.durable(() => this.deps.service.turnEvent(this.turn.id, this.turn.taskId, 'text', { text }));
      this.replyTextStored = true;
    });
    this.textWrite = write;
    return write;
  }

  async withdrawText(): Promise<void> {
    // Most replies fail before their first flush: nothing of them was stored, nothing to mark.
    await this.takeText();
    if (!this.replyTextStored) return;
    this.replyTextStored = false;
    await this.durable(() => this.deps.service.turnEvent(this.turn.id, this.turn.taskId, 'text', { text: '', restart: true }));
  }

  /** Waits for the text writes under way and hands over the text not yet stored, which the caller stores. */
  private async takeText(): Promise<string> {
    clearTimeout(this.textTimer);
    this.textTimer = undefined;
    await this.textWrite.catch(() => {});
    const text = this.textBuffer;
    this.textBuffer = '';
    return text;
  }

  /** The turn's work is over: text still buffered is dropped with its timer. */
  close(): void {
    clearTimeout(this.textTimer);
    this.textTimer = undefined;
  }
}
