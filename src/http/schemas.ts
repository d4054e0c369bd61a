/**
 * Request and response schemas of every route, in one place. Fastify validates requests with
 * them and @fastify/swagger turns them into the OpenAPI document at GET /openapi.json.
 */
import { Type, type Static } from 'typebox';
import { CLIENT_ID_PATTERN } from '../ids.js';
import { OUTPUT_ID_PATTERN, TaskSpecSchema } from '../tasks/spec.js';

/** Non-blank text; its length is checked after trimming by checkedText (the schema sees it untrimmed). */
const Text = (description: string) => Type.String({ minLength: 1, pattern: '\\S', description });

export const TaskIdParams = Type.Object({ task_id: Type.String({ minLength: 1, maxLength: 200 }) });
export const OutputParams = Type.Object({ task_id: Type.String({ minLength: 1, maxLength: 200 }), output_id: Type.String({ minLength: 1, maxLength: 200 }) });

const ClientTaskId = Type.String({ pattern: CLIENT_ID_PATTERN, description: '1-64 chars of A-Z a-z 0-9 _ . : -' });

export const PromptBody = Type.Object({
  prompt: Text('What to research (1-100,000 characters).'),
  task_id: Type.Optional(ClientTaskId),
  plan_only: Type.Optional(Type.Boolean({ description: 'End the first turn after planning; then call execute.' })),
  wait: Type.Optional(Type.Unknown({ description: 'Accepted for compatibility and ignored: creates never block.' })),
});
export type PromptBody = Static<typeof PromptBody>;

export const StartBody = Type.Object({
  task: Type.Optional(TaskSpecSchema),
  task_id: Type.Optional(ClientTaskId),
  prompt: Type.Optional(Text('Used when `task` is absent: then the request is a prompt, as POST /task.')),
  plan_only: Type.Optional(Type.Boolean()),
  wait: Type.Optional(Type.Unknown()),
});
export type StartBody = Static<typeof StartBody>;

const WaitFlag = Type.Optional(Type.Union([Type.Boolean(), Type.Integer({ minimum: 0 })], { description: 'true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS).' }));

export const ContinueBody = Type.Object({ message: Text('What to change, add or continue.'), wait: WaitFlag });
export type ContinueBody = Static<typeof ContinueBody>;

export const ExecuteBody = Type.Object({ instruction: Type.Optional(Text('An instruction for this run.')), wait: WaitFlag });
export type ExecuteBody = Static<typeof ExecuteBody>;

export const StopBody = Type.Object({ clear_queue: Type.Optional(Type.Boolean()) });

export const PatchBody = Type.Object({
  name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  pinned: Type.Optional(Type.Boolean()),
  schedule: Type.Optional(
    Type.Union([Type.Object({ cron: Type.String({ minLength: 1, maxLength: 120 }), timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }), Type.Null()]),
  ),
});
export type PatchBody = Static<typeof PatchBody>;

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1000 })),
});

export const WaitQuery = Type.Object({ wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60, description: 'Seconds to wait for the running turn to end.' })) });

export const StreamQuery = Type.Object({ after: Type.Optional(Type.Integer({ minimum: 0, description: 'Replay stored events after this sequence number (as Last-Event-ID).' })) });

export const EventsQuery = Type.Object({
  after: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});

export const OutputQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50_000, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  output: Type.Optional(Type.String({ pattern: OUTPUT_ID_PATTERN })),
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv'), Type.Literal('jsonl')])),
});

export const UploadUrlBody = Type.Object({
  filename: Type.String({ minLength: 1, maxLength: 256 }),
  content_type: Type.String({ minLength: 1, maxLength: 200 }),
  size_bytes: Type.Integer({ minimum: 0 }),
});

export const UploadPutQuery = Type.Object({ expires: Type.Optional(Type.String({ maxLength: 20 })), sig: Type.Optional(Type.String({ maxLength: 200 })) });
export const UploadParams = Type.Object({ upload_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const AccountBody = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), credits: Type.Number({ minimum: 0 }) });
export const CreditsBody = Type.Object({ amount: Type.Number() });
export const AccountParams = Type.Object({ account_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const KeyParams = Type.Object({ account_id: Type.String({ minLength: 1, maxLength: 100 }), key_id: Type.String({ minLength: 1, maxLength: 100 }) });

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const TaskResponse = Type.Object({
  task_id: Type.String(),
  name: Nullable(Type.String()),
  type: Nullable(Type.String()),
  status: Type.String({ description: 'plan, execute, deleted; accepted on a 202' }),
  phase: Nullable(Type.String()),
  activity: Nullable(Type.String()),
  output_count: Type.Integer(),
  poll_after_s: Type.Integer(),
  status_url: Type.String(),
  output_url: Type.String(),
  stream_url: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  pinned: Type.Boolean(),
  cron: Type.Unknown(),
  queued_messages: Type.Integer(),
  credits_used: Type.Number(),
  active_output: Nullable(Type.String()),
}, { additionalProperties: true });

export const ErrorResponse = Type.Object({
  error: Type.String(),
  message: Type.String(),
  retryable: Type.Boolean(),
  request_id: Type.String(),
}, { additionalProperties: true });

const Errors = { '4xx': ErrorResponse, '5xx': ErrorResponse };

/** Documented answers of a route that returns a Task: 200, or 202 when a message was queued. */
export const TaskReplies = { 200: TaskResponse, 202: TaskResponse, ...Errors };
export const TaskListReplies = { 200: Type.Array(TaskResponse), ...Errors };
export const TaskDetailReplies = {
  200: Type.Intersect([TaskResponse, Type.Object({ spec: TaskSpecSchema, events: Type.Array(Type.Object({}, { additionalProperties: true })) })]),
  ...Errors,
};
export const StateReplies = {
  200: Type.Object({
    task_id: Type.String(),
    active: Type.Boolean(),
    status: Type.String(),
    phase: Type.Union([Type.String(), Type.Null()]),
    activity: Type.Union([Type.String(), Type.Null()]),
    queued_messages: Type.Integer(),
    turn: Type.Union([Type.Object({ id: Type.String(), kind: Type.String(), started_at: Type.Union([Type.String(), Type.Null()]) }), Type.Null()]),
    last_event_id: Type.Integer(),
    updated_at: Type.String(),
  }),
  ...Errors,
};
export const OutputPageReplies = {
  200: Type.Object({
    total: Type.Integer(),
    rows: Type.Array(Type.Object({ _row: Type.Integer(), _sources: Type.Array(Type.Object({}, { additionalProperties: true })) }, { additionalProperties: true })),
    output: Type.Union([Type.Object({ id: Type.String(), kind: Type.String(), path: Type.String() }), Type.Null()]),
  }),
  ...Errors,
};
export const StreamReplies = { 200: Type.String({ description: 'text/event-stream: task, tool, text, error and done events' }), ...Errors };
