/**
 * The read side of tasks: which tasks an account may see (decided here, once), and the reads
 * the routes answer with — a task, its detail, its state, a page of the list, its events.
 */
import type { ChangesQuery, OutputDecl, RowChange, TaskState } from '../contract/index.js';
import { QuarryError } from '../errors.js';
import type { EventFollower } from '../events/event-follower.js';
import type { EventRecord, OutputStatsRecord, SourceSnapshotInfo, SourceSnapshotRecord, TaskListFilter, TaskRecord, TaskStateRecord, TurnRecord } from '../domain/records.js';
import type { Store, TaskListCursor, TaskListPage, TurnText } from '../store/store.js';
import { activeOutputOf, isVisibleTo } from '../domain/task-view.js';
import { TaskViewCache } from './task-view-cache.js';
import { changeView } from './keyed-rows.js';

export type { TurnSaid, TurnText } from '../store/store.js';

/** The list cursor is opaque to clients: base64url of the last task's sort key. */
function encodeCursor(c: TaskListCursor): string {
  return Buffer.from(JSON.stringify([c.pinned ? 1 : 0, c.updatedAt, c.id])).toString('base64url');
}

function decodeCursor(raw: string): TaskListCursor {
  try {
    const [pinned, updatedAt, id] = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown[];
    // The parts go into a query: NUL would fail there on PostgreSQL (see NO_NUL_PATTERN).
    if ((pinned === 0 || pinned === 1) && typeof updatedAt === 'string' && typeof id === 'string' && !`${updatedAt}${id}`.includes('\u0000')) {
      return { pinned: pinned === 1, updatedAt, id };
    }
  } catch {
    // fall through to the 422 below
  }
  throw QuarryError.validation('cursor', 'cursor is not a value this server issued: pass X-Next-Cursor from the previous page', [
    { type: 'value_error', loc: ['query', 'cursor'], msg: 'is not a cursor this server issued' },
  ]);
}

/**
 * The filter with its times as the store keeps them (`toISOString()`, which compare as text);
 * the contract has checked they are ISO 8601 date-times.
 */
function storedFilter(filter: TaskListFilter): TaskListFilter {
  const stored = { ...filter };
  if (filter.createdAfter !== undefined) stored.createdAfter = storedTime('created_after', filter.createdAfter);
  if (filter.createdBefore !== undefined) stored.createdBefore = storedTime('created_before', filter.createdBefore);
  return stored;
}

function storedTime(param: string, value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw QuarryError.validation(param, `${param} must be an ISO 8601 date-time, such as 2025-03-01T07:00:00Z`, [
      { type: 'value_error', loc: ['query', param], msg: 'is not an ISO 8601 date-time' },
    ]);
  }
  return new Date(ms).toISOString();
}

/** How many of its last events `GET /task/{task_id}` shows; the pruner keeps them (src/pruner.ts). */
export const TASK_BODY_EVENTS = 100;

export class TaskQueries {
  private readonly views = new TaskViewCache();
  /**
   * The state body of each state record: a store that keeps a record until the next commit
   * (SQLite) hands the same object to every poll in between, and each poll then gets the same
   * body object (shared: never changed), which the route serializes once (routes/tasks.ts).
   */
  private readonly stateViews = new WeakMap<TaskStateRecord, Readonly<TaskState>>();

  constructor(private readonly store: Store, private readonly follower: EventFollower) {}

  /** A task of this account, else 404 task_not_found (503 when the store cannot answer). */
  async task(accountId: string, taskId: string, opts: { includeDeleted?: boolean } = {}): Promise<TaskRecord> {
    const task = await this.store.tasks.get(taskId);
    if (!isVisibleTo(task, accountId, opts.includeDeleted)) throw QuarryError.taskNotFound(taskId);
    return task;
  }

  /** The task (deleted ones too) and its last TASK_BODY_EVENTS events; with `waitSeconds`, after its running turn ends. */
  async detail(accountId: string, taskId: string, waitSeconds = 0, signal?: AbortSignal): Promise<{ task: TaskRecord; events: EventRecord[] }> {
    let task = await this.task(accountId, taskId, { includeDeleted: true });
    if (waitSeconds > 0 && task.currentTurnId) {
      await this.waitForTurn(task.id, task.currentTurnId, task.lastEventSeq, waitSeconds * 1000, signal);
      task = await this.task(accountId, taskId, { includeDeleted: true });
    }
    return { task, events: await this.lastEvents(task, TASK_BODY_EVENTS) };
  }

  /**
   * Resolves when the turn has ended, `timeoutMs` passed or `signal` aborted (the waiting client
   * left), whichever is first (long-polls, `wait: true`, MCP and A2A waits). `afterSeq` is a seq
   * of the task from before the turn's end (its `done` comes later): the task's events are
   * followed from there, so an end at any moment, before the wait began too, is seen.
   */
  async waitForTurn(taskId: string, turnId: string, afterSeq: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (timeoutMs <= 0 || signal?.aborted) return;
    // A queued turn that a stop with clear_queue dropped ends without a `done`: its row says so.
    const turn = await this.store.turns.get(turnId);
    // A client that left during that read has no wait to end: an abort listener added now never fires.
    if (!turn || turn.endedAt || signal?.aborted) return;
    const waiting = new AbortController();
    const timer = setTimeout(() => waiting.abort(), timeoutMs);
    const leave = () => waiting.abort();
    signal?.addEventListener('abort', leave, { once: true });
    try {
      for await (const events of this.follower.follow(taskId, afterSeq, waiting.signal)) {
        if (events.some((event) => event.type === 'done' && event.turnId === turnId)) return;
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', leave);
    }
  }

  /** The task's last `count` stored events, oldest first. */
  lastEvents(task: TaskRecord, count: number): Promise<EventRecord[]> {
    return this.store.events.last(task.id, count);
  }

  /** How the task's last ended turn ended; undefined before any has. */
  lastOutcome(task: TaskRecord): Promise<'completed' | 'failed' | 'stopped' | undefined> {
    return this.store.turns.lastOutcome(task.id);
  }

  /** The task's last `limit` turns, oldest first. */
  recentTurns(task: TaskRecord, limit: number): Promise<Pick<TurnRecord, 'id' | 'input' | 'status'>[]> {
    return this.store.turns.listRecent(task.id, limit);
  }

  /** The `text` events of these turns, in order, each tool call between them as a null text. */
  turnTexts(task: TaskRecord, turnIds: readonly string[]): Promise<TurnText[]> {
    return this.store.events.turnTexts(task.id, turnIds);
  }

  /** The stored `error` event of the task's last ended turn when that turn failed, else undefined. */
  async lastTurnError(task: TaskRecord): Promise<EventRecord | undefined> {
    if (task.lastErrorSeq == null) return undefined;
    const [event] = await this.store.events.list(task.id, task.lastErrorSeq - 1, 1);
    return event?.seq === task.lastErrorSeq ? event : undefined;
  }

  /**
   * The cheap poll, from one indexed read; with `waitSeconds`, after the running turn ends. When
   * the store holds the record in memory and there is nothing to wait for, the view is given at
   * once rather than as a promise (most polls: see SqliteReads).
   */
  state(accountId: string, taskId: string, waitSeconds = 0, signal?: AbortSignal): Readonly<TaskState> | Promise<Readonly<TaskState>> {
    const read = this.store.tasks.getState(taskId);
    if (read instanceof Promise) return read.then((state) => this.polledState(accountId, taskId, state, waitSeconds, signal));
    return this.polledState(accountId, taskId, read, waitSeconds, signal);
  }

  private polledState(accountId: string, taskId: string, state: TaskStateRecord | undefined, waitSeconds: number, signal: AbortSignal | undefined): Readonly<TaskState> | Promise<Readonly<TaskState>> {
    if (!isVisibleTo(state, accountId)) throw QuarryError.taskNotFound(taskId);
    return waitSeconds > 0 && state.currentTurnId ? this.stateAfterTurn(state, waitSeconds, signal) : this.sharedStateView(state);
  }

  private async stateAfterTurn(state: TaskStateRecord, waitSeconds: number, signal: AbortSignal | undefined): Promise<Readonly<TaskState>> {
    await this.waitForTurn(state.id, state.currentTurnId!, state.lastEventSeq, waitSeconds * 1000, signal);
    return this.sharedStateView((await this.store.tasks.getState(state.id))!);
  }

  /** The body of a state record, made once per record (see stateViews). */
  private sharedStateView(state: TaskStateRecord): Readonly<TaskState> {
    let view = this.stateViews.get(state);
    if (!view) {
      view = stateView(state);
      this.stateViews.set(state, view);
    }
    return view;
  }

  /** One page in list order (single tasks, or the runs of group `filter.groupId`), as records; `nextCursor` when more remain. */
  async list(accountId: string, limit: number, cursor?: string, filter: TaskListFilter = {}): Promise<{ tasks: TaskRecord[]; nextCursor?: string }> {
    const { tasks, next } = await this.listPage(accountId, limit, cursor, filter);
    const byId = new Map((await this.store.tasks.getMany(tasks.map((t) => t.id))).map((t) => [t.id, t]));
    return { tasks: tasks.flatMap((t) => byId.get(t.id) ?? []), ...(next ? { nextCursor: encodeCursor(next) } : {}) };
  }

  /** How many tasks the account's list holds (group runs left out); with `updatedSince`, those updated at or after it. */
  count(accountId: string, updatedSince?: string): Promise<number> {
    return this.store.tasks.countListed(accountId, updatedSince);
  }

  /**
   * The same page as the body of GET /task: each task's view is built once per version of its
   * row, and only the tasks whose view is not held are read in full (task-view-cache.ts).
   */
  async listBody(accountId: string, limit: number, cursor?: string, filter: TaskListFilter = {}): Promise<{ body: Buffer; nextCursor?: string }> {
    const { tasks, next } = await this.listPage(accountId, limit, cursor, filter);
    const request = JSON.stringify([accountId, limit, cursor ?? '', filter]);
    const body = await this.views.pageBody(request, tasks, (ids) => this.store.tasks.getMany(ids));
    return { body, ...(next ? { nextCursor: encodeCursor(next) } : {}) };
  }

  private listPage(accountId: string, limit: number, cursor: string | undefined, filter: TaskListFilter): Promise<TaskListPage> {
    return this.store.tasks.listPage(accountId, limit, cursor ? decodeCursor(cursor) : undefined, storedFilter(filter));
  }

  /**
   * The output a read names (`outputId`), else the task's active one: null when the task has no
   * rows yet and none is named; 404 not_found when the named one is not in the spec.
   */
  async output(accountId: string, taskId: string, outputId?: string): Promise<{ task: TaskRecord; output: OutputDecl | null }> {
    const task = await this.task(accountId, taskId);
    const id = outputId ?? activeOutputOf(task);
    if (!id) return { task, output: null };
    const output = task.spec.outputs.find((o) => o.id === id);
    if (!output) throw new QuarryError('not_found', `Task "${task.id}" has no output "${id}". GET /task/${task.id}/outputs lists them.`);
    return { task, output };
  }

  /** Rows `offset + 1` to `offset + limit` of an output, as stored, and how many it has. */
  async rows(task: TaskRecord, output: OutputDecl, offset: number, limit: number): Promise<{ total: number; rows: Buffer[] }> {
    const stats = await this.outputStats(task);
    const total = stats.find((s) => s.outputId === output.id)?.rowCount ?? 0;
    return { total, rows: offset < total ? await this.rowRange(task, output.id, offset, limit) : [] };
  }

  /** Rows `offset + 1` to `offset + limit` of an output, as stored, when the caller knows which rows there are. */
  rowRange(task: TaskRecord, outputId: string, offset: number, limit: number): Promise<Buffer[]> {
    return this.store.rows.read(task.id, outputId, offset, limit);
  }

  /** Per output that has rows: how many, how many verified, when last written. */
  outputStats(task: TaskRecord): Promise<OutputStatsRecord[]> {
    return this.store.rows.stats(task.id);
  }

  /** Every row of an output, as stored, in order (an export). */
  allRows(task: TaskRecord, output: OutputDecl): AsyncIterable<string> {
    return this.store.rows.iterate(task.id, output.id);
  }

  /** A page of the snapshots of what the task read, in reading order. */
  async sources(accountId: string, taskId: string, limit: number, offset: number): Promise<{ total: number; sources: SourceSnapshotInfo[] }> {
    const task = await this.task(accountId, taskId);
    return this.store.sources.list(task.id, limit, offset);
  }

  /** A page of what the task's turns changed in keyed outputs, oldest first; `nextCursor` when more remain. */
  async changes(accountId: string, taskId: string, query: ChangesQuery): Promise<{ changes: RowChange[]; nextCursor?: string }> {
    const task = await this.task(accountId, taskId);
    const limit = query.limit ?? 100;
    const rows = await this.store.rows.changes(task.id, { sinceTurn: query.since, after: query.after, cursor: query.cursor, limit: limit + 1 });
    const page = rows.slice(0, limit);
    return { changes: page.map(changeView), ...(rows.length > limit ? { nextCursor: page.at(-1)!.id } : {}) };
  }

  /** One snapshot of the task, with its text; else 404 source_not_found. */
  async source(accountId: string, taskId: string, sourceId: string): Promise<SourceSnapshotRecord> {
    const task = await this.task(accountId, taskId);
    const source = await this.store.sources.get(task.id, sourceId);
    if (!source) throw new QuarryError('source_not_found', `No source snapshot with source_id "${sourceId}" in task "${taskId}".`, { task_id: taskId });
    return source;
  }

  /** Stored events after `after`, oldest first, and where the next page starts (null: none). */
  async events(accountId: string, taskId: string, after: number, limit: number): Promise<{ events: EventRecord[]; nextAfter: number | null }> {
    const task = await this.task(accountId, taskId);
    const events = await this.store.events.list(task.id, after, limit);
    const last = events[events.length - 1];
    return { events, nextAfter: events.length === limit && last ? last.seq : null };
  }
}

function stateView(state: TaskStateRecord): TaskState {
  const { turn } = state;
  return {
    task_id: state.id,
    active: state.currentTurnId !== null,
    status: state.status,
    phase: state.phase,
    activity: state.activity,
    waiting: state.waiting,
    queued_messages: state.queuedCount,
    turn: turn ? { id: turn.id, kind: turn.kind, started_at: turn.startedAt } : null,
    last_event_id: state.lastEventSeq,
    last_error: state.lastError,
    updated_at: state.updatedAt,
  };
}
