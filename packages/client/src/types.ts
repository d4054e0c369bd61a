/**
 * The wire shapes of Quarry's API (docs/api.md), as the client sees them. Each is generated from
 * the server's OpenAPI document (generated/openapi.ts, see scripts/generate-client-types.ts);
 * here they get their names and examples. Fields the server may add later are allowed at runtime.
 */
import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];
/** @internal The JSON body an operation takes. */
export type RequestBody<Op extends keyof operations> = NonNullable<operations[Op]['requestBody']> extends { content: { 'application/json': infer B } } ? B : never;
/** @internal The query parameters an operation takes. */
export type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

/**
 * `plan` (no turn runs), `execute` (a turn runs or waits), `deleted`; `accepted` on a 202.
 *
 * @example
 * ```ts
 * if (task.status === 'accepted') console.log('queued behind the running turn');
 * ```
 */
export type TaskStatus = Schemas['Task']['status'];

/**
 * The phase of the running turn: planning the spec, or carrying it out.
 *
 * @example
 * ```ts
 * if (task.phase === 'execute') console.log('researching');
 * ```
 */
export type TaskPhase = NonNullable<Schemas['Task']['phase']>;

/**
 * What the task is doing right now; `idle` when no turn runs.
 *
 * @example
 * ```ts
 * const busy = task.activity !== 'idle';
 * ```
 */
export type TaskActivity = NonNullable<Schemas['Task']['activity']>;

/**
 * What caused a turn: a prompt create (`plan`), a spec create, execute or cron tick (`execute`), a message (`continue`).
 *
 * @example
 * ```ts
 * const { turn } = await client.tasks.state(taskId); console.log(turn?.kind);
 * ```
 */
export type TurnKind = NonNullable<Schemas['TaskState']['turn']>['kind'];

/**
 * A task as most task routes answer it.
 *
 * @example
 * ```ts
 * const task: Task = await client.tasks.create({ prompt: 'EU battery makers' });
 * console.log(task.task_id, task.status, task.activity);
 * ```
 */
export type Task = Schemas['Task'];

/**
 * `GET /task/{task_id}`: the task with its normalized spec and its last 100 events.
 *
 * @example
 * ```ts
 * const detail = await client.tasks.retrieve(taskId);
 * console.log(detail.spec.outputs.map((o) => o.id), detail.events.length);
 * ```
 */
export type TaskDetail = Schemas['TaskDetail'];

/**
 * `GET /task/{task_id}/state`: the cheap poll. `last_error` says why the last turn failed, once
 * no turn runs.
 *
 * @example
 * ```ts
 * const { active, last_event_id, last_error } = await client.tasks.state(taskId);
 * if (!active && last_error) console.error(last_error.error, last_error.message);
 * ```
 */
export type TaskState = Schemas['TaskState'];

/**
 * The error a turn failed with (`last_error` of {@link TaskState}): the members of its `error` event.
 *
 * @example
 * ```ts
 * const { last_error } = await client.tasks.state(taskId);
 * if (last_error?.retryable) await client.tasks.execute(taskId);
 * ```
 */
export type TurnFailure = Schemas['TurnFailure'];

/**
 * The type of a table column's values.
 *
 * @example
 * ```ts
 * const column: ColumnSpec = { name: 'capacity_gwh', type: 'number' satisfies ColumnType };
 * ```
 */
export type ColumnType = NonNullable<ColumnSpec['type']>;

/**
 * `table` (typed columns), `report` (`{heading, markdown}` sections) or `records` (free objects).
 *
 * @example
 * ```ts
 * const output: OutputSpec = { id: 'summary', kind: 'report' satisfies OutputKind };
 * ```
 */
export type OutputKind = OutputSpec['kind'];

/**
 * A tool the agent may use (spec editing and row writing are always allowed).
 *
 * @example
 * ```ts
 * const task: TaskSpecInput = { prompt: 'Offline only.', tools: ['read_input', 'run_code'] satisfies ToolName[] };
 * ```
 */
export type ToolName = NonNullable<TaskSpecInput['tools']>[number];

/**
 * A column of a `table` output.
 *
 * @example
 * ```ts
 * const column: ColumnSpec = { name: 'company', type: 'string', required: true, description: 'legal name' };
 * ```
 */
export type ColumnSpec = NonNullable<OutputSpec['columns']>[number];

/**
 * An output declared in a spec.
 *
 * @example
 * ```ts
 * const makers: OutputSpec = { id: 'makers', kind: 'table', columns: [{ name: 'company', required: true }] };
 * ```
 */
export type OutputSpec = NonNullable<TaskSpecInput['outputs']>[number];

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
export type TaskSpecInput = Schemas['TaskSpecInput'];

/**
 * The normalized spec the server stores and returns (every default filled in).
 *
 * @example
 * ```ts
 * const { spec } = await client.tasks.retrieve(taskId);
 * console.log(spec.limits.max_steps, spec.outputs.map((o) => o.path));
 * ```
 */
export type TaskSpec = Schemas['TaskSpec'];

/**
 * A row's source: exactly one of `url` and `upload_id`.
 *
 * @example
 * ```ts
 * for (const source of row._sources) console.log(source.url ?? source.upload_id, source.quote ?? '');
 * ```
 */
export type RowSource = Schemas['RowSource'];

/**
 * A stored row: its values plus the reserved `_row` (1-based) and `_sources`.
 *
 * @example
 * ```ts
 * for await (const row of client.tasks.rows(taskId)) console.log(row._row, row.company, row._sources.length);
 * ```
 */
export type Row = Schemas['Row'];

/**
 * `{id, kind, path}` of the output a page was read from.
 *
 * @example
 * ```ts
 * const { output } = await client.tasks.output(taskId); console.log(output?.path);
 * ```
 */
export type OutputRef = Schemas['OutputRef'];

/**
 * One page of rows (`GET /task/{task_id}/output` or `/outputs/{output_id}`).
 *
 * @example
 * ```ts
 * const page = await client.tasks.output(taskId, { output: 'makers', limit: 100 });
 * console.log(`${page.rows.length} of ${page.total}`);
 * ```
 */
export type OutputPage = Schemas['OutputPage'];

/**
 * One entry of `GET /task/{task_id}/outputs`.
 *
 * @example
 * ```ts
 * for (const o of await client.tasks.outputs(taskId)) console.log(o.id, o.row_count);
 * ```
 */
export type OutputInfo = Schemas['OutputInfo'];

/**
 * What `POST /task/{task_id}/recheck` did: rows checked again against the stored snapshots, and
 * how many of them changed.
 *
 * @example
 * ```ts
 * const { rows, changed } = await client.tasks.recheck(taskId);
 * ```
 */
export type RecheckResult = Schemas['RecheckResult'];

// ---- events ----------------------------------------------------------------------------------

/**
 * Why a `task` event was stored (`snapshot`: the unstored idle snapshot).
 *
 * @example
 * ```ts
 * if (event.type === 'task' && event.reason === 'turn_ended') console.log('turn over');
 * ```
 */
export type TaskEventReason = TaskChangedEvent['reason'];

/**
 * Members every event has. Unstored frames (idle snapshot, refusals) have no `seq`.
 *
 * @example
 * ```ts
 * console.log(event.seq ?? '-', event.turn_id, event.at);
 * ```
 */
export type EventBase = Pick<TaskEvent, 'seq' | 'task_id' | 'turn_id' | 'at'>;

/**
 * The task changed; `task` is the Task right after the change.
 *
 * @example
 * ```ts
 * if (event.type === 'task') console.log(event.reason, event.task.activity);
 * ```
 */
export type TaskChangedEvent = Schemas['TaskChangedEvent'];

/**
 * A tool call started, finished or failed.
 *
 * @example
 * ```ts
 * if (event.type === 'tool' && event.state === 'failed') console.warn(event.name, event.summary);
 * ```
 */
export type ToolEvent = Schemas['ToolEvent'];

/**
 * A chunk of the model's text. With `restart: true`, the reply it belonged to was cut off and is
 * asked for again: drop the reply's text so far, then add the event's own `text` as usual (most
 * often empty: the text of an earlier answer that the drop took with it). `ModelText` does.
 *
 * @example
 * ```ts
 * if (event.type === 'text') process.stdout.write(event.restart ? `\n[cut off: trying again]\n${event.text}` : event.text);
 * ```
 */
export type TextEvent = Schemas['TextEvent'];

/**
 * A turn failed (refusals inside a stream are thrown as errors instead).
 *
 * @example
 * ```ts
 * if (event.type === 'error') console.error(event.error, event.message, event.retryable);
 * ```
 */
export type ErrorEvent = Schemas['ErrorEvent'];

/**
 * `completed`, `stopped`, `failed`; unstored `refused` and `idle`.
 *
 * @example
 * ```ts
 * const ok = (await stream.finalDone())?.outcome === 'completed';
 * ```
 */
export type DoneOutcome = DoneEvent['outcome'];

/**
 * A turn ended (or, unstored, an idle stream).
 *
 * @example
 * ```ts
 * if (event.type === 'done') console.log(event.outcome, event.credits_used);
 * ```
 */
export type DoneEvent = Schemas['DoneEvent'];

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
export type TaskEvent = Schemas['TaskEvent'];

// ---- task groups -----------------------------------------------------------------------------

/**
 * A task group: one spec run over many inputs, each input a run (an ordinary task), merged into
 * one table. `counts` are the inputs by the status of their run; duplicates (a `_key` the group
 * already had) are counted in `duplicates` and never run.
 *
 * @example
 * ```ts
 * const group: Group = await client.groups.get(groupId);
 * console.log(group.status, group.counts.completed, '/', group.inputs - group.duplicates);
 * ```
 */
export type Group = Schemas['Group'];

/**
 * A group with the normalized spec its runs share: what `create`, `get`, `addInputs`, `stop` and
 * `retry` answer.
 *
 * @example
 * ```ts
 * const { spec } = await client.groups.get(groupId);
 * console.log(spec.input_columns?.map((c) => c.name));
 * ```
 */
export type GroupDetail = Schemas['GroupDetail'];

/**
 * `running` while a run is pending or running, `finished` when none is, `stopped` after `stop`.
 *
 * @example
 * ```ts
 * const over = (await client.groups.get(groupId)).status !== 'running';
 * ```
 */
export type GroupStatus = Group['status'];

/**
 * A group's inputs by the status of their run.
 *
 * @example
 * ```ts
 * const { pending, running, completed, failed, stopped }: GroupCounts = (await client.groups.get(groupId)).counts;
 * ```
 */
export type GroupCounts = Group['counts'];

/**
 * One merged row: an output row of one run with `_input` (the input's 0-based index in the
 * group), the input's fields, the output's columns, `_sources`, `_basis` and `_run`.
 *
 * @example
 * ```ts
 * for await (const row of client.groups.iterateRows(groupId)) console.log(row._input, row._run.status, row.hq);
 * ```
 */
export type GroupRow = Schemas['GroupRowsPage']['rows'][number];

/**
 * One page of a group's merged rows, and how many there are so far.
 *
 * @example
 * ```ts
 * const { total, rows }: GroupRowsPage = await client.groups.rows(groupId, { limit: 100, offset: 0 });
 * ```
 */
export type GroupRowsPage = Schemas['GroupRowsPage'];

/**
 * How a group's input stands: `pending` (waits for a free slot), `running` (its task's turn is
 * pending or running), then how that turn ended.
 *
 * @example
 * ```ts
 * const failedInputs = rows.filter((r) => r._run.status === ('failed' satisfies GroupRunStatus));
 * ```
 */
export type GroupRunStatus = GroupRow['_run']['status'];

/*
 * The group stream's events are written out here rather than generated: the stream route's
 * answer is text (`data:` frames), so its event schema never enters the OpenAPI document.
 * test/http/groups-client.test.ts checks, at compile time, that they match the server's contract.
 */

/**
 * Members every group event has: `seq` (the `id:` of its frame; resume after it), the group, and when.
 *
 * @example
 * ```ts
 * console.log(event.seq, event.group_id, event.at);
 * ```
 */
export interface GroupEventBase {
  seq: number;
  group_id: string;
  at: string;
}

/**
 * A run started (`status` running) or ended (completed, failed, stopped).
 *
 * @example
 * ```ts
 * if (event.type === 'run' && event.status === 'failed') console.warn(`input ${event.input} failed: quarry task show ${event.task_id}`);
 * ```
 */
export interface GroupRunEvent extends GroupEventBase {
  type: 'run';
  task_id: string;
  /** The input's 0-based index in the group. */
  input: number;
  status: GroupRunStatus;
}

/**
 * Why a `group` snapshot was stored: a change to many runs at once.
 *
 * @example
 * ```ts
 * if (event.type === 'group' && event.reason === 'budget_reached') console.log('max_credits reached: the rest is stopped');
 * ```
 */
export type GroupSnapshotReason = 'created' | 'inputs_added' | 'stopped' | 'retried' | 'budget_reached' | 'out_of_credits' | 'scheduled_tick';

/**
 * The group right after a change to many runs at once (created, inputs added, stopped, retried,
 * its max_credits reached, the account out of credits).
 *
 * @example
 * ```ts
 * if (event.type === 'group') console.log(event.reason, event.group.counts);
 * ```
 */
export interface GroupSnapshotEvent extends GroupEventBase {
  type: 'group';
  reason: GroupSnapshotReason;
  group: Group;
}

/**
 * No run is pending or running any more; `group` is the group at that moment. A group stream
 * ends with its latest `done`.
 *
 * @example
 * ```ts
 * const done = await client.groups.stream(groupId).finalDone();
 * console.log(done?.group.counts.failed);
 * ```
 */
export interface GroupDoneEvent extends GroupEventBase {
  type: 'done';
  group: Group;
}

/**
 * Every event of a group's stream, narrowed by `type`.
 *
 * @example
 * ```ts
 * for await (const event of client.groups.stream(groupId)) {
 *   if (event.type === 'run') console.log(event.input, event.status);
 * }
 * ```
 */
export type GroupEvent = GroupRunEvent | GroupSnapshotEvent | GroupDoneEvent;

// ---- webhooks --------------------------------------------------------------------------------

/**
 * An event a webhook endpoint may ask for: a turn completed, failed or was stopped; a group finished.
 *
 * @example
 * ```ts
 * const events: WebhookEventType[] = ['task.turn_completed', 'task.turn_failed'];
 * ```
 */
export type WebhookEventType = Webhook['events'][number];

/**
 * A webhook endpoint as `list`, `retrieve` and `delete` answer it: never its secret.
 * `previous_secret_expires_at` is set for 24 h after a rotation, while the old secret signs too.
 *
 * @example
 * ```ts
 * for (const hook of await client.webhooks.list()) console.log(hook.webhook_id, hook.url, hook.events.join(','));
 * ```
 */
export type Webhook = Schemas['Webhook'];

/**
 * A webhook endpoint with its signing secret (`whsec_…`): the answer of `create` and
 * `rotateSecret`, the only times the secret is shown. Store it.
 *
 * @example
 * ```ts
 * const { webhook_id, secret } = await client.webhooks.create({ url: 'https://example.com/hooks/quarry', events: ['task.turn_completed'] });
 * ```
 */
export type WebhookWithSecret = Schemas['WebhookWithSecret'];

/**
 * `pending` (due at `next_attempt_at`), `delivered` (a 2xx came back) or `dead` (retries gave up).
 *
 * @example
 * ```ts
 * if (delivery.status === 'dead') await client.webhooks.redeliver(webhookId, delivery.delivery_id);
 * ```
 */
export type WebhookDeliveryStatus = WebhookDelivery['status'];

/**
 * One delivery of an event to an endpoint, with the outcome of its last attempt. `delivery_id`
 * is the `webhook-id` header the receiver gets, the same on every attempt and redelivery.
 *
 * @example
 * ```ts
 * for await (const d of client.webhooks.deliveries(webhookId)) console.log(d.delivery_id, d.status, d.attempts, d.last_error ?? '');
 * ```
 */
export type WebhookDelivery = Schemas['WebhookDelivery'];
/** A delivery with its `payload` and `attempts`: the log of its attempts, oldest first. */
export type WebhookDeliveryDetail = Schemas['WebhookDeliveryDetail'];
export type WebhookDeliveryAttempt = Schemas['WebhookDeliveryAttempt'];
/** One input of a group and the run that works on it (`GET /group/{id}/runs`). */
export type GroupRun = Schemas['GroupRun'];
/** The account of the API key (`GET /account`). */
export type OwnAccount = Schemas['OwnAccount'];
/** The last ended turn of a task (`Task.last_turn`). */
export type LastTurn = Schemas['LastTurn'];

// ---- changes of keyed outputs ------------------------------------------------------------------

/**
 * One change of a keyed table output's row: `added`, `changed` (the fields whose value changed,
 * before and after, and the row's sources before and after) or `unconfirmed` (an execute turn did
 * not write the key again; the row stays).
 *
 * @example
 * ```ts
 * for await (const c of client.tasks.changes(taskId)) console.log(c.change, c.key, Object.keys(c.fields));
 * ```
 */
export type RowChange = Schemas['RowChange'];

/**
 * A change of a group's run, with the run's input (`_input` is its index in the group).
 *
 * @example
 * ```ts
 * for await (const c of client.groups.changes(groupId)) console.log(c._input, c.input, c.change, c.key);
 * ```
 */
export type GroupRowChange = Schemas['GroupRowChange'];

/**
 * What a turn changed in keyed outputs: the `done` event's `changes`.
 *
 * @example
 * ```ts
 * const counts: ChangeCounts | undefined = doneEvent.changes;
 * ```
 */
export type ChangeCounts = Schemas['ChangeCounts'];

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
export type UploadTicket = Schemas['UploadTicket'];

/**
 * The answer of the upload PUT.
 *
 * @example
 * ```ts
 * const { upload_id, sha256 } = await client.uploads.upload({ data: 'hello', filename: 'hello.txt' });
 * ```
 */
export type UploadResult = Schemas['UploadResult'];

/**
 * A new account and its first key (shown once).
 *
 * @example
 * ```ts
 * const { account_id, api_key } = await client.admin.accounts.create({ name: 'team', credits: 100 });
 * ```
 */
export type CreatedAccount = Schemas['CreatedAccount'];

/**
 * An account and its balance.
 *
 * @example
 * ```ts
 * const { balance, credits_used } = await client.admin.accounts.retrieve(accountId);
 * ```
 */
export type Account = Schemas['Account'];

/**
 * An account's balance after a change.
 *
 * @example
 * ```ts
 * const { balance } = await client.admin.accounts.addCredits(accountId, 50);
 * ```
 */
export type Balance = Schemas['Balance'];

/**
 * A new API key (shown once).
 *
 * @example
 * ```ts
 * const { key_id, api_key } = await client.admin.keys.create(accountId);
 * ```
 */
export type CreatedKey = Schemas['CreatedKey'];

/**
 * A key of an account, never its secret.
 *
 * @example
 * ```ts
 * const revoked = (await client.admin.keys.list(accountId)).filter((k) => k.revoked_at !== null);
 * ```
 */
export type KeyInfo = Schemas['KeyInfo'];

/**
 * What one turn used.
 *
 * @example
 * ```ts
 * const total = (await client.admin.accounts.usage(accountId)).reduce((n, t) => n + t.credits, 0);
 * ```
 */
export type TurnUsage = Schemas['TurnUsage'];
