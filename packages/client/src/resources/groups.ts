/**
 * `client.groups`: task groups (one spec run over many inputs, each input a run), their merged
 * rows paged, iterated and exported, their resumable event stream, and a helper that uploads a
 * local CSV or JSON Lines file and makes a group of its records.
 */
import { ConnectionError, QuarryAbortError, QuarryError } from '../errors.js';
import { anySignal } from '../internal/any-signal.js';
import { backoffMs, sleep, type BackoffOptions } from '../internal/retry.js';
import { SseDecoder } from '../internal/sse-decoder.js';
import type { CallResult, Transport } from '../internal/transport.js';
import { OutputExport, type ExportFormat } from '../output-export.js';
import { cursorPages, PagePromise, RowPage, type CursorPage } from '../pagination.js';
import type { RequestOptions } from '../request-options.js';
import type { Group, GroupDetail, GroupDoneEvent, GroupEvent, GroupRow, GroupRowsPage, QueryOf, RequestBody } from '../types.js';
import type { Uploads } from './uploads.js';

/**
 * `POST /group`: the spec (with `input_columns` and exactly one table output), and the inputs
 * inline (`inputs`, at most 1,000) or as an uploaded file (`input_upload_id`).
 *
 * @example
 * ```ts
 * const params: CreateGroupParams = {
 *   name: 'HQ cities',
 *   task: {
 *     prompt: 'Find the headquarters city of the company.',
 *     input_columns: [{ name: 'company', type: 'string', required: true }],
 *     outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'hq', type: 'string' }] }],
 *   },
 *   inputs: [{ company: 'Northvolt' }, { company: 'ACC', _key: 'acc' }],
 *   max_parallel: 4,
 * };
 * ```
 */
export type CreateGroupParams = RequestBody<'createGroup'>;

/**
 * `POST /group/{id}/inputs`: more inputs, inline or as an uploaded file.
 *
 * @example
 * ```ts
 * await client.groups.addInputs(groupId, { inputs: [{ company: 'Verkor' }] } satisfies AddGroupInputsParams);
 * ```
 */
export type AddGroupInputsParams = RequestBody<'addGroupInputs'>;

/**
 * `GET /group`: page size (1 to 200, default 50) and where to start.
 *
 * @example
 * ```ts
 * const page = await client.groups.list({ limit: 20 } satisfies ListGroupsParams);
 * ```
 */
export type ListGroupsParams = QueryOf<'listGroups'>;

/**
 * One page of merged rows: `limit` (1 to 10,000, default 100) from `offset` (default 0).
 *
 * @example
 * ```ts
 * const { total, rows } = await client.groups.rows(groupId, { limit: 500, offset: 1000 } satisfies GroupRowsParams);
 * ```
 */
export type GroupRowsParams = Pick<QueryOf<'getGroupRows'>, 'limit' | 'offset'>;

/**
 * Every merged row, page by page.
 *
 * @example
 * ```ts
 * for await (const row of client.groups.iterateRows(groupId, { pageSize: 5000 } satisfies IterateGroupRowsParams)) console.log(row._input);
 * ```
 */
export interface IterateGroupRowsParams {
  /** Rows per request, 1 to 10,000 (default 1,000). */
  pageSize?: number;
  /** Start after this many merged rows (default 0). */
  offset?: number;
}

/**
 * `GET /group/{id}/stream`: resume after the `seq` of an event already seen.
 *
 * @example
 * ```ts
 * const stream = client.groups.stream(groupId, { lastEventId: earlier.lastEventId } satisfies GroupStreamParams);
 * ```
 */
export interface GroupStreamParams {
  lastEventId?: number;
}

/**
 * How a group's input file is read: a CSV file with a header row naming the columns, or JSON
 * Lines (one object per line).
 *
 * @example
 * ```ts
 * const format: GroupInputFormat = 'jsonl';
 * ```
 */
export type GroupInputFormat = 'csv' | 'jsonl';

/**
 * `createFromFile`: the group's settings (as {@link CreateGroupParams}, without the inputs), and
 * the file's format when its name does not end in `.csv`, `.jsonl` or `.ndjson`.
 *
 * @example
 * ```ts
 * const params: CreateGroupFromFileParams = { task: spec, name: 'HQ cities', max_parallel: 8, max_credits: 50 };
 * ```
 */
export type CreateGroupFromFileParams = Omit<CreateGroupParams, 'inputs' | 'input_upload_id'> & { format?: GroupInputFormat };

/** @internal */
export interface GroupsDeps {
  transport: Transport;
  uploads: Uploads;
  streamIdleTimeoutMs: number;
  streamReconnects: number;
}

const CONTENT_TYPES: Record<GroupInputFormat, string> = { csv: 'text/csv', jsonl: 'application/x-ndjson' };

function groupPath(groupId: string, rest = ''): string {
  return `/group/${encodeURIComponent(groupId)}${rest}`;
}

/** The format a file's name says; the server reads an upload by its content type, which is set from this. */
function inputFormat(file: string, format: GroupInputFormat | undefined): GroupInputFormat {
  if (format) return format;
  if (/\.csv$/i.test(file)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(file)) return 'jsonl';
  throw new Error(`Cannot tell whether ${file} is CSV or JSON Lines: name it .csv or .jsonl, or give its format.`);
}

/**
 * The group routes. Reached as `client.groups`.
 *
 * @example
 * ```ts
 * const group = await client.groups.createFromFile('companies.csv', { task: spec, max_parallel: 8 });
 * const done = await client.groups.stream(group.group_id).finalDone();
 * for await (const row of client.groups.iterateRows(group.group_id)) console.log(row._input, row.company, row.hq);
 * ```
 */
export class Groups {
  /** @internal */
  constructor(private readonly deps: GroupsDeps) {}

  private get transport(): Transport {
    return this.deps.transport;
  }

  /**
   * Creates a group (`POST /group`): every input is checked against the spec's `input_columns`
   * first (a bad one is a ValidationError naming its index and column, and nothing is stored),
   * then the first `max_parallel` runs start. Sent with an Idempotency-Key, so a retry never
   * makes a second group.
   *
   * @example
   * ```ts
   * const group = await client.groups.create({ task: spec, inputs: [{ company: 'Northvolt' }, { company: 'ACC' }] });
   * console.log(group.group_id, group.counts.running);
   * ```
   */
  create(params: CreateGroupParams, opts?: RequestOptions): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({ method: 'POST', path: '/group', json: params, auth: 'key', idempotencyKey: true, resendable: false }, opts);
  }

  /**
   * Uploads a local CSV or JSON Lines file (read from disk as it is sent) and creates a group
   * with one input per record. Node.js only (it reads the file with `node:fs`).
   *
   * @example
   * ```ts
   * const group = await client.groups.createFromFile('companies.csv', { task: spec, name: 'HQ cities', max_parallel: 8, max_credits: 50 });
   * ```
   */
  async createFromFile(file: string, params: CreateGroupFromFileParams, opts?: RequestOptions): Promise<GroupDetail> {
    const { format, ...body } = params;
    const input_upload_id = await this.uploadInputs(file, format, opts);
    return this.create({ ...body, input_upload_id }, opts);
  }

  /**
   * Adds inputs to a group (`POST /group/{id}/inputs`), also while it runs; a finished or
   * stopped group runs again. An input whose `_key` the group already has is counted in
   * `duplicates` and not run: give inputs keys to make a repeat of this call harmless, as it is
   * not resent after a lost answer.
   *
   * @example
   * ```ts
   * const group = await client.groups.addInputs(groupId, { inputs: [{ company: 'Verkor', _key: 'verkor' }] });
   * console.log(group.inputs, group.duplicates);
   * ```
   */
  addInputs(groupId: string, params: AddGroupInputsParams, opts?: RequestOptions): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({ method: 'POST', path: groupPath(groupId, '/inputs'), json: params, auth: 'key', resendable: false }, opts);
  }

  /**
   * Uploads a local CSV or JSON Lines file and adds its records to a group. Node.js only.
   *
   * @example
   * ```ts
   * await client.groups.addInputsFromFile(groupId, 'more-companies.jsonl');
   * ```
   */
  async addInputsFromFile(groupId: string, file: string, params: { format?: GroupInputFormat } = {}, opts?: RequestOptions): Promise<GroupDetail> {
    const input_upload_id = await this.uploadInputs(file, params.format, opts);
    return this.addInputs(groupId, { input_upload_id }, opts);
  }

  /**
   * The group with its counts and spec (`GET /group/{id}`); NotFoundError `group_not_found` for
   * an id of no group of this account.
   *
   * @example
   * ```ts
   * const { status, counts, credits_used } = await client.groups.get(groupId);
   * ```
   */
  get(groupId: string, opts?: RequestOptions): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({ method: 'GET', path: groupPath(groupId), auth: 'key', resendable: true }, opts);
  }

  /**
   * Lists groups, newest first. `await` it for one page; `for await` over it for every group,
   * following `X-Next-Cursor` page by page.
   *
   * @example
   * ```ts
   * for await (const group of client.groups.list({ limit: 200 })) console.log(group.group_id, group.status);
   * ```
   */
  list(params: ListGroupsParams = {}, opts?: RequestOptions): PagePromise<CursorPage<Group>, Group> {
    return cursorPages(async (cursor) => {
      const { response, text } = await this.transport.send({ method: 'GET', path: '/group', query: { limit: params.limit, cursor }, auth: 'key', resendable: true }, opts);
      return { data: JSON.parse(text) as Group[], nextCursor: response.headers.get('x-next-cursor') };
    }, params.cursor);
  }

  /**
   * One page of the merged table (`GET /group/{id}/rows`), in input order, and `total`, the
   * merged rows so far.
   *
   * @example
   * ```ts
   * const { total, rows } = await client.groups.rows(groupId, { limit: 100, offset: 0 });
   * console.log(`${rows.length} of ${total}`, rows[0]?._run.task_id);
   * ```
   */
  rows(groupId: string, params: GroupRowsParams = {}, opts?: RequestOptions): Promise<GroupRowsPage> {
    return this.transport.json<GroupRowsPage>(
      { method: 'GET', path: groupPath(groupId, '/rows'), query: { limit: params.limit, offset: params.offset }, auth: 'key', resendable: true },
      opts,
    );
  }

  /**
   * Every merged row, `pageSize` rows per request. `await` it for the first page (with `total`;
   * its `output` is null), or `for await` over it for every row. Rows are in input order and a
   * run's rows arrive when it ends, so read a finished group (or `export` it) for a stable
   * table: pages read while runs end may miss or repeat rows.
   *
   * @example
   * ```ts
   * for await (const row of client.groups.iterateRows(groupId)) console.log(row._input, row.company, row.hq);
   * ```
   */
  iterateRows(groupId: string, params: IterateGroupRowsParams = {}, opts?: RequestOptions): PagePromise<RowPage<GroupRow, null>, GroupRow> {
    const limit = params.pageSize ?? 1000;
    const load = async (offset: number): Promise<RowPage<GroupRow, null>> => {
      const page = await this.rows(groupId, { limit, offset }, opts);
      const full = page.rows.length === limit;
      return new RowPage(page.rows, page.total, offset, null, full ? () => load(offset + limit) : null);
    };
    return new PagePromise(() => load(params.offset ?? 0));
  }

  /**
   * Streams every merged row as a CSV or JSONL file (`GET /group/{id}/rows?format=`), in
   * constant memory. Iterate it for bytes, or use `lines()` or `text()`.
   *
   * @example
   * ```ts
   * const file = await client.groups.export(groupId, 'csv');
   * console.log(file.filename); // grp_….csv
   * for await (const line of file.lines()) console.log(line);
   * ```
   */
  async export(groupId: string, format: ExportFormat = 'csv', opts: RequestOptions = {}): Promise<OutputExport> {
    const result = await this.transport.send(
      {
        method: 'GET', path: groupPath(groupId, '/rows'), query: { format }, auth: 'key',
        accept: format === 'csv' ? 'text/csv' : 'application/x-ndjson', resendable: true, streaming: true,
      },
      opts,
    );
    return new OutputExport(result.response, format, result.requestId, opts.signal);
  }

  /**
   * Follows the group (`GET /group/{id}/stream`): its `run`, `group` and `done` events, ending
   * at the group's latest `done` (no run pending or running). Resumes by `Last-Event-ID` after
   * a dropped connection, handing out every event once; `lastEventId` resumes an earlier
   * stream. Nothing is sent until the stream is iterated.
   *
   * @example
   * ```ts
   * for await (const event of client.groups.stream(groupId)) {
   *   if (event.type === 'run' && event.status === 'failed') console.warn('input', event.input, 'failed');
   *   if (event.type === 'done') console.log(event.group.counts);
   * }
   * ```
   */
  stream(groupId: string, params: GroupStreamParams = {}, opts: RequestOptions = {}): GroupStream {
    return new GroupStream({
      transport: this.transport,
      groupId,
      lastEventId: params.lastEventId,
      options: opts,
      idleTimeoutMs: this.deps.streamIdleTimeoutMs,
      maxReconnects: this.deps.streamReconnects,
      backoff: this.transport.options,
    });
  }

  /**
   * Stops the group (`POST /group/{id}/stop`): pending inputs become `stopped` at once, running
   * runs are stopped (rows written are kept). Resent after a lost answer: a second stop of a
   * stopped group changes nothing.
   *
   * @example
   * ```ts
   * const group = await client.groups.stop(groupId);
   * console.log(group.status, group.counts.stopped);
   * ```
   */
  stop(groupId: string, opts?: RequestOptions): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({ method: 'POST', path: groupPath(groupId, '/stop'), json: {}, auth: 'key', resendable: true }, opts);
  }

  /**
   * Runs the failed inputs again, each as a new run (`POST /group/{id}/retry`); a group without
   * failed runs is answered unchanged. Not resent after a lost answer: by then a retried run may
   * have failed again, and a resend would run it a third time.
   *
   * @example
   * ```ts
   * const group = await client.groups.retry(groupId);
   * if (group.status === 'running') await client.groups.stream(groupId).finalDone();
   * ```
   */
  retry(groupId: string, opts?: RequestOptions): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({ method: 'POST', path: groupPath(groupId, '/retry'), json: {}, auth: 'key', resendable: false }, opts);
  }

  /** Uploads an input file under its own name, with the content type of its format; answers the upload id. */
  private async uploadInputs(file: string, format: GroupInputFormat | undefined, opts?: RequestOptions): Promise<string> {
    const contentType = CONTENT_TYPES[inputFormat(file, format)];
    // Loaded here, not at the top, so the client still loads where node:fs does not exist.
    const { openAsBlob } = await import('node:fs');
    const data = await openAsBlob(file, { type: contentType });
    const filename = file.split(/[\\/]/).pop() || file;
    const { upload_id } = await this.deps.uploads.upload({ data, filename, content_type: contentType }, opts);
    return upload_id;
  }
}

// ---- the group's stream ------------------------------------------------------------------------

const GROUP_EVENT_TYPES = new Set(['run', 'group', 'done']);

/** @internal */
export interface GroupStreamInit {
  transport: Transport;
  groupId: string;
  lastEventId?: number;
  options: RequestOptions;
  /** A connection that delivers nothing (not even a ping) for this long is treated as dropped. */
  idleTimeoutMs: number;
  /** Reconnects in a row that bring no new event before the stream gives up. */
  maxReconnects: number;
  backoff: BackoffOptions;
}

/**
 * A group's event stream, consumed with `for await`; it can be iterated once. It ends after the
 * group's latest `done`, resuming after dropped connections as a task's stream does (Last-Event-ID;
 * ConnectionError after `streamReconnects` reconnects in a row that bring nothing new).
 *
 * @example
 * ```ts
 * const stream = client.groups.stream(groupId);
 * for await (const event of stream) {
 *   if (event.type === 'group') console.log(event.reason, event.group.counts);
 * }
 * console.log('resume later after', stream.lastEventId);
 * ```
 */
export class GroupStream implements AsyncIterable<GroupEvent> {
  private readonly closer = new AbortController();
  private started = false;
  private lastSeq: number | undefined;
  private reconnectCount = 0;

  /** @internal Built by the `groups` resource. */
  constructor(private readonly init: GroupStreamInit) {
    this.lastSeq = init.lastEventId !== undefined && init.lastEventId > 0 ? init.lastEventId : undefined;
  }

  get groupId(): string {
    return this.init.groupId;
  }

  /** Sequence number of the last event handed out: resume from it with `stream(id, { lastEventId })`. */
  get lastEventId(): number | undefined {
    return this.lastSeq;
  }

  /** How many times the stream has reconnected so far. */
  get reconnects(): number {
    return this.reconnectCount;
  }

  /**
   * Stops reading and closes the connection; a running `for await` then ends quietly. The group
   * keeps running.
   *
   * @example
   * ```ts
   * setTimeout(() => stream.close(), 60_000);
   * for await (const event of stream) console.log(event.type);
   * ```
   */
  close(): void {
    this.closer.abort();
  }

  /**
   * Reads the stream to its end and returns its last `done` (undefined if it was closed first).
   *
   * @example
   * ```ts
   * const done = await client.groups.stream(groupId).finalDone();
   * if (done && done.group.counts.failed > 0) await client.groups.retry(groupId);
   * ```
   */
  async finalDone(): Promise<GroupDoneEvent | undefined> {
    let last: GroupDoneEvent | undefined;
    for await (const event of this) if (event.type === 'done') last = event;
    return last;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GroupEvent> {
    if (this.started) throw new Error('A GroupStream can be iterated only once.');
    this.started = true;
    const state = { failures: 0 };
    for (;;) {
      let result: CallResult;
      try {
        result = await this.connect();
      } catch (err) {
        if (this.closer.signal.aborted && !this.init.options.signal?.aborted) return;
        throw err;
      }
      if ((yield* this.read(result, state)) === 'finished') return;
      state.failures += 1;
      if (state.failures > this.init.maxReconnects) {
        throw new ConnectionError(`The event stream of ${this.groupId} dropped ${state.failures} times in a row without delivering an event.`, { request_id: result.requestId });
      }
      await sleep(backoffMs(state.failures - 1, this.init.backoff), this.signal(), result.requestId).catch((err: unknown) => {
        if (!(err instanceof QuarryAbortError) || this.init.options.signal?.aborted) throw err;
      });
      if (this.closer.signal.aborted) return;
      this.reconnectCount += 1;
    }
  }

  /**
   * Reads one connection and yields its new events; each new event resets `state.failures` (the
   * connections in a row that brought nothing). The stream is over when the server ended the
   * connection right after a `done` (it ends a group's stream at its latest `done`), or answered
   * 204 to a resume with nothing new; any other end is a drop, resumed by the caller.
   */
  private async *read(result: CallResult, state: { failures: number }): AsyncGenerator<GroupEvent, 'finished' | 'dropped'> {
    if (result.response.status === 204) return 'finished';
    const body = result.response.body;
    if (!body) return 'dropped';
    if (!/^text\/event-stream\b/i.test(result.response.headers.get('content-type') ?? '')) {
      await body.cancel().catch(() => undefined);
      throw new QuarryError({ status: result.response.status, error: 'invalid_stream', message: 'The server did not answer with an event stream.', retryable: false, request_id: result.requestId });
    }
    const reader = body.getReader();
    const stopReading = () => void reader.cancel().catch(() => undefined);
    this.closer.signal.addEventListener('abort', stopReading, { once: true });
    this.init.options.signal?.addEventListener('abort', stopReading, { once: true });
    const text = new TextDecoder();
    const decoder = new SseDecoder();
    let lastWasDone = false;
    let silent = false;
    let idle: ReturnType<typeof setTimeout> | undefined;
    try {
      for (;;) {
        // The idle clock runs only while waiting for the server, never while the caller holds an event.
        idle = setTimeout(() => {
          silent = true;
          stopReading();
        }, this.init.idleTimeoutMs);
        let chunk: Awaited<ReturnType<typeof reader.read>> | undefined;
        try {
          chunk = await reader.read();
        } catch {
          chunk = undefined; // the connection failed
        } finally {
          clearTimeout(idle);
        }
        if (this.stopped()) return this.endStopped();
        if (!chunk || silent) return 'dropped';
        if (chunk.done) return lastWasDone ? 'finished' : 'dropped';
        for (const frame of decoder.push(text.decode(chunk.value, { stream: true }))) {
          // Frames without an id are not stored (a replay failure's error, before the server
          // ends the connection): the reconnect gets what they are about.
          const seq = Number(frame.id);
          if (frame.id === undefined || !Number.isFinite(seq) || (this.lastSeq !== undefined && seq <= this.lastSeq)) continue;
          this.lastSeq = seq;
          if (!GROUP_EVENT_TYPES.has(frame.event)) continue;
          let event: GroupEvent;
          try {
            event = JSON.parse(frame.data) as GroupEvent;
          } catch {
            continue;
          }
          lastWasDone = event.type === 'done';
          state.failures = 0;
          yield event;
          if (this.stopped()) return this.endStopped();
        }
      }
    } finally {
      clearTimeout(idle);
      this.closer.signal.removeEventListener('abort', stopReading);
      this.init.options.signal?.removeEventListener('abort', stopReading);
      stopReading();
    }
  }

  private stopped(): boolean {
    return this.closer.signal.aborted || this.init.options.signal?.aborted === true;
  }

  private endStopped(): 'finished' {
    if (this.init.options.signal?.aborted) throw new QuarryAbortError({ cause: this.init.options.signal.reason });
    return 'finished';
  }

  /**
   * Opens `GET /group/{id}/stream`, with `Last-Event-ID` once an event is known, from the first
   * connection on: a group answers it with what came after, or 204 when it is idle with nothing
   * new (`?after=` would wait for the group's next change instead). Only the first connection
   * carries the caller's `requestId`; a reconnect gets a fresh one.
   */
  private connect(): Promise<CallResult> {
    const headers: Record<string, string> = { ...this.init.options.headers };
    if (this.lastSeq !== undefined) headers['last-event-id'] = String(this.lastSeq);
    const requestId = this.reconnectCount === 0 ? this.init.options.requestId : undefined;
    return this.init.transport.send(
      { method: 'GET', path: groupPath(this.groupId, '/stream'), auth: 'key', accept: 'text/event-stream', resendable: true, streaming: true },
      { ...this.init.options, headers, signal: this.signal(), requestId },
    );
  }

  /** Fires on close() or on the caller's signal. */
  private signal(): AbortSignal {
    const user = this.init.options.signal;
    return user ? anySignal([user, this.closer.signal]) : this.closer.signal;
  }
}
