/**
 * `client.tasks`: every task route — creates, messages, control, reads, streams, outputs and
 * exports — plus the helpers the interface asks callers to build themselves: writes serialized
 * per task, pagination, resumable streams and waiting for a turn to end.
 */
import { QuarryError } from '../errors.js';
import { OutputExport, type ExportFormat } from '../output-export.js';
import { cursorPages, EventPage, PagePromise, RowPage, type CursorPage, type TaskPage } from '../pagination.js';
import { sleep } from '../internal/retry.js';
import { TaskStream } from '../task-stream.js';
import type { TaskWriteQueue } from '../internal/task-write-queue.js';
import type { CallResult, RouteCall, Transport } from '../internal/transport.js';
import type { RequestOptions } from '../request-options.js';
import type {
  OutputInfo, OutputPage, OutputRef, RecheckResult, Row, RowChange, Task, TaskDetail, TaskEvent, TaskState, QueryOf, RequestBody
} from '../types.js';

/**
 * `GET /task/{id}/changes` (and the group's): changes of turns after `since` (a turn id), or
 * written after `after` (an ISO time); page size 1 to 1000 (default 100) and where to start.
 *
 * @example
 * ```ts
 * const params: ChangesParams = { since: lastSeenTurnId, limit: 500 };
 * ```
 */
export type ChangesParams = QueryOf<'listChanges'>;

/**
 * `POST /task`: a prompt; with `task_id` of an existing task, a message to it.
 *
 * @example
 * ```ts
 * const params: CreateTaskParams = { prompt: 'EU battery makers', plan_only: true };
 * ```
 */
export type CreateTaskParams = Omit<RequestBody<'createTask'>, 'wait'>;

/**
 * `POST /task/start`: a spec (always a create), or without `task` the same as `POST /task`.
 *
 * @example
 * ```ts
 * const params: StartTaskParams = { task_id: 'makers-2025', task: { prompt: 'EU battery makers' } };
 * ```
 */
export type StartTaskParams = Omit<RequestBody<'startTask'>, 'wait'>;

/**
 * `GET /task`: page size and where to start.
 *
 * @example
 * ```ts
 * const page = await client.tasks.list({ limit: 100 } satisfies ListTasksParams);
 * ```
 */
export type ListTasksParams = QueryOf<'listTasks'>;

/**
 * `POST /task/{id}/continue`.
 *
 * @example
 * ```ts
 * await client.tasks.continue(taskId, { message: 'Add plants announced for 2027.' } satisfies ContinueParams);
 * ```
 */
export type ContinueParams = RequestBody<'continueTask'>;

/**
 * `POST /task/{id}/execute`.
 *
 * @example
 * ```ts
 * await client.tasks.execute(taskId, { instruction: 'Refresh the capacities.' } satisfies ExecuteParams);
 * ```
 */
export type ExecuteParams = RequestBody<'executeTask'>;

/**
 * `POST /task/{id}/stop`.
 *
 * @example
 * ```ts
 * await client.tasks.stop(taskId, { clear_queue: true } satisfies StopParams);
 * ```
 */
export type StopParams = RequestBody<'stopTask'>;

/**
 * `PATCH /task/{id}`: members left out are unchanged.
 *
 * @example
 * ```ts
 * await client.tasks.update(taskId, { name: 'EU makers', schedule: null } satisfies UpdateTaskParams);
 * ```
 */
export type UpdateTaskParams = RequestBody<'updateTask'>;

/**
 * One page of rows.
 *
 * @example
 * ```ts
 * await client.tasks.output(taskId, { output: 'makers', limit: 500, offset: 1000 } satisfies OutputParams);
 * ```
 */
export type OutputParams = Pick<QueryOf<'getOutput'>, 'output' | 'limit' | 'offset'>;

/**
 * Every row, page by page.
 *
 * @example
 * ```ts
 * for await (const row of client.tasks.rows(taskId, { output: 'makers', pageSize: 5000 } satisfies RowsParams)) console.log(row);
 * ```
 */
export interface RowsParams {
  /** An output id; the active output when absent. */
  output?: string;
  /** Rows per request, 1 to 50,000 (default 1,000). */
  pageSize?: number;
  /** Start after this many rows (default 0). */
  offset?: number;
}

/**
 * A whole output as a file.
 *
 * @example
 * ```ts
 * await client.tasks.export(taskId, { output: 'makers', format: 'jsonl' } satisfies ExportParams);
 * ```
 */
export interface ExportParams {
  /** An output id; the active output when absent. */
  output?: string;
  /** Default `csv`. */
  format?: ExportFormat;
}

/**
 * `GET /task/{id}/events`.
 *
 * @example
 * ```ts
 * for await (const e of client.tasks.events(taskId, { after: 100, limit: 1000 } satisfies EventsParams)) console.log(e.seq);
 * ```
 */
export type EventsParams = QueryOf<'listEvents'>;

/**
 * `GET /task/{id}/stream`. `after: 0` follows from the task's first event, so a turn that ended
 * before the stream opened is still seen; without `after`, an idle task answers its snapshot and
 * an idle `done`.
 *
 * @example
 * ```ts
 * const stream = client.tasks.stream(taskId, { after: earlier.lastEventId } satisfies StreamParams);
 * ```
 */
export type StreamParams = QueryOf<'streamTask'>;

/**
 * A long-poll on `GET /task/{id}` or `/state`.
 *
 * @example
 * ```ts
 * const state = await client.tasks.state(taskId, { wait: 30 } satisfies WaitParams);
 * ```
 */
export type WaitParams = QueryOf<'getTaskState'>;

/**
 * How `waitForTurn` waits.
 *
 * @example
 * ```ts
 * await client.tasks.waitForTurn(taskId, { mode: 'poll', pollAfterS: 5, timeoutMs: 60_000 } satisfies WaitForTurnOptions);
 * ```
 */
export interface WaitForTurnOptions {
  /**
   * `wait` (default): long-poll `GET /state?wait=`; the server answers as soon as the turn ends.
   * `poll`: poll `GET /state`, `poll_after_s` seconds apart.
   */
  mode?: 'wait' | 'poll';
  /** `wait` mode: seconds each long-poll may hold (1 to 60, default 50). */
  waitSeconds?: number;
  /** `poll` mode: seconds between polls; default the task's `poll_after_s` when a Task was passed, else 2. */
  pollAfterS?: number;
  /** Give up (WaitTimeoutError) after this many ms; default no limit. */
  timeoutMs?: number;
}

/**
 * Thrown by `waitForTurn` when its `timeoutMs` passed with a turn still running.
 *
 * @example
 * ```ts
 * try { await client.tasks.waitForTurn(taskId, { timeoutMs: 60_000 }); }
 * catch (err) { if (err instanceof WaitTimeoutError) console.log('still running'); }
 * ```
 */
export class WaitTimeoutError extends QuarryError {
  constructor(taskId: string, timeoutMs: number) {
    super({ error: 'wait_timeout', message: `A turn of ${taskId} was still running after ${timeoutMs} ms.`, retryable: true, task_id: taskId });
  }
}

/** @internal */
export interface TasksDeps {
  transport: Transport;
  writes: TaskWriteQueue;
  streamIdleTimeoutMs: number;
  streamReconnects: number;
}

const BLOCKING_TIMEOUT_MS = 615_000;

function taskPath(taskId: string, rest = ''): string {
  return `/task/${encodeURIComponent(taskId)}${rest}`;
}

/** `/task/{id}/outputs/{output}` when `output` is given, else the active output's `/task/{id}/output`. */
function outputPath(taskId: string, output?: string): string {
  return output ? taskPath(taskId, `/outputs/${encodeURIComponent(output)}`) : taskPath(taskId, '/output');
}

/**
 * The task routes. Reached as `client.tasks`.
 *
 * @example
 * ```ts
 * const client = new QuarryClient();
 * const task = await client.tasks.create({ prompt: 'EU Li-ion cell plants with capacity.' });
 * await client.tasks.waitForTurn(task);
 * for await (const row of client.tasks.rows(task.task_id)) console.log(row);
 * ```
 */
export class Tasks {
  /** @internal */
  constructor(private readonly deps: TasksDeps) {}

  private get transport(): Transport {
    return this.deps.transport;
  }

  /** Runs a write to `taskId` after earlier writes to it; writes without a task id run at once. */
  private serialized<T>(taskId: string | undefined, write: () => Promise<T>): Promise<T> {
    return taskId === undefined ? write() : this.deps.writes.run(taskId, write);
  }

  // ---- creates and messages --------------------------------------------------------------------

  /**
   * Starts a task from a prompt (`POST /task`); answers at once. With `task_id` of an existing
   * task the prompt is a message to it: the answer then has status `accepted` when it was queued.
   * Sent with an Idempotency-Key, so a retry never starts a second task.
   *
   * @example
   * ```ts
   * const task = await client.tasks.create({ prompt: 'List the EU plants making Li-ion cells.' });
   * console.log(task.task_id);
   * ```
   */
  create(params: CreateTaskParams, opts?: RequestOptions): Promise<Task> {
    return this.serialized(params.task_id, () =>
      this.transport.json<Task>({ method: 'POST', path: '/task', json: params, auth: 'key', idempotencyKey: true, resendable: false, createsTask: true }, opts),
    );
  }

  /**
   * Starts a task from a spec (`POST /task/start`); answers at once. Give your own `task_id` to
   * make the create safe to repeat: a repeat then fails with TaskExistsError.
   *
   * @example
   * ```ts
   * const task = await client.tasks.start({
   *   task_id: 'eu-makers-2025',
   *   task: { prompt: 'EU Li-ion cell plants.', outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', required: true }] }] },
   * });
   * ```
   */
  start(params: StartTaskParams, opts?: RequestOptions): Promise<Task> {
    return this.serialized(params.task_id, () =>
      this.transport.json<Task>({ method: 'POST', path: '/task/start', json: params, auth: 'key', idempotencyKey: true, resendable: false, createsTask: true }, opts),
    );
  }

  /**
   * `POST /task/stream`: creates (or messages) like {@link Tasks.create} and streams the events up
   * to the `done` of the turn it caused, resuming after dropped connections. A refusal inside the
   * stream (out of credits, task executing…) is thrown as the matching error class.
   *
   * @example
   * ```ts
   * const text = new ModelText();
   * for await (const event of client.tasks.createAndStream({ prompt: 'Who makes solid-state batteries in Japan?' })) text.add(event);
   * console.log(text.value);
   * ```
   */
  createAndStream(params: CreateTaskParams, opts: RequestOptions = {}): TaskStream {
    return this.turnStream(params.task_id, '/task/stream', params, opts);
  }

  /**
   * `POST /task/start/stream`: as {@link Tasks.start}, answered with the events of the turn it caused.
   *
   * @example
   * ```ts
   * const stream = client.tasks.startAndStream({ task: { prompt: 'EU Li-ion cell plants.' } });
   * const done = await stream.finalDone();
   * ```
   */
  startAndStream(params: StartTaskParams, opts: RequestOptions = {}): TaskStream {
    return this.turnStream(params.task_id, '/task/start/stream', params, opts);
  }

  /**
   * Sends a message (`POST /task/{id}/continue`): runs now when the task is idle (status
   * `execute`), queued while a turn runs (status `accepted`). Writes to one task go out one at a
   * time, in call order.
   *
   * @example
   * ```ts
   * const answer = await client.tasks.continue(taskId, { message: 'Add plants announced for 2027.' });
   * if (answer.status === 'accepted') console.log('queued behind the running turn');
   * ```
   */
  continue(taskId: string, params: ContinueParams, opts: RequestOptions = {}): Promise<Task> {
    return this.serialized(taskId, () =>
      this.transport.json<Task>(
        { method: 'POST', path: taskPath(taskId, '/continue'), json: params, auth: 'key', idempotencyKey: true, resendable: false },
        blocking(params.wait, opts),
      ),
    );
  }

  /**
   * `POST /task/{id}/continue/stream`: sends a message and streams up to the `done` of its turn.
   *
   * @example
   * ```ts
   * for await (const event of client.tasks.continueAndStream(taskId, { message: 'Also cover Norway.' })) console.log(event.type);
   * ```
   */
  continueAndStream(taskId: string, params: Omit<ContinueParams, 'wait'>, opts: RequestOptions = {}): TaskStream {
    return this.turnStream(taskId, taskPath(taskId, '/continue/stream'), params, opts);
  }

  /**
   * Runs the current spec again (`POST /task/{id}/execute`). Never queued: while a turn runs it
   * fails with TaskExecutingError (after the client's retries); `waitForTurn` first.
   *
   * @example
   * ```ts
   * await client.tasks.waitForTurn(taskId);
   * await client.tasks.execute(taskId, { instruction: 'Refresh the capacities.' });
   * ```
   */
  execute(taskId: string, params: ExecuteParams = {}, opts: RequestOptions = {}): Promise<Task> {
    return this.serialized(taskId, () =>
      this.transport.json<Task>(
        { method: 'POST', path: taskPath(taskId, '/execute'), json: params, auth: 'key', idempotencyKey: true, resendable: false },
        blocking(params.wait, opts),
      ),
    );
  }

  /**
   * `POST /task/{id}/execute/stream`: runs the spec again and streams up to that turn's `done`.
   *
   * @example
   * ```ts
   * const done = await client.tasks.executeAndStream(taskId).finalDone();
   * ```
   */
  executeAndStream(taskId: string, params: Omit<ExecuteParams, 'wait'> = {}, opts: RequestOptions = {}): TaskStream {
    return this.turnStream(taskId, taskPath(taskId, '/execute/stream'), params, opts);
  }

  /**
   * Stops the running turn (rows written are kept); a no-op on an idle task. Not resent after a
   * lost answer, since a second stop could stop the next queued message's turn.
   *
   * @example
   * ```ts
   * await client.tasks.stop(taskId, { clear_queue: true });
   * ```
   */
  stop(taskId: string, params: StopParams = {}, opts?: RequestOptions): Promise<Task> {
    return this.serialized(taskId, () =>
      this.transport.json<Task>({ method: 'POST', path: taskPath(taskId, '/stop'), json: params, auth: 'key', resendable: false }, opts),
    );
  }

  /**
   * Renames, pins, or enters and leaves cron mode (`PATCH /task/{id}`).
   *
   * @example
   * ```ts
   * await client.tasks.update(taskId, { pinned: true, schedule: { cron: '0 7 * * 1', timezone: 'Europe/Berlin' } });
   * ```
   */
  update(taskId: string, params: UpdateTaskParams, opts?: RequestOptions): Promise<Task> {
    return this.serialized(taskId, () =>
      this.transport.json<Task>({ method: 'PATCH', path: taskPath(taskId), json: params, auth: 'key', resendable: true }, opts),
    );
  }

  /**
   * Deletes the task (its turn is stopped); answers with status `deleted`.
   *
   * @example
   * ```ts
   * const gone = await client.tasks.delete(taskId);
   * console.log(gone.status); // "deleted"
   * ```
   */
  delete(taskId: string, opts?: RequestOptions): Promise<Task> {
    return this.serialized(taskId, () =>
      this.transport.json<Task>({ method: 'DELETE', path: taskPath(taskId), auth: 'key', resendable: false }, opts),
    );
  }

  // ---- reads -----------------------------------------------------------------------------------

  /**
   * Lists tasks, pinned first, then most recently updated. `await` it for one page; `for await`
   * over it for every task, following `X-Next-Cursor` page by page. A group's runs are listed
   * only with `group_id`. `q`, `state`, `outcome`, `created_after` and `created_before` filter it.
   *
   * @example
   * ```ts
   * for await (const task of client.tasks.list({ limit: 200 })) console.log(task.task_id, task.status);
   * for await (const run of client.tasks.list({ group_id: groupId })) console.log(run.input_index, run.task_id);
   * ```
   */
  list(params: ListTasksParams = {}, opts?: RequestOptions): PagePromise<TaskPage<Task>, Task> {
    return cursorPages(async (cursor) => {
      const { response, text } = await this.transport.send({ method: 'GET', path: '/task', query: { ...params, cursor }, auth: 'key', resendable: true }, opts);
      return { data: JSON.parse(text) as Task[], nextCursor: response.headers.get('x-next-cursor') };
    }, params.cursor);
  }

  /**
   * What the task's turns changed in its keyed table outputs, oldest first
   * (`GET /task/{id}/changes`): each row added or changed, its cells before and after, its
   * sources before and after; `since` (a turn id) or `after` (a time) narrows it. `await` it for
   * one page; `for await` over it for every change.
   *
   * @example
   * ```ts
   * for await (const c of client.tasks.changes(taskId, { since: lastTurnId })) console.log(c.change, c.key, c.fields);
   * ```
   */
  changes(taskId: string, params: ChangesParams = {}, opts?: RequestOptions): PagePromise<CursorPage<RowChange>, RowChange> {
    return cursorPages(async (cursor) => {
      const { response, text } = await this.transport.send(
        { method: 'GET', path: taskPath(taskId, '/changes'), query: { since: params.since, after: params.after, limit: params.limit, cursor }, auth: 'key', resendable: true },
        opts,
      );
      return { data: (JSON.parse(text) as { changes: RowChange[] }).changes, nextCursor: response.headers.get('x-next-cursor') };
    }, params.cursor);
  }

  /**
   * The task with its spec and last 100 events; with `wait`, held until the running turn ends
   * (at most `wait` seconds). Also shows deleted tasks.
   *
   * @example
   * ```ts
   * const detail = await client.tasks.retrieve(taskId, { wait: 30 });
   * console.log(detail.status, detail.spec.outputs.length);
   * ```
   */
  retrieve(taskId: string, params: WaitParams = {}, opts: RequestOptions = {}): Promise<TaskDetail> {
    return this.transport.json<TaskDetail>({ method: 'GET', path: taskPath(taskId), query: { wait: params.wait }, auth: 'key', resendable: true }, longPoll(params.wait, opts));
  }

  /**
   * The cheap poll (`GET /task/{id}/state`); with `wait`, held until the running turn ends.
   *
   * @example
   * ```ts
   * const state = await client.tasks.state(taskId);
   * if (!state.active) console.log('idle');
   * ```
   */
  state(taskId: string, params: WaitParams = {}, opts: RequestOptions = {}): Promise<TaskState> {
    return this.transport.json<TaskState>({ method: 'GET', path: taskPath(taskId, '/state'), query: { wait: params.wait }, auth: 'key', resendable: true }, longPoll(params.wait, opts));
  }

  /**
   * Follows the task (`GET /task/{id}/stream`) until no turn runs and nothing is queued; on an
   * idle task, a snapshot and a `done` with outcome `idle`. Resumes by `Last-Event-ID` after a
   * dropped connection, handing out every event once.
   *
   * @example
   * ```ts
   * for await (const event of client.tasks.stream(taskId)) {
   *   if (event.type === 'done') console.log(event.outcome);
   * }
   * ```
   */
  stream(taskId: string, params: StreamParams = {}, opts: RequestOptions = {}): TaskStream {
    // No `open`: the first connection is the same GET /task/{id}/stream a reconnect sends.
    return new TaskStream({
      ...this.streamSettings(opts),
      mode: 'follow',
      taskId,
      after: params.after,
    });
  }

  /**
   * Pages through the stored event history (`GET /task/{id}/events`), oldest first.
   *
   * @example
   * ```ts
   * for await (const event of client.tasks.events(taskId, { limit: 1000 })) console.log(event.seq, event.type);
   * ```
   */
  events(taskId: string, params: EventsParams = {}, opts?: RequestOptions): PagePromise<EventPage<TaskEvent>, TaskEvent> {
    const load = async (after: number | undefined): Promise<EventPage<TaskEvent>> => {
      const page = await this.transport.json<{ events: TaskEvent[]; next_after: number | null }>(
        { method: 'GET', path: taskPath(taskId, '/events'), query: { after, limit: params.limit }, auth: 'key', resendable: true },
        opts,
      );
      const next = page.next_after;
      return new EventPage(page.events, next, next !== null ? () => load(next) : null);
    };
    return new PagePromise(() => load(params.after));
  }

  /**
   * The task's named outputs with row counts (`GET /task/{id}/outputs`).
   *
   * @example
   * ```ts
   * for (const o of await client.tasks.outputs(taskId)) console.log(o.id, o.kind, o.row_count);
   * ```
   */
  async outputs(taskId: string, opts?: RequestOptions): Promise<OutputInfo[]> {
    const body = await this.transport.json<{ outputs: OutputInfo[] }>({ method: 'GET', path: taskPath(taskId, '/outputs'), auth: 'key', resendable: true }, opts);
    return body.outputs;
  }

  /**
   * Checks every row's sources and cells again against the task's stored snapshots
   * (`POST /task/{id}/recheck`); nothing is fetched. Resent after a lost answer: a second recheck
   * changes nothing.
   *
   * @example
   * ```ts
   * const { rows, changed } = await client.tasks.recheck(taskId);
   * ```
   */
  recheck(taskId: string, opts?: RequestOptions): Promise<RecheckResult> {
    return this.transport.json<RecheckResult>({ method: 'POST', path: taskPath(taskId, '/recheck'), json: {}, auth: 'key', resendable: true }, opts);
  }

  /**
   * One page of rows: `/task/{id}/outputs/{output}` when `output` is given, else the active output.
   *
   * @example
   * ```ts
   * const page = await client.tasks.output(taskId, { output: 'makers', limit: 100, offset: 0 });
   * console.log(page.total, page.rows[0]?._sources);
   * ```
   */
  output(taskId: string, params: OutputParams = {}, opts?: RequestOptions): Promise<OutputPage> {
    const path = outputPath(taskId, params.output);
    return this.transport.json<OutputPage>({ method: 'GET', path, query: { limit: params.limit, offset: params.offset }, auth: 'key', resendable: true }, opts);
  }

  /**
   * Every row of an output, `pageSize` rows per request (offset/limit). `await` it for the first
   * page (with `total`), or `for await` over it for every row.
   *
   * @example
   * ```ts
   * for await (const row of client.tasks.rows(taskId, { output: 'makers' })) console.log(row._row, row.company);
   * ```
   */
  rows(taskId: string, params: RowsParams = {}, opts?: RequestOptions): PagePromise<RowPage<Row, OutputRef | null>, Row> {
    const limit = params.pageSize ?? 1000;
    const load = async (offset: number): Promise<RowPage<Row, OutputRef | null>> => {
      const page = await this.output(taskId, { output: params.output, limit, offset }, opts);
      // A full page may have more behind it (rows are only appended, and may still be coming).
      const full = page.rows.length === limit;
      return new RowPage(page.rows, page.total, offset, page.output, full ? () => load(offset + limit) : null);
    };
    return new PagePromise(() => load(params.offset ?? 0));
  }

  /**
   * Streams a whole output as a CSV or JSONL file.
   *
   * @example
   * ```ts
   * const file = await client.tasks.export(taskId, { output: 'makers', format: 'jsonl' });
   * for await (const row of file.rows()) console.log(row._row);
   * ```
   */
  async export(taskId: string, params: ExportParams = {}, opts: RequestOptions = {}): Promise<OutputExport> {
    const format = params.format ?? 'csv';
    const path = outputPath(taskId, params.output);
    const result = await this.transport.send(
      { method: 'GET', path, query: { format }, auth: 'key', accept: format === 'csv' ? 'text/csv' : 'application/x-ndjson', resendable: true, streaming: true },
      opts,
    );
    return new OutputExport(result.response, format, result.requestId, opts.signal);
  }

  /**
   * Resolves once no turn runs on the task (`active` false), with its state: the moment to send
   * an `execute`, or to read the finished rows. Long-polls `/state?wait=` by default; `mode:
   * 'poll'` polls `/state` every `poll_after_s` seconds instead.
   *
   * @example
   * ```ts
   * const task = await client.tasks.create({ prompt: 'EU battery makers' });
   * const state = await client.tasks.waitForTurn(task, { timeoutMs: 10 * 60_000 });
   * console.log(state.status); // "plan"
   * ```
   */
  async waitForTurn(task: string | Pick<Task, 'task_id' | 'poll_after_s'>, options: WaitForTurnOptions = {}, opts: RequestOptions = {}): Promise<TaskState> {
    const taskId = typeof task === 'string' ? task : task.task_id;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    const mode = options.mode ?? 'wait';
    const waitSeconds = Math.min(60, Math.max(1, Math.round(options.waitSeconds ?? 50)));
    const pollMs = 1000 * (options.pollAfterS ?? (typeof task === 'string' ? 2 : Math.max(1, task.poll_after_s)));
    for (;;) {
      const left = deadline - Date.now();
      const wait = mode === 'wait' ? Math.max(0, Math.min(waitSeconds, Math.floor(left / 1000))) : undefined;
      const state = await this.state(taskId, { wait }, opts);
      if (!state.active) return state;
      if (Date.now() >= deadline) throw new WaitTimeoutError(taskId, options.timeoutMs!);
      if (mode === 'poll' || wait === 0) await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())), opts.signal);
    }
  }

  // ---- internals -------------------------------------------------------------------------------

  private streamSettings(opts: RequestOptions) {
    return {
      transport: this.transport,
      options: opts,
      idleTimeoutMs: this.deps.streamIdleTimeoutMs,
      maxReconnects: this.deps.streamReconnects,
      backoff: this.transport.options,
    };
  }

  /** A start or message stream; the write lock on the task is held until the stream has opened. */
  private turnStream(taskId: string | undefined, path: string, body: object, opts: RequestOptions): TaskStream {
    const call: RouteCall = { method: 'POST', path, json: body, auth: 'key', accept: 'text/event-stream', resendable: false, createsTask: true, streaming: true };
    return new TaskStream({
      ...this.streamSettings(opts),
      mode: 'turn',
      taskId,
      open: (signal): Promise<CallResult> => this.serialized(taskId, () => this.transport.send(call, { ...opts, signal })),
    });
  }
}

/** A blocking `wait` on continue/execute holds the answer up to 600 s: give the attempt that long. */
function blocking(wait: boolean | number | undefined, opts: RequestOptions): RequestOptions {
  const blocks = wait === true || (typeof wait === 'number' && wait > 0);
  return blocks && opts.timeoutMs === undefined ? { ...opts, timeoutMs: BLOCKING_TIMEOUT_MS } : opts;
}

/** A long-poll holds the answer up to `wait` seconds: the attempt may take that much longer. */
function longPoll(wait: number | undefined, opts: RequestOptions): RequestOptions {
  return wait && opts.timeoutMs === undefined ? { ...opts, timeoutMs: wait * 1000 + 30_000 } : opts;
}
