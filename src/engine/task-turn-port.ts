import type { Logger } from 'pino';
import type { Charge, InputFile, ReadSource, RowKeys, RowWriter, StepUsage, StoredStep, ToolEvent, TurnPort, TurnState } from '../agent/turn-port.js';
import { ANTHROPIC_DEFAULT_MAX_TOKENS, type Config } from '../config.js';
import type { TaskActivity, TaskPhase, TaskSpec, TaskWait, TurnKind } from '../contract/index.js';
import { crashPoint } from '../crash-points.js';
import { modelCallMaxMicros, pricesInMicros } from '../domain/credits.js';
import type { RowTally, SourceSnapshotRecord, TaskRecord, TurnRecord } from '../domain/records.js';
import { NO_METRICS, type Metrics } from '../metrics/metrics.js';
import type { SourceSnapshots } from '../outputs/source-snapshots.js';
import { openTaskWorkspace } from '../sandbox/workspace.js';
import type { TurnQueries } from '../tasks/turn-queries.js';
import { LeaseLost, type TurnWrites } from '../tasks/turn-writes.js';
import type { Uploads } from '../uploads/uploads.js';
import { retryWhileStoreUnavailable } from './retry-while-store-unavailable.js';
import { TurnAbort } from './turn-abort.js';

const TEXT_FLUSH_MS = 250;
/** Rows read at a time when the turn reads an output through. */
const ROW_PAGE = 2_000;

/** What the runner and its ports report: turn ends, tokens, store outages. */
export type TurnMetrics = Pick<Metrics, 'turnEnded' | 'modelUsage' | 'storeUnavailable'>;

/** What a turn's port reads and writes through: the turn's writes and the task's queries, never the store itself. */
export interface TaskTurnPortDeps {
  writes: TurnWrites;
  queries: TurnQueries;
  sources: SourceSnapshots;
  uploads: Uploads;
  config: Config;
  logger: Logger;
  /** Where tokens and store outages are counted (none when left out). */
  metrics?: TurnMetrics;
}

/**
 * The TurnPort of one claimed turn, over TurnWrites: every change goes through it (one
 * transaction each), and a change refused because the turn no longer runs here (stopped,
 * deleted, taken over by another worker) ends the turn's work with a TurnAbort. A change that
 * finds the store unavailable is tried again until it is stored or the turn's signal aborts
 * (retryWhileStoreUnavailable).
 */
export class TaskTurnPort implements TurnPort {
  readonly turnId: string;
  readonly taskId: string;
  readonly kind: TurnKind;
  readonly planOnly: boolean;
  readonly offline: boolean;
  readonly signal: AbortSignal;
  readonly steps: readonly StoredStep[];
  readonly userMessages: readonly string[];
  private currentSpec: TaskSpec;
  /** The phase and activity the task is in as far as this turn knows: as claimed, then as last set. */
  private phase: TaskPhase | null;
  private activity: TaskActivity | null;
  /** The turn's calls waiting long on a provider, by what they wait on; the task shows the first. */
  private readonly waits = new Map<TaskWait, number>();
  private shownWait: TaskWait | null = null;
  /** Writes of the task's `waiting`, one after another so the last one stands. */
  private waitWrite: Promise<void> = Promise.resolve();
  private textBuffer = '';
  private textTimer: NodeJS.Timeout | undefined;
  /** The text event being stored (it may be waiting for the store): the next change waits for it, so events keep their order. */
  private textWrite: Promise<void> = Promise.resolve();
  /** Text of the model reply under way has been stored: withdrawing it takes a `restart` event. */
  private replyTextStored: boolean;
  /**
   * The text of the checkpointed replies a reader counts in the reply under way (since the last
   * tool event or phase change: a text-only answer, then the reply to the outputs check). A
   * `restart` drops all of it, so it carries this text again.
   */
  private keptText: string;
  /** The last snapshot this turn stored or found per URL, with the text it was read as. */
  private readonly recordedSources = new Map<string, { text: string; id: string }>();
  private readonly metrics: TurnMetrics;
  /** The task's group, when it is a run of a group with max_credits: its model calls and charges count against the cap. */
  private readonly cappedGroupId: string | undefined;
  private readonly onLeaseLost: () => void;

  constructor(
    private readonly deps: TaskTurnPortDeps,
    private readonly turn: TurnRecord,
    private readonly task: TaskRecord,
    opts: {
      signal: AbortSignal;
      steps: readonly StoredStep[];
      userMessages: readonly string[];
      cappedGroupId?: string;
      /** A write no call waits for (the waiting state, a timed text flush) found the lease held by another worker: the turn must end. */
      onLeaseLost?: () => void;
    },
  ) {
    this.cappedGroupId = opts.cappedGroupId;
    this.onLeaseLost = opts.onLeaseLost ?? (() => {});
    this.turnId = turn.id;
    this.taskId = turn.taskId;
    this.kind = turn.kind;
    this.planOnly = turn.planOnly;
    this.offline = turn.offline;
    this.signal = opts.signal;
    this.steps = opts.steps;
    this.replyTextStored = turn.replyTextStored;
    this.keptText = keptReplyText(opts.steps, task.phase);
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
    if (!(await this.durable(() => this.deps.writes.updateSpec(this.turn, spec)))) throw new TurnAbort('stopped');
    this.currentSpec = spec;
  }

  async rowCounts(): Promise<Map<string, number>> {
    // No outputs declared, no rows to count (rows are only written to declared outputs).
    if (this.currentSpec.outputs.length === 0) return new Map();
    return this.durable(() => this.deps.queries.rowCounts(this.turn.taskId));
  }

  async *readRows(outputId: string): AsyncIterable<string> {
    for (let offset = 0; ; ) {
      const page = await this.durable(() => this.deps.queries.rows(this.turn.taskId, outputId, offset, ROW_PAGE));
      yield* page;
      if (page.length < ROW_PAGE) return;
      offset += page.length;
    }
  }

  async appendRows(writeKey: string, outputId: string, rows: RowWriter[], tally?: RowTally, keys?: RowKeys): Promise<{ firstRow: number; count: number }> {
    // The write key makes a second try after an unclear failure write nothing twice.
    const written = await this.durable(() => this.deps.writes.appendRows(this.turn, outputId, writeKey, rows, tally, keys));
    if (!written) throw new TurnAbort('stopped');
    return written;
  }

  async recordSource(read: ReadSource): Promise<string> {
    // Paging through one input hands over its (cached) text again and again: known without
    // hashing megabytes each time, and stored once.
    const known = this.recordedSources.get(read.url);
    if (known?.text === read.text) return known.id;
    const id = await this.durable(() => this.deps.sources.record(this.turn.taskId, read));
    this.recordedSources.set(read.url, { text: read.text, id });
    return id;
  }

  async citedSources(urls: string[], uploadIds: string[]): Promise<SourceSnapshotRecord[]> {
    return this.durable(() => this.deps.sources.cited(this.turn.taskId, urls, uploadIds));
  }

  async source(sourceId: string): Promise<SourceSnapshotRecord | undefined> {
    return this.durable(() => this.deps.sources.get(this.turn.taskId, sourceId));
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
    await this.durable(() => this.deps.writes.setTurnState(this.turn, state));
    if (phase !== this.phase) this.keptText = '';
    this.phase = phase;
    this.activity = activity;
  }

  waitingOn(wait: TaskWait): () => void {
    this.waits.set(wait, (this.waits.get(wait) ?? 0) + 1);
    this.showWait();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const left = (this.waits.get(wait) ?? 1) - 1;
      if (left > 0) this.waits.set(wait, left);
      else this.waits.delete(wait);
      this.showWait();
    };
  }

  /** Writes the task's `waiting` when what it should show changed; the call that waits does not wait for the write. */
  private showWait(): void {
    const shown = this.waits.keys().next().value ?? null;
    if (shown === this.shownWait) return;
    this.shownWait = shown;
    this.waitWrite = this.waitWrite
      .then(() => this.deps.writes.setWaiting(this.turn, shown))
      .catch((err: unknown) => this.unwaitedWriteFailed(err, 'the task\'s waiting state was not written'));
  }

  text(delta: string): void {
    this.textBuffer += delta;
    this.textTimer ??= setTimeout(() => void this.flushText().catch((err) => this.unwaitedWriteFailed(err, 'text event failed')), TEXT_FLUSH_MS);
  }

  /** A write no call waits for failed: a lost lease ends the turn, as the lease's heartbeat would; anything else is logged. */
  private unwaitedWriteFailed(err: unknown, what: string): void {
    if (err instanceof LeaseLost || (err instanceof TurnAbort && err.reason === 'lease_lost')) this.onLeaseLost();
    else this.deps.logger.warn({ err, turn_id: this.turn.id }, what);
  }

  async tool(event: ToolEvent): Promise<void> {
    await this.flushText();
    await this.durable(() => this.deps.writes.toolEvent(this.turn, { ...event }));
    this.keptText = '';
  }

  async budgetedModelCall<T>(promptTokens: number, call: () => Promise<T>): Promise<T | null> {
    const groupId = this.cappedGroupId;
    if (groupId === undefined) return call();
    const micros = modelCallMaxMicros(pricesInMicros(this.deps.config.prices), promptTokens, this.deps.config.model?.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS);
    if (!(await this.durable(() => this.deps.writes.reserveModelCall(this.turn.id, groupId, micros)))) return null;
    try {
      return await call();
    } finally {
      // Not durable: a reserve left behind counts only while the turn runs, and holds back the group's runs (never lets one overspend).
      await this.deps.writes.releaseModelReserve(this.turn.id, micros).catch((err: unknown) => this.deps.logger.warn({ err, turn_id: this.turn.id }, 'taking back a model call\'s reserve failed'));
    }
  }

  async checkpoint(step: number, data: StoredStep, usage: StepUsage): Promise<Charge> {
    // The text streamed since the last flush goes into the checkpoint's own transaction (a model
    // step's text is stored with the step): one transaction fewer, and never one without the other.
    const reply = { text: await this.takeText(), stored: this.replyTextStored };
    const charged = await this.durable(() => this.deps.writes.checkpointStep(this.turn, step, JSON.stringify(data), usage, reply, this.cappedGroupId));
    if (!charged) throw new TurnAbort('stopped');
    this.replyTextStored = false;
    if (data.type === 'model') this.keptText += data.text;
    // Counted once the step is stored: a resumed turn replays its stored steps without calling the model again.
    this.metrics.modelUsage(usage);
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
      const firstOfReply = !this.replyTextStored;
      await this.durable(() => this.deps.writes.replyText(this.turn, text, firstOfReply));
      this.replyTextStored = true;
    });
    this.textWrite = write;
    return write;
  }

  /**
   * Also called as a turn is taken up again: the reply its worker was streaming when it stopped
   * is asked for again, and what it had stored of it is withdrawn first.
   */
  async withdrawText(): Promise<void> {
    // Most replies fail before their first flush: nothing of them was stored, nothing to mark.
    await this.takeText();
    if (!this.replyTextStored) return;
    this.replyTextStored = false;
    await this.durable(() => this.deps.writes.withdrawReplyText(this.turn, this.keptText));
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

/**
 * What a resumed turn's stored steps leave a reader counting in the reply under way: the text of
 * the text-only answers since the last reply with tool calls (whose tool events start a reply),
 * made in the phase the task is in now (a move to it was stored as `phase_changed`, which starts
 * a reply too).
 */
function keptReplyText(steps: readonly StoredStep[], phase: TaskPhase | null): string {
  let kept = '';
  for (let i = steps.length - 1; i >= 0; i--) {
    const step = steps[i]!;
    if (step.type === 'tool' || step.type === 'tools') break;
    if (step.type !== 'model') continue;
    if (step.toolCalls.length > 0 || step.phase !== phase) break;
    kept = step.text + kept;
  }
  return kept;
}
