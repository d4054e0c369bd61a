/**
 * The wire shapes of Quarry's API (docs/api.md), as the client sees them. Fields the server may
 * add later are allowed: every object type is open to extra members at runtime.
 */

/**
 * `plan` (no turn runs), `execute` (a turn runs or waits), `deleted`; `accepted` on a 202.
 *
 * @example
 * ```ts
 * if (task.status === 'accepted') console.log('queued behind the running turn');
 * ```
 */
export type TaskStatus = 'plan' | 'execute' | 'deleted' | 'accepted';

/**
 * The phase of the running turn: planning the spec, or carrying it out.
 *
 * @example
 * ```ts
 * if (task.phase === 'execute') console.log('researching');
 * ```
 */
export type TaskPhase = 'plan' | 'execute';

/**
 * What the task is doing right now; `idle` when no turn runs.
 *
 * @example
 * ```ts
 * const busy = task.activity !== 'idle';
 * ```
 */
export type TaskActivity = 'idle' | 'planning' | 'executing' | 'thinking';

/**
 * What caused a turn: a prompt create (`plan`), a spec create, execute or cron tick (`execute`), a message (`continue`).
 *
 * @example
 * ```ts
 * const { turn } = await client.tasks.state(taskId); console.log(turn?.kind);
 * ```
 */
export type TurnKind = 'plan' | 'execute' | 'continue';

/**
 * A task as most task routes answer it.
 *
 * @example
 * ```ts
 * const task: Task = await client.tasks.create({ prompt: 'EU battery makers' });
 * console.log(task.task_id, task.status, task.activity);
 * ```
 */
export interface Task {
  task_id: string;
  name: string | null;
  type: string | null;
  status: TaskStatus;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  output_count: number;
  /** Seconds to wait before polling again: 2 while a turn runs, else 30 (or until the next cron run). */
  poll_after_s: number;
  status_url: string;
  output_url: string;
  stream_url: string;
  created_at: string;
  updated_at: string;
  pinned: boolean;
  cron: { expression: string; timezone: string; next_run_at: string | null } | null;
  queued_messages: number;
  credits_used: number;
  active_output: string | null;
}

/**
 * `GET /task/{task_id}`: the task with its normalized spec and its last 100 events.
 *
 * @example
 * ```ts
 * const detail = await client.tasks.retrieve(taskId);
 * console.log(detail.spec.outputs.map((o) => o.id), detail.events.length);
 * ```
 */
export interface TaskDetail extends Task {
  spec: TaskSpec;
  events: TaskEvent[];
}

/**
 * `GET /task/{task_id}/state`: the cheap poll.
 *
 * @example
 * ```ts
 * const { active, last_event_id } = await client.tasks.state(taskId);
 * ```
 */
export interface TaskState {
  task_id: string;
  /** True while a turn runs (or waits for a worker). */
  active: boolean;
  status: TaskStatus;
  phase: TaskPhase | null;
  activity: TaskActivity | null;
  queued_messages: number;
  turn: { id: string; kind: TurnKind; started_at: string | null } | null;
  /** Sequence number of the last stored event: a `Last-Event-ID` to resume from. */
  last_event_id: number;
  updated_at: string;
}

/**
 * The type of a table column's values.
 *
 * @example
 * ```ts
 * const column: ColumnSpec = { name: 'capacity_gwh', type: 'number' satisfies ColumnType };
 * ```
 */
export type ColumnType = 'string' | 'number' | 'integer' | 'boolean' | 'date' | 'url' | 'json';

/**
 * `table` (typed columns), `report` (`{heading, markdown}` sections) or `records` (free objects).
 *
 * @example
 * ```ts
 * const output: OutputSpec = { id: 'summary', kind: 'report' satisfies OutputKind };
 * ```
 */
export type OutputKind = 'table' | 'report' | 'records';

/**
 * A tool the agent may use (spec editing and row writing are always allowed).
 *
 * @example
 * ```ts
 * const task: TaskSpecInput = { prompt: 'Offline only.', tools: ['read_input', 'run_code'] satisfies ToolName[] };
 * ```
 */
export type ToolName = 'web_search' | 'fetch_url' | 'read_input' | 'run_code';

/**
 * A column of a `table` output.
 *
 * @example
 * ```ts
 * const column: ColumnSpec = { name: 'company', type: 'string', required: true, description: 'legal name' };
 * ```
 */
export interface ColumnSpec {
  name: string;
  type?: ColumnType;
  required?: boolean;
  description?: string;
}

/**
 * An output declared in a spec.
 *
 * @example
 * ```ts
 * const makers: OutputSpec = { id: 'makers', kind: 'table', columns: [{ name: 'company', required: true }] };
 * ```
 */
export interface OutputSpec {
  id: string;
  kind: OutputKind;
  path?: string;
  description?: string;
  columns?: ColumnSpec[];
  schema?: Record<string, unknown>;
}

/**
 * A task spec as sent in `POST /task/start` (every member optional; the server fills defaults).
 *
 * @example
 * ```ts
 * const spec: TaskSpecInput = {
 *   prompt: 'EU Li-ion cell plants with capacity.',
 *   outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', required: true }] }],
 * };
 * ```
 */
export interface TaskSpecInput {
  name?: string;
  type?: 'research';
  prompt?: string;
  outputs?: OutputSpec[];
  inputs?: { upload_id: string; name?: string }[];
  schedule?: { cron: string; timezone?: string } | null;
  limits?: { max_steps?: number; max_turn_seconds?: number; max_credits_per_turn?: number };
  tools?: ToolName[];
}

/**
 * The normalized spec the server stores and returns (every default filled in).
 *
 * @example
 * ```ts
 * const { spec } = await client.tasks.retrieve(taskId);
 * console.log(spec.limits.max_steps, spec.outputs.map((o) => o.path));
 * ```
 */
export interface TaskSpec {
  name: string | null;
  type: 'research';
  prompt: string | null;
  outputs: (OutputSpec & { path: string })[];
  inputs: { upload_id: string; name?: string }[];
  schedule: { cron: string; timezone: string } | null;
  limits: { max_steps: number; max_turn_seconds: number; max_credits_per_turn: number };
  tools: ToolName[];
}

/**
 * A row's source: exactly one of `url` and `upload_id`.
 *
 * @example
 * ```ts
 * for (const source of row._sources) console.log(source.url ?? source.upload_id, source.quote ?? '');
 * ```
 */
export interface RowSource {
  url?: string;
  upload_id?: string;
  title?: string;
  quote?: string;
  fields?: string[];
}

/**
 * A stored row: its values plus the reserved `_row` (1-based) and `_sources`.
 *
 * @example
 * ```ts
 * for await (const row of client.tasks.rows(taskId)) console.log(row._row, row.company, row._sources.length);
 * ```
 */
export interface Row {
  _row: number;
  _sources: RowSource[];
  [column: string]: unknown;
}

/**
 * `{id, kind, path}` of the output a page was read from.
 *
 * @example
 * ```ts
 * const { output } = await client.tasks.output(taskId); console.log(output?.path);
 * ```
 */
export interface OutputRef {
  id: string;
  kind: OutputKind;
  path: string;
}

/**
 * One page of rows (`GET /task/{task_id}/output` or `/outputs/{output_id}`).
 *
 * @example
 * ```ts
 * const page = await client.tasks.output(taskId, { output: 'makers', limit: 100 });
 * console.log(`${page.rows.length} of ${page.total}`);
 * ```
 */
export interface OutputPage {
  /** Rows in the output, counted before `offset` and `limit`. */
  total: number;
  rows: Row[];
  /** Null when the task has no outputs yet. */
  output: OutputRef | null;
}

/**
 * One entry of `GET /task/{task_id}/outputs`.
 *
 * @example
 * ```ts
 * for (const o of await client.tasks.outputs(taskId)) console.log(o.id, o.row_count);
 * ```
 */
export interface OutputInfo extends OutputRef {
  description: string | null;
  /** Tables only: the normalized columns. */
  columns?: { name: string; type: ColumnType; required: boolean; description?: string }[];
  row_count: number;
  updated_at: string | null;
}

// ---- events ----------------------------------------------------------------------------------

/**
 * Why a `task` event was stored (`snapshot`: the unstored idle snapshot).
 *
 * @example
 * ```ts
 * if (event.type === 'task' && event.reason === 'turn_ended') console.log('turn over');
 * ```
 */
export type TaskEventReason =
  | 'created'
  | 'turn_started'
  | 'phase_changed'
  | 'activity_changed'
  | 'message_queued'
  | 'turn_ended'
  | 'updated'
  | 'cron_tick_skipped'
  | 'deleted'
  /** Unstored: the idle snapshot of `GET /task/{task_id}/stream`. */
  | 'snapshot';

/**
 * Members every event has. Unstored frames (idle snapshot, refusals) have no `seq`.
 *
 * @example
 * ```ts
 * console.log(event.seq ?? '-', event.turn_id, event.at);
 * ```
 */
export interface EventBase {
  /** Per-task sequence number (1, 2, 3, …); absent on unstored frames. */
  seq?: number;
  task_id: string | null;
  turn_id: string | null;
  /** ISO 8601. */
  at: string;
}

/**
 * The task changed; `task` is the Task right after the change.
 *
 * @example
 * ```ts
 * if (event.type === 'task') console.log(event.reason, event.task.activity);
 * ```
 */
export interface TaskChangedEvent extends EventBase {
  type: 'task';
  reason: TaskEventReason;
  task: Task;
}

/**
 * A tool call started, finished or failed.
 *
 * @example
 * ```ts
 * if (event.type === 'tool' && event.state === 'failed') console.warn(event.name, event.summary);
 * ```
 */
export interface ToolEvent extends EventBase {
  type: 'tool';
  call_id: string;
  name: string;
  state: 'started' | 'finished' | 'failed';
  /** The arguments the model sent (strings longer than 2,000 characters cut). */
  input: Record<string, unknown>;
  summary: string | null;
  duration_ms: number | null;
}

/**
 * A chunk of the model's text.
 *
 * @example
 * ```ts
 * if (event.type === 'text') process.stdout.write(event.text);
 * ```
 */
export interface TextEvent extends EventBase {
  type: 'text';
  text: string;
}

/**
 * A turn failed (refusals inside a stream are thrown as errors instead).
 *
 * @example
 * ```ts
 * if (event.type === 'error') console.error(event.error, event.message, event.retryable);
 * ```
 */
export interface ErrorEvent extends EventBase {
  type: 'error';
  error: string;
  message: string;
  retryable: boolean;
}

/**
 * `completed`, `stopped`, `failed`; unstored `refused` and `idle`.
 *
 * @example
 * ```ts
 * const ok = (await stream.finalDone())?.outcome === 'completed';
 * ```
 */
export type DoneOutcome = 'completed' | 'stopped' | 'failed' | 'refused' | 'idle';

/**
 * A turn ended (or, unstored, an idle stream).
 *
 * @example
 * ```ts
 * if (event.type === 'done') console.log(event.outcome, event.credits_used);
 * ```
 */
export interface DoneEvent extends EventBase {
  type: 'done';
  outcome: DoneOutcome;
  output_count: number | null;
  credits_used: number;
}

/**
 * Every event a stream carries, narrowed by `type`.
 *
 * @example
 * ```ts
 * for await (const event of client.tasks.stream(taskId)) {
 *   if (event.type === 'tool') console.log(event.name, event.state);
 * }
 * ```
 */
export type TaskEvent = TaskChangedEvent | ToolEvent | TextEvent | ErrorEvent | DoneEvent;

// ---- uploads and admin -----------------------------------------------------------------------

/**
 * `POST /upload-url`: where and how to PUT the file.
 *
 * @example
 * ```ts
 * const ticket = await client.uploads.create({ filename: 'a.csv', content_type: 'text/csv', size_bytes: 9 });
 * await client.uploads.put(ticket, 'a,b\n1,2\n');
 * ```
 */
export interface UploadTicket {
  upload_id: string;
  upload_url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expires_at: string;
  max_bytes: number;
}

/**
 * The answer of the upload PUT.
 *
 * @example
 * ```ts
 * const { upload_id, sha256 } = await client.uploads.upload({ data: 'hello', filename: 'hello.txt' });
 * ```
 */
export interface UploadResult {
  upload_id: string;
  size_bytes: number;
  /** Hex SHA-256 of the stored file. */
  sha256: string;
}

/**
 * A new account and its first key (shown once).
 *
 * @example
 * ```ts
 * const { account_id, api_key } = await client.admin.accounts.create({ name: 'team', credits: 100 });
 * ```
 */
export interface CreatedAccount {
  account_id: string;
  name: string;
  balance: number;
  /** Shown once. */
  api_key: string;
  key_id: string;
}

/**
 * An account and its balance.
 *
 * @example
 * ```ts
 * const { balance, credits_used } = await client.admin.accounts.retrieve(accountId);
 * ```
 */
export interface Account {
  account_id: string;
  name: string;
  balance: number;
  credits_used: number;
  created_at: string;
}

/**
 * An account's balance after a change.
 *
 * @example
 * ```ts
 * const { balance } = await client.admin.accounts.addCredits(accountId, 50);
 * ```
 */
export interface Balance {
  account_id: string;
  balance: number;
}

/**
 * A new API key (shown once).
 *
 * @example
 * ```ts
 * const { key_id, api_key } = await client.admin.keys.create(accountId);
 * ```
 */
export interface CreatedKey {
  key_id: string;
  /** Shown once. */
  api_key: string;
}

/**
 * A key of an account, never its secret.
 *
 * @example
 * ```ts
 * const revoked = (await client.admin.keys.list(accountId)).filter((k) => k.revoked_at !== null);
 * ```
 */
export interface KeyInfo {
  key_id: string;
  created_at: string;
  revoked_at: string | null;
}

/**
 * What one turn used.
 *
 * @example
 * ```ts
 * const total = (await client.admin.accounts.usage(accountId)).reduce((n, t) => n + t.credits, 0);
 * ```
 */
export interface TurnUsage {
  task_id: string;
  turn_id: string;
  kind: TurnKind;
  status: string;
  credits: number;
  tokens_in: number;
  tokens_out: number;
  tool_calls: number;
}
