/**
 * Every route of the API in one table: method, path, operation id, request schemas, and every
 * answer it can give (status, media type, headers). The HTTP layer registers exactly these
 * routes with exactly these schemas, /openapi.json is generated from them, and the client's
 * types are generated from that document, so a field or status added here reaches all three.
 */
import { Type, type TSchema } from 'typebox';
import { ERROR_CATALOGUE } from '../errors.js';
import { Account, AccountBody, AccountParams, Balance, OwnAccount, CreatedAccount, CreatedKey, CreditsBody, KeyInfo, KeyList, KeyParams, Usage } from './admin.js';
import { ErrorBody } from './errors.js';
import { Metaprompt, Workflow } from './meta.js';
import { EventPage, TaskDetail } from './events.js';
import { OutputList, OutputPage, OutputQuery } from './outputs.js';
import { ChangeList, ChangesQuery, GroupChangeList } from './changes.js';
import { RecheckResult, SourceDetail, SourceList, SourceParams, SourcesQuery } from './sources.js';
import {
  ContinueBody, EventsQuery, ExecuteBody, ListQuery, OutputParams, PatchBody, PromptBody, StartBody, StopBody, StreamQuery, TaskIdParams, WaitQuery,
} from './requests.js';
import { Task, TaskState } from './task.js';
import { UploadParams, UploadPutQuery, UploadResult, UploadTicket, UploadUrlBody } from './uploads.js';
import { Group, GroupBody, GroupDetail, GroupInputsBody, GroupListQuery, GroupParams, GroupRowsPage, GroupRowsQuery, GroupRunList, GroupRunsQuery, GroupStreamQuery, RetryBody } from './groups.js';
import { Delivery, DeliveryList, DeliveryParams, DeliveriesQuery, Webhook, WebhookBody, WebhookList, WebhookParams, WebhookWithSecret } from './webhooks.js';

// ---- answers ---------------------------------------------------------------------------------

const header = (description: string, schema: TSchema = Type.String()) => ({ ...schema, description });

/** Headers on every answer. */
const COMMON_HEADERS = { 'X-Request-ID': header('The request id: the client\'s valid X-Request-ID echoed, else a new req_ id.') };

function answer(description: string, media: Record<string, TSchema>, headers: Record<string, TSchema> = {}) {
  return {
    description,
    headers: { ...COMMON_HEADERS, ...headers },
    content: Object.fromEntries(Object.entries(media).map(([type, schema]) => [type, { schema }])),
  };
}

const json = (description: string, schema: TSchema, headers: Record<string, TSchema> = {}) => answer(description, { 'application/json': schema }, headers);

const EVENT_STREAM = answer('Server-sent events: task, tool, text, error and done (each `data:` is a TaskEvent as JSON). Refusals from the task\'s state arrive in the stream as error then done.', {
  'text/event-stream': Type.String({ description: 'id: <seq>, event: <type>, data: <TaskEvent JSON> frames, and `: ping` comments.' }),
});

const RETRY_AFTER = { 'Retry-After': header('Seconds to wait before resending.', Type.Integer({ minimum: 0 })) };

/** The error answers of one status, described with the catalogue codes it can carry. */
function errorAnswer(status: number) {
  const entries = Object.values(ERROR_CATALOGUE).filter((e) => e.status === status);
  const codes = [...new Set(entries.map((e) => `\`${e.error}\``))].join(', ');
  const headers: Record<string, TSchema> = {
    ...(status === 401 ? { 'WWW-Authenticate': header('Bearer realm="quarry"') } : {}),
    ...(status === 405 ? { Allow: header('The methods the path takes.') } : {}),
    ...(status === 429 || status === 503 ? RETRY_AFTER : {}),
  };
  return json(`${codes}: ${entries.map((e) => e.message).join(' / ')}`, ErrorBody, headers);
}

type Status = 400 | 401 | 402 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 502 | 503;
function errors(...statuses: Status[]) {
  return Object.fromEntries([...new Set(statuses)].sort().map((s) => [s, errorAnswer(s)])) as Record<Status, ReturnType<typeof errorAnswer>>;
}

/** Every keyed route: bad key (401), rate limit (429), store or key check down (503), a bug (500). */
const KEYED = [401, 429, 500, 503] as const;
/**
 * A route with a task in its path: unknown task (404), bad id (422). A path such as
 * /task/workflow also matches /task/{task_id}, and answers the methods it lacks with 405.
 */
const ON_TASK = [404, 405, 422] as const;
/** A route with a JSON body: bad JSON (400), too large (413), not JSON (415), invalid (422). */
const WITH_BODY = [400, 413, 415, 422] as const;
/** A route that may start a turn: no credits (402), the task's state (409), upstream (502). */
const STARTS_TURN = [402, 409, 502] as const;

// ---- request headers -------------------------------------------------------------------------

const RequestId = { 'X-Request-ID': Type.Optional(Type.String({ description: '1-64 chars of A-Z a-z 0-9 _ . : - to trace the request; echoed.' })) };
const Idempotent = Type.Object({
  ...RequestId,
  'Idempotency-Key': Type.Optional(Type.String({ description: 'The same key (1-128 chars) within 24 h replays the first answer and changes nothing.' })),
});
const Resumable = Type.Object({
  ...RequestId,
  'Last-Event-ID': Type.Optional(Type.String({ description: 'Replay stored events after this sequence number, then go live.' })),
});
const Plain = Type.Object(RequestId);

const REPLAYED = { 'Idempotent-Replayed': header('true when this answer replays an earlier request with the same Idempotency-Key.', Type.Literal('true')) };

/** Marks an operation whose body is the raw file, of any type (http/openapi.ts declares it). */
export const RAW_BODY = 'x-raw-body';
/** Marks an operation whose JSON body may be left out (http/openapi.ts says so). */
export const OPTIONAL_BODY = 'x-optional-body';

// ---- the table -------------------------------------------------------------------------------

const tags = { health: ['health'], meta: ['meta'], tasks: ['tasks'], outputs: ['outputs'], uploads: ['uploads'], groups: ['groups'], webhooks: ['webhooks'], account: ['account'], admin: ['admin'] };
const noKey = { security: [] as Record<string, string[]>[] };
const taskAnswers = (description: string) => ({
  200: json(description, Task, REPLAYED),
  202: json('The message was queued behind the running turn (status `accepted`).', Task, REPLAYED),
});
const changeErrors = errors(...KEYED, ...ON_TASK, ...WITH_BODY, ...STARTS_TURN);
/** A route with a group in its path: unknown (404), an id too long (422). */
const ON_GROUP = [404, 422] as const;
const GROUP_STREAM = answer('Server-sent events of the group: run, group and done (each `data:` is a GroupEvent as JSON).', {
  'text/event-stream': Type.String({ description: 'id: <seq>, event: <type>, data: <GroupEvent JSON> frames, and `: ping` comments.' }),
});
/** A route with a webhook (and a delivery) in its path: unknown (404), an id too long (422). */
const ON_WEBHOOK = [404, 422] as const;
const NEXT_PAGE = {
  'X-Next-Cursor': header('Pass as `cursor` for the next page.'),
  Link: header('`<url>; rel="next"`: the next page.'),
};

export const ROUTES = {
  health: {
    method: 'GET', url: '/healthz', auth: 'none',
    schema: { operationId: 'health', summary: 'Liveness: 200 once the server accepts requests', tags: tags.health, ...noKey, headers: Plain,
      response: { 200: json('Up.', Type.Object({ ok: Type.Literal(true) })) } },
  },
  ready: {
    method: 'GET', url: '/readyz', auth: 'none',
    schema: { operationId: 'ready', summary: 'Readiness: 200 once the store and the workers are ready', tags: tags.health, ...noKey, headers: Plain,
      response: {
        200: json('Ready.', Type.Object({ ok: Type.Boolean() })),
        503: json('Not ready: `{"ok": false}` while starting or shutting down; the error body (`service_unavailable`) while the store does not answer.',
          Type.Union([Type.Object({ ok: Type.Boolean() }), ErrorBody]), RETRY_AFTER),
      } },
  },
  workflow: {
    method: 'GET', url: '/task/workflow', auth: 'key',
    schema: { operationId: 'getWorkflow', summary: 'Route map and state machine', tags: tags.meta, headers: Plain,
      response: { 200: json('The task workflow and route map.', Workflow), ...errors(...KEYED) } },
  },
  metaprompt: {
    method: 'GET', url: '/task/metaprompt', auth: 'key',
    schema: { operationId: 'getMetaprompt', summary: 'Spec schema, output kinds and a metaprompt for caller-side agents', tags: tags.meta, headers: Plain,
      response: { 200: json('The spec\'s JSON Schema, the output kinds and a guide for writing a spec.', Metaprompt), ...errors(...KEYED) } },
  },
  createTask: {
    method: 'POST', url: '/task', auth: 'key',
    schema: { operationId: 'createTask', summary: 'Start a task from a prompt, or message an existing task', tags: tags.tasks, headers: Idempotent, body: PromptBody,
      response: { ...taskAnswers('The new task (a turn is running), or the task the message started a turn on.'), ...changeErrors } },
  },
  createTaskStream: {
    method: 'POST', url: '/task/stream', auth: 'key',
    schema: { operationId: 'createTaskStream', summary: 'As POST /task, answered with the event stream', tags: tags.tasks, headers: Plain, body: PromptBody,
      response: { 200: EVENT_STREAM, ...errors(...KEYED, ...WITH_BODY) } },
  },
  startTask: {
    method: 'POST', url: '/task/start', auth: 'key',
    schema: { operationId: 'startTask', summary: 'Start a task from a spec (without task: as POST /task)', tags: tags.tasks, headers: Idempotent, body: StartBody,
      response: { ...taskAnswers('The new task (a turn is running).'), ...changeErrors } },
  },
  startTaskStream: {
    method: 'POST', url: '/task/start/stream', auth: 'key',
    schema: { operationId: 'startTaskStream', summary: 'As POST /task/start, answered with the event stream', tags: tags.tasks, headers: Plain, body: StartBody,
      response: { 200: EVENT_STREAM, ...errors(...KEYED, ...WITH_BODY) } },
  },
  listTasks: {
    method: 'GET', url: '/task', auth: 'key',
    schema: { operationId: 'listTasks', summary: 'List tasks: pinned first, then most recently updated', tags: tags.tasks, headers: Plain, querystring: ListQuery,
      response: {
        200: json('One page of tasks. Without X-Next-Cursor and Link this is the last page.', Type.Array(Task), NEXT_PAGE),
        ...errors(...KEYED, 422),
      } },
  },
  getTask: {
    method: 'GET', url: '/task/:task_id', auth: 'key',
    schema: { operationId: 'getTask', summary: 'The task with its spec and last 100 events (a deleted task too)', tags: tags.tasks, headers: Plain, params: TaskIdParams, querystring: WaitQuery,
      response: { 200: json('The task, its spec and its last 100 events.', TaskDetail), ...errors(...KEYED, ...ON_TASK) } },
  },
  getTaskState: {
    method: 'GET', url: '/task/:task_id/state', auth: 'key',
    schema: { operationId: 'getTaskState', summary: 'The cheap poll: is a turn running?', tags: tags.tasks, headers: Plain, params: TaskIdParams, querystring: WaitQuery,
      response: { 200: json('The task\'s state from one indexed read.', TaskState), ...errors(...KEYED, ...ON_TASK) } },
  },
  streamTask: {
    method: 'GET', url: '/task/:task_id/stream', auth: 'key',
    schema: { operationId: 'streamTask', summary: 'Follow the task as SSE until no turn runs and nothing is queued', tags: tags.tasks, headers: Resumable, params: TaskIdParams, querystring: StreamQuery,
      response: {
        200: EVENT_STREAM,
        // `type: 'null'`: an answer without a body (the OpenAPI document then declares no content).
        204: { type: 'null', description: 'A reconnect (Last-Event-ID) to a task with no running turn and nothing new: there is nothing to follow, and a standard EventSource stops.', headers: COMMON_HEADERS },
        ...errors(...KEYED, ...ON_TASK),
      } },
  },
  listEvents: {
    method: 'GET', url: '/task/:task_id/events', auth: 'key',
    schema: { operationId: 'listEvents', summary: 'Page through the full event history', tags: tags.tasks, headers: Plain, params: TaskIdParams, querystring: EventsQuery,
      response: { 200: json('Stored events after `after`, oldest first.', EventPage), ...errors(...KEYED, ...ON_TASK) } },
  },
  continueTask: {
    method: 'POST', url: '/task/:task_id/continue', auth: 'key',
    schema: { operationId: 'continueTask', summary: 'Send a message: runs now when idle, queued (202) while a turn runs', tags: tags.tasks, headers: Idempotent, params: TaskIdParams, body: ContinueBody,
      response: { ...taskAnswers('A turn started on the message (or, with wait, the task after it).'), ...changeErrors } },
  },
  continueTaskStream: {
    method: 'POST', url: '/task/:task_id/continue/stream', auth: 'key',
    schema: { operationId: 'continueTaskStream', summary: 'As continue, answered with the event stream', tags: tags.tasks, headers: Plain, params: TaskIdParams, body: ContinueBody,
      response: { 200: EVENT_STREAM, ...errors(...KEYED, ...ON_TASK, ...WITH_BODY) } },
  },
  executeTask: {
    method: 'POST', url: '/task/:task_id/execute', auth: 'key', optionalBody: true,
    schema: { operationId: 'executeTask', summary: 'Run the current spec again; refused while a turn runs', tags: tags.tasks, headers: Idempotent, params: TaskIdParams, body: ExecuteBody,
      response: { 200: json('A turn started (or, with wait, the task after it).', Task, REPLAYED), ...changeErrors } },
  },
  executeTaskStream: {
    method: 'POST', url: '/task/:task_id/execute/stream', auth: 'key', optionalBody: true,
    schema: { operationId: 'executeTaskStream', summary: 'As execute, answered with the event stream', tags: tags.tasks, headers: Plain, params: TaskIdParams, body: ExecuteBody,
      response: { 200: EVENT_STREAM, ...errors(...KEYED, ...ON_TASK, ...WITH_BODY) } },
  },
  stopTask: {
    method: 'POST', url: '/task/:task_id/stop', auth: 'key', optionalBody: true,
    schema: { operationId: 'stopTask', summary: 'Stop the running turn (rows written are kept)', tags: tags.tasks, headers: Plain, params: TaskIdParams, body: StopBody,
      response: { 200: json('The task right after the stop.', Task), ...errors(...KEYED, ...ON_TASK, ...WITH_BODY) } },
  },
  updateTask: {
    method: 'PATCH', url: '/task/:task_id', auth: 'key',
    schema: { operationId: 'updateTask', summary: 'Rename, pin, or enter/leave cron mode', tags: tags.tasks, headers: Plain, params: TaskIdParams, body: PatchBody,
      response: { 200: json('The task as changed.', Task), ...errors(...KEYED, ...ON_TASK, ...WITH_BODY) } },
  },
  deleteTask: {
    method: 'DELETE', url: '/task/:task_id', auth: 'key',
    schema: { operationId: 'deleteTask', summary: 'Delete the task (its turn is stopped)', tags: tags.tasks, headers: Plain, params: TaskIdParams,
      response: { 200: json('The task with status `deleted`.', Task), ...errors(...KEYED, ...ON_TASK) } },
  },
  getOutput: {
    method: 'GET', url: '/task/:task_id/output', auth: 'key',
    schema: { operationId: 'getOutput', summary: 'Rows of the active output (or ?output=ID); format=csv|jsonl exports', tags: tags.outputs, headers: Plain, params: TaskIdParams, querystring: OutputQuery,
      response: { 200: exportAnswer(), ...errors(...KEYED, ...ON_TASK) } },
  },
  listOutputs: {
    method: 'GET', url: '/task/:task_id/outputs', auth: 'key',
    schema: { operationId: 'listOutputs', summary: 'The task\'s named outputs with row counts', tags: tags.outputs, headers: Plain, params: TaskIdParams,
      response: { 200: json('The outputs of the spec, in order.', OutputList), ...errors(...KEYED, ...ON_TASK) } },
  },
  getNamedOutput: {
    method: 'GET', url: '/task/:task_id/outputs/:output_id', auth: 'key',
    schema: { operationId: 'getNamedOutput', summary: 'Rows of one named output; format=csv|jsonl exports', tags: tags.outputs, headers: Plain, params: OutputParams, querystring: OutputQuery,
      response: { 200: exportAnswer(), ...errors(...KEYED, ...ON_TASK) } },
  },
  listSources: {
    method: 'GET', url: '/task/:task_id/sources', auth: 'key',
    schema: { operationId: 'listSources', summary: 'The pages and inputs the task read, kept as snapshots for checking citations', tags: tags.outputs, headers: Plain, params: TaskIdParams, querystring: SourcesQuery,
      response: { 200: json('Snapshots in the order they were read.', SourceList), ...errors(...KEYED, ...ON_TASK) } },
  },
  listChanges: {
    method: 'GET', url: '/task/:task_id/changes', auth: 'key',
    schema: { operationId: 'listChanges', summary: 'What the task\'s turns changed in its keyed table outputs, oldest first', tags: tags.outputs, headers: Plain, params: TaskIdParams, querystring: ChangesQuery,
      response: { 200: json('One page of changes. Without X-Next-Cursor and Link this is the last page.', ChangeList, NEXT_PAGE), ...errors(...KEYED, ...ON_TASK) } },
  },
  getSource: {
    method: 'GET', url: '/task/:task_id/sources/:source_id', auth: 'key',
    schema: { operationId: 'getSource', summary: 'One snapshot with its text', tags: tags.outputs, headers: Plain, params: SourceParams,
      response: { 200: json('The snapshot and the text quotes are checked against.', SourceDetail), ...errors(...KEYED, ...ON_TASK) } },
  },
  recheckTask: {
    method: 'POST', url: '/task/:task_id/recheck', auth: 'key', optionalBody: true,
    schema: { operationId: 'recheckTask', summary: 'Check every row\'s sources and cells again against the stored snapshots (never fetches)', tags: tags.outputs, headers: Plain, params: TaskIdParams, body: Type.Object({}),
      response: { 200: json('How many rows were checked and how many changed; a second recheck changes none.', RecheckResult), ...errors(...KEYED, ...ON_TASK, ...WITH_BODY) } },
  },
  createUploadUrl: {
    method: 'POST', url: '/upload-url', auth: 'key',
    schema: { operationId: 'createUploadUrl', summary: 'Get a signed URL to PUT a large input to', tags: tags.uploads, headers: Plain, body: UploadUrlBody,
      response: { 200: json('Where and how to PUT the file.', UploadTicket), ...errors(...KEYED, ...WITH_BODY) } },
  },
  putUpload: {
    method: 'PUT', url: '/upload/:upload_id', auth: 'none',
    schema: { operationId: 'putUpload', summary: 'Upload the file to a signed URL (the signature is the credential)', tags: tags.uploads, ...noKey, headers: Plain, params: UploadParams, querystring: UploadPutQuery,
      [RAW_BODY]: true,
      response: { 201: json('Stored.', UploadResult), ...errors(401, 404, 413, 422, 500, 503) } },
  },
  createGroup: {
    method: 'POST', url: '/group', auth: 'key',
    schema: { operationId: 'createGroup', summary: 'Run one spec over many inputs: each input becomes a run, at most max_parallel at once', tags: tags.groups, headers: Idempotent, body: GroupBody,
      response: { 200: json('The group; its first runs have started.', GroupDetail, REPLAYED), ...errors(...KEYED, ...WITH_BODY, 402) } },
  },
  listGroups: {
    method: 'GET', url: '/group', auth: 'key',
    schema: { operationId: 'listGroups', summary: 'List groups, newest first', tags: tags.groups, headers: Plain, querystring: GroupListQuery,
      response: { 200: json('One page of groups. Without X-Next-Cursor and Link this is the last page.', Type.Array(Group), NEXT_PAGE), ...errors(...KEYED, 422) } },
  },
  getGroup: {
    method: 'GET', url: '/group/:group_id', auth: 'key',
    schema: { operationId: 'getGroup', summary: 'A group: its status, counts by run status, and spec', tags: tags.groups, headers: Plain, params: GroupParams,
      response: { 200: json('The group.', GroupDetail), ...errors(...KEYED, ...ON_GROUP) } },
  },
  addGroupInputs: {
    method: 'POST', url: '/group/:group_id/inputs', auth: 'key',
    schema: { operationId: 'addGroupInputs', summary: 'Add inputs to a group, also while it runs', tags: tags.groups, headers: Plain, params: GroupParams, body: GroupInputsBody,
      response: { 200: json('The group with the inputs added.', GroupDetail), ...errors(...KEYED, ...ON_GROUP, ...WITH_BODY, 402) } },
  },
  getGroupRows: {
    method: 'GET', url: '/group/:group_id/rows', auth: 'key',
    schema: { operationId: 'getGroupRows', summary: 'The merged table: each run\'s rows with its input; format=csv|jsonl exports', tags: tags.groups, headers: Plain, params: GroupParams, querystring: GroupRowsQuery,
      response: {
        200: answer('A page of merged rows (JSON), or with format=csv|jsonl (or Accept: text/csv) every merged row as a file.', {
          'application/json': GroupRowsPage,
          'text/csv': Type.String({ description: 'A header row, then one row per merged row.' }),
          'application/x-ndjson': Type.String({ description: 'One merged row (JSON) per line.' }),
        }, { 'Content-Disposition': header('attachment; filename="<group_id>.<format>" (exports only).') }),
        ...errors(...KEYED, ...ON_GROUP),
      } },
  },
  listGroupChanges: {
    method: 'GET', url: '/group/:group_id/changes', auth: 'key',
    schema: { operationId: 'listGroupChanges', summary: 'The runs\' changes merged, each with its run\'s input, oldest first', tags: tags.groups, headers: Plain, params: GroupParams, querystring: ChangesQuery,
      response: { 200: json('One page of changes. Without X-Next-Cursor and Link this is the last page.', GroupChangeList, NEXT_PAGE), ...errors(...KEYED, ...ON_GROUP) } },
  },
  streamGroup: {
    method: 'GET', url: '/group/:group_id/stream', auth: 'key',
    schema: { operationId: 'streamGroup', summary: 'Follow the group as SSE until no run is pending or running (resumable over its whole life)', tags: tags.groups, headers: Resumable, params: GroupParams, querystring: GroupStreamQuery,
      response: {
        200: GROUP_STREAM,
        204: { type: 'null', description: 'A resume point (Last-Event-ID or after) at the last event of a group with nothing pending or running: nothing to follow.', headers: COMMON_HEADERS },
        ...errors(...KEYED, ...ON_GROUP),
      } },
  },
  stopGroup: {
    method: 'POST', url: '/group/:group_id/stop', auth: 'key', optionalBody: true,
    schema: { operationId: 'stopGroup', summary: 'Stop every run: pending ones become stopped, running ones are stopped', tags: tags.groups, headers: Plain, params: GroupParams, body: Type.Object({}),
      response: { 200: json('The group after the stop.', GroupDetail), ...errors(...KEYED, ...ON_GROUP, ...WITH_BODY) } },
  },
  retryGroup: {
    method: 'POST', url: '/group/:group_id/retry', auth: 'key', optionalBody: true,
    schema: { operationId: 'retryGroup', summary: 'Run the failed (or also the stopped) inputs again, each as a new run', tags: tags.groups, headers: Plain, params: GroupParams, body: RetryBody,
      response: { 200: json('The group with those inputs pending again.', GroupDetail), ...errors(...KEYED, ...ON_GROUP, ...WITH_BODY, 402) } },
  },
  listGroupRuns: {
    method: 'GET', url: '/group/:group_id/runs', auth: 'key',
    schema: { operationId: 'listGroupRuns', summary: 'Every run of the group in input order, rows or not', tags: tags.groups, headers: Plain, params: GroupParams, querystring: GroupRunsQuery,
      response: { 200: json('One page of runs. Without X-Next-Cursor and Link this is the last page.', GroupRunList, NEXT_PAGE), ...errors(...KEYED, ...ON_GROUP) } },
  },
  createWebhook: {
    method: 'POST', url: '/webhooks', auth: 'key',
    schema: { operationId: 'createWebhook', summary: 'Register an endpoint for turn (and group) events; its secret is shown once', tags: tags.webhooks, headers: Plain, body: WebhookBody,
      response: { 201: json('The endpoint and its signing secret (shown only now).', WebhookWithSecret), ...errors(...KEYED, ...WITH_BODY, 409) } },
  },
  listWebhooks: {
    method: 'GET', url: '/webhooks', auth: 'key',
    schema: { operationId: 'listWebhooks', summary: 'The account\'s endpoints, newest first (never their secrets)', tags: tags.webhooks, headers: Plain,
      response: { 200: json('Every endpoint of the account.', WebhookList), ...errors(...KEYED) } },
  },
  getWebhook: {
    method: 'GET', url: '/webhooks/:webhook_id', auth: 'key',
    schema: { operationId: 'getWebhook', summary: 'One endpoint', tags: tags.webhooks, headers: Plain, params: WebhookParams,
      response: { 200: json('The endpoint.', Webhook), ...errors(...KEYED, ...ON_WEBHOOK) } },
  },
  deleteWebhook: {
    method: 'DELETE', url: '/webhooks/:webhook_id', auth: 'key',
    schema: { operationId: 'deleteWebhook', summary: 'Delete an endpoint and its deliveries; nothing more is sent to it', tags: tags.webhooks, headers: Plain, params: WebhookParams,
      response: { 200: json('The endpoint as it was.', Webhook), ...errors(...KEYED, ...ON_WEBHOOK) } },
  },
  rotateWebhookSecret: {
    method: 'POST', url: '/webhooks/:webhook_id/rotate-secret', auth: 'key', optionalBody: true,
    schema: { operationId: 'rotateWebhookSecret', summary: 'A new signing secret; for 24 h the previous one signs too', tags: tags.webhooks, headers: Plain, params: WebhookParams, body: Type.Object({}),
      response: { 200: json('The endpoint and its new secret (shown only now).', WebhookWithSecret), ...errors(...KEYED, ...ON_WEBHOOK, ...WITH_BODY) } },
  },
  listDeliveries: {
    method: 'GET', url: '/webhooks/:webhook_id/deliveries', auth: 'key',
    schema: { operationId: 'listWebhookDeliveries', summary: 'The endpoint\'s deliveries, newest first', tags: tags.webhooks, headers: Plain, params: WebhookParams, querystring: DeliveriesQuery,
      response: { 200: json('One page of deliveries. Without X-Next-Cursor and Link this is the last page.', DeliveryList, NEXT_PAGE), ...errors(...KEYED, ...ON_WEBHOOK) } },
  },
  redeliver: {
    method: 'POST', url: '/webhooks/:webhook_id/deliveries/:delivery_id/redeliver', auth: 'key', optionalBody: true,
    schema: { operationId: 'redeliverWebhook', summary: 'Send a delivery again, with the same webhook-id', tags: tags.webhooks, headers: Plain, params: DeliveryParams, body: Type.Object({}),
      response: { 202: json('The delivery, due now.', Delivery), ...errors(...KEYED, ...ON_WEBHOOK, ...WITH_BODY) } },
  },
  getOwnAccount: {
    method: 'GET', url: '/account', auth: 'key',
    schema: { operationId: 'getAccount', summary: 'The account of the API key: its balance and the credits it has used', tags: tags.account, headers: Plain,
      response: { 200: json('The account.', OwnAccount), ...errors(...KEYED) } },
  },
  createAccount: {
    method: 'POST', url: '/admin/accounts', auth: 'admin',
    schema: { operationId: 'adminCreateAccount', summary: 'Create an account with credits and a first key', tags: tags.admin, headers: Plain, body: AccountBody,
      response: { 201: json('The account and its first key (shown once).', CreatedAccount), ...errors(401, 404, 500, 503, ...WITH_BODY) } },
  },
  getAccount: {
    method: 'GET', url: '/admin/accounts/:account_id', auth: 'admin',
    schema: { operationId: 'adminGetAccount', summary: 'An account and its balance', tags: tags.admin, headers: Plain, params: AccountParams,
      response: { 200: json('The account.', Account), ...errors(401, 404, 422, 500, 503) } },
  },
  addCredits: {
    method: 'POST', url: '/admin/accounts/:account_id/credits', auth: 'admin',
    schema: { operationId: 'adminAddCredits', summary: 'Add (or, negative, take) credits; the balance never goes below 0', tags: tags.admin, headers: Plain, params: AccountParams, body: CreditsBody,
      response: { 200: json('The new balance.', Balance), ...errors(401, 404, 500, 503, ...WITH_BODY) } },
  },
  createKey: {
    method: 'POST', url: '/admin/accounts/:account_id/keys', auth: 'admin', optionalBody: true,
    schema: { operationId: 'adminCreateKey', summary: 'Create another API key (shown once)', tags: tags.admin, headers: Plain, params: AccountParams, body: Type.Object({}),
      response: { 201: json('The new key (shown once).', CreatedKey), ...errors(401, 404, 500, 503, ...WITH_BODY) } },
  },
  listKeys: {
    method: 'GET', url: '/admin/accounts/:account_id/keys', auth: 'admin',
    schema: { operationId: 'adminListKeys', summary: 'An account\'s keys (never the secrets)', tags: tags.admin, headers: Plain, params: AccountParams,
      response: { 200: json('The keys, revoked ones too.', KeyList), ...errors(401, 404, 422, 500, 503) } },
  },
  revokeKey: {
    method: 'DELETE', url: '/admin/accounts/:account_id/keys/:key_id', auth: 'admin',
    schema: { operationId: 'adminRevokeKey', summary: 'Revoke a key: it is 401 from then on', tags: tags.admin, headers: Plain, params: KeyParams,
      response: { 200: json('The key as revoked.', Type.Object({ key_id: Type.String(), revoked_at: KeyInfo.properties.revoked_at })), ...errors(401, 404, 422, 500, 503) } },
  },
  getUsage: {
    method: 'GET', url: '/admin/accounts/:account_id/usage', auth: 'admin',
    schema: { operationId: 'adminGetUsage', summary: 'Per-turn usage', tags: tags.admin, headers: Plain, params: AccountParams,
      response: { 200: json('The account\'s turns, newest first.', Usage), ...errors(401, 404, 422, 500, 503) } },
  },
} as const;

/** A page of rows as JSON, or the whole output as CSV or JSON Lines (format=, or Accept: text/csv). */
function exportAnswer() {
  return answer('A page of rows (JSON), or with format=csv|jsonl (or Accept: text/csv) the whole output as a file.', {
    'application/json': OutputPage,
    'text/csv': Type.String({ description: 'A header row, then one line per row.' }),
    'application/x-ndjson': Type.String({ description: 'One JSON row per line.' }),
  }, { 'Content-Disposition': header('attachment; filename="<output file>" (csv and jsonl).') });
}

/** One route of the table. */
export type RouteDef = (typeof ROUTES)[keyof typeof ROUTES];

/** The routes whose 200 answer is an event stream (for the open-streams gauge, which shows each from the start). */
export const EVENT_STREAM_URLS: string[] = Object.values(ROUTES)
  .filter((route) => {
    const ok = (route.schema.response as Record<number, { content?: Record<string, unknown> }>)[200];
    return ok?.content !== undefined && 'text/event-stream' in ok.content;
  })
  .map((route) => route.url);
