/**
 * Events (decisions §10, §13): one discriminated union on `type`. Stored events go to streams as
 * `id: <seq>`, `event: <type>`, `data: <json>`, and to GET /task/{task_id}/events and the task
 * detail as JSON; unstored frames (a stream's idle snapshot, a refusal inside a stream) carry no seq.
 */
import { Type, type Static, type TProperties } from 'typebox';
import { component, Nullable, StringEnum, Timestamp } from './common.js';
import { ErrorCode } from './errors.js';
import { TaskSpec } from './spec.js';
import { Task } from './task.js';
import { ChangeCounts } from './changes.js';

export const TASK_EVENT_REASONS = [
  'created', 'turn_started', 'phase_changed', 'activity_changed', 'message_queued', 'turn_ended', 'updated', 'cron_tick_skipped', 'deleted',
] as const;
/** Why a stored `task` event was recorded. */
export type TaskEventReason = (typeof TASK_EVENT_REASONS)[number];

export const EVENT_TYPES = ['task', 'tool', 'text', 'error', 'done'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const DONE_OUTCOMES = ['completed', 'stopped', 'failed', 'refused', 'idle'] as const;
export type DoneOutcome = (typeof DONE_OUTCOMES)[number];

/** The members every event has, then its own. */
function eventOf<const T extends EventType, P extends TProperties>(type: T, name: string, description: string, properties: P) {
  return component(name, Type.Object({
    seq: Type.Optional(Type.Integer({ minimum: 1, description: 'Per-task sequence number; absent on unstored frames.' })),
    type: Type.Literal(type),
    task_id: Nullable(Type.String()),
    turn_id: Nullable(Type.String()),
    at: Timestamp(),
    ...properties,
  }, { description }));
}

export const TaskChangedEvent = eventOf('task', 'TaskChangedEvent', 'The task changed; carries its snapshot.', {
  reason: StringEnum([...TASK_EVENT_REASONS, 'snapshot'], { description: 'snapshot: the unstored idle snapshot of GET /task/{task_id}/stream.' }),
  task: Task,
  message: Type.Optional(Type.String({ description: 'The caller\'s words: on `message_queued`, and on `turn_started` of a turn that a message or an `execute` instruction started.' })),
});

export const ToolEvent = eventOf('tool', 'ToolEvent', 'A tool call started, finished or failed.', {
  call_id: Type.String(),
  agent: Type.Optional(Type.String({ description: 'A sub-researcher\'s call: "<research call_id>/<task index, from 0>". Absent on the lead\'s calls.' })),
  name: Type.String(),
  state: StringEnum(['started', 'finished', 'failed']),
  input: Type.Unknown({ description: 'The arguments the model sent (strings longer than 2,000 characters cut).' }),
  summary: Nullable(Type.String()),
  duration_ms: Nullable(Type.Integer({ minimum: 0 })),
  output: Type.Optional(Type.String({ description: 'The full result the model was given (finished and failed calls).' })),
  rows: Type.Optional(Type.Object({
    output: Type.String(),
    first_row: Type.Integer({ minimum: 1 }),
    count: Type.Integer({ minimum: 0 }),
    verified: Type.Integer({ minimum: 0, description: 'How many of them had every source verified.' }),
  }, { description: 'A write_rows call that wrote: where its rows went (read them by _row).' })),
});

export const TextEvent = eventOf('text', 'TextEvent', 'A chunk of model text (coalesced about every 250 ms).', {
  text: Type.String(),
  restart: Type.Optional(Type.Literal(true, {
    description: 'The model reply whose text came since the turn\'s last tool event, or its task event turn_started or phase_changed, failed part-way or was cut off by a crash: drop that text. The model is asked again and the new reply\'s text follows (or, after the last try, the turn\'s error). Such an event\'s own text is then added as usual: the text of earlier complete answers that the drop took with it (a text-only answer before the reply to the outputs check), most often empty.',
  })),
});

export const ErrorEvent = eventOf('error', 'ErrorEvent', 'A failure after the stream opened (a turn failed, or a refusal inside a stream).', {
  error: ErrorCode,
  message: Type.String(),
  retryable: Type.Boolean(),
});

export const DoneEvent = eventOf('done', 'DoneEvent', 'A turn ended (stored), or a stream of an idle task or a refused change closes (unstored).', {
  outcome: StringEnum([...DONE_OUTCOMES]),
  output_count: Nullable(Type.Integer({ minimum: 0 })),
  credits_used: Type.Number({ minimum: 0 }),
  rows_written: Type.Optional(Type.Integer({ minimum: 0, description: 'Rows the turn wrote (a stored `done` of a turn).' })),
  verified_rows: Type.Optional(Type.Integer({ minimum: 0, description: 'Of them, rows whose every source was verified.' })),
  unverified_rows: Type.Optional(Type.Integer({ minimum: 0, description: 'Of them, rows with a source that was not verified, or none.' })),
  citation_accuracy: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'A turn that ended: over all the task\'s rows, supported cells / (supported + unsupported cells); null with no cell checked.' }))),
  next_turn_id: Type.Optional(Nullable(Type.String({ description: 'The queued message that starts now; null: the task is idle.' }))),
  tokens_in: Type.Optional(Type.Integer({ minimum: 0, description: 'A turn that ended: all input tokens of its model calls, cached ones included.' })),
  tokens_in_cached: Type.Optional(Type.Integer({ minimum: 0, description: 'Of tokens_in, those the provider read from its prompt cache.' })),
  tokens_out: Type.Optional(Type.Integer({ minimum: 0, description: 'A turn that ended: the output tokens of its model calls.' })),
  compactions: Type.Optional(Type.Integer({ minimum: 0, description: 'A turn that ended: how often its conversation was compacted to fit the model\'s context.' })),
  changes: Type.Optional({ ...ChangeCounts, description: 'A turn of a task with a keyed table output: what it changed (GET /task/{task_id}/changes lists it).' }),
});

export const TaskEvent = component('TaskEvent', Type.Union([TaskChangedEvent, ToolEvent, TextEvent, ErrorEvent, DoneEvent], {
  discriminator: { propertyName: 'type' },
}));

export type TaskChangedEvent = Static<typeof TaskChangedEvent>;
export type ToolEvent = Static<typeof ToolEvent>;
export type TextEvent = Static<typeof TextEvent>;
export type ErrorEvent = Static<typeof ErrorEvent>;
export type DoneEvent = Static<typeof DoneEvent>;
export type TaskEvent = Static<typeof TaskEvent>;

/** What an event of `type` carries besides the members every stored event gets (seq, type, task_id, turn_id, at). */
export type EventPayload<T extends EventType> = Omit<Extract<TaskEvent, { type: T }>, 'seq' | 'type' | 'task_id' | 'turn_id' | 'at'>;

export const EventPage = component('EventPage', Type.Object({
  events: Type.Array(TaskEvent),
  next_after: Nullable(Type.Integer({ description: 'Pass as `after` for the next page; null on the last page.' })),
}));

export const TaskDetail = component('TaskDetail', Type.Intersect([Task, Type.Object({
  spec: TaskSpec,
  events: Type.Array(TaskEvent, { description: 'The last 100 events, oldest first.' }),
})]));
