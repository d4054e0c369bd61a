/**
 * `client.groups`: task groups (one spec run over many inputs, each input a run), their merged
 * rows paged, iterated and exported, their resumable event stream, and a helper that uploads a
 * local CSV or JSON Lines file and makes a group of its records.
 */
import { ResumableStream, type ConnectionRules, type StreamSettings } from '../internal/resumable-stream.js';
import type { Transport } from '../internal/transport.js';
import { OutputExport, type ExportFormat } from '../output-export.js';
import { cursorPages, PagePromise, RowPage, type CursorPage } from '../pagination.js';
import type { RequestOptions } from '../request-options.js';
import type { Group, GroupDetail, GroupDoneEvent, GroupEvent, GroupRow, GroupRowsPage, GroupRun, QueryOf, RequestBody } from '../types.js';
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

/** `status`, `limit`, `cursor` of `GET /group/{id}/runs`. */
export type GroupRunsParams = QueryOf<'listGroupRuns'>;

/** Which runs a retry runs again (`failed` by default; `stopped` too), and a new `max_credits`. */
export type RetryGroupParams = RequestBody<'retryGroup'>;

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
      const { response, text } = await this.transport.send({ method: 'GET', path: '/group', query: { limit: params.limit, cursor, q: params.q, status: params.status }, auth: 'key', resendable: true }, opts);
      return { data: JSON.parse(text) as Group[], nextCursor: response.headers.get('x-next-cursor') };
    }, params.cursor);
  }

  /**
   * Every run of the group in input order, rows or not (`GET /group/{id}/runs`): its input,
   * status, error and credits; `status` keeps one kind. `await` it for one page; `for await`
   * over it for every run.
   *
   * @example
   * ```ts
   * for await (const run of client.groups.runs(groupId, { status: 'failed' })) console.log(run.input_index, run.error?.message);
   * ```
   */
  runs(groupId: string, params: GroupRunsParams = {}, opts?: RequestOptions): PagePromise<CursorPage<GroupRun>, GroupRun> {
    return cursorPages(async (cursor) => {
      const { response, text } = await this.transport.send({ method: 'GET', path: groupPath(groupId, '/runs'), query: { status: params.status, limit: params.limit, cursor }, auth: 'key', resendable: true }, opts);
      return { data: (JSON.parse(text) as { runs: GroupRun[] }).runs, nextCursor: response.headers.get('x-next-cursor') };
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
   * await client.groups.retry(groupId, { include: ['failed', 'stopped'] });
   * if (group.status === 'running') await client.groups.stream(groupId).finalDone();
   * ```
   */
  retry(groupId: string, params: RetryGroupParams = {}, opts?: RequestOptions): Promise<GroupDetail> {
    return this.transport.json<GroupDetail>({ method: 'POST', path: groupPath(groupId, '/retry'), json: params, auth: 'key', resendable: false }, opts);
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
export interface GroupStreamInit extends StreamSettings {
  groupId: string;
  lastEventId?: number;
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
  private readonly core: ResumableStream<GroupEvent>;

  /** @internal Built by the `groups` resource. */
  constructor(private readonly init: GroupStreamInit) {
    this.core = new ResumableStream<GroupEvent>(init, {
      name: 'GroupStream',
      kinds: GROUP_EVENT_TYPES,
      after: init.lastEventId,
      path: () => groupPath(init.groupId, '/stream'),
      // A group answers Last-Event-ID with what came after, or 204 when it is idle with nothing
      // new; `?after=` would wait for the group's next change instead.
      firstResumesBy: 'last-event-id',
      resumable: () => init.groupId,
      connection: groupConnection,
    });
  }

  get groupId(): string {
    return this.init.groupId;
  }

  /** Sequence number of the last event handed out: resume from it with `stream(id, { lastEventId })`. */
  get lastEventId(): number | undefined {
    return this.core.lastEventId;
  }

  /** How many times the stream has reconnected so far. */
  get reconnects(): number {
    return this.core.reconnects;
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
    this.core.close();
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
  finalDone(): Promise<GroupDoneEvent | undefined> {
    return this.core.finalDone();
  }

  [Symbol.asyncIterator](): AsyncIterator<GroupEvent> {
    return this.core[Symbol.asyncIterator]();
  }
}

/**
 * The server ends a group's stream at its latest `done`: a connection is over when the server
 * ended it right after a `done` (or answered 204 to a resume with nothing new); any other end is
 * a drop, resumed. Unstored frames (a replay failure's error, before the server ends the
 * connection) are skipped: the reconnect gets what they are about.
 */
function groupConnection(): ConnectionRules<GroupEvent> {
  let lastWasDone = false;
  return {
    afterStored: (event) => {
      lastWasDone = event.type === 'done';
      return false;
    },
    ended: () => lastWasDone,
  };
}
