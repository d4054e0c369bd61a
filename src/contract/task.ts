/** The Task body (interface §2.1, decisions §9), its detail and state forms, and their enums. */
import { ChangeCounts } from './changes.js';
import { Type, type Static } from 'typebox';
import { component, Nullable, StringEnum, Timestamp } from './common.js';
import { ErrorCode } from './errors.js';


export const TASK_STATUSES = ['plan', 'execute', 'deleted'] as const;
export const TASK_PHASES = ['plan', 'execute'] as const;
export const TASK_ACTIVITIES = ['idle', 'planning', 'executing', 'thinking'] as const;
export const TURN_KINDS = ['plan', 'execute', 'continue'] as const;
export const TASK_WAITS = ['model_rate_limit', 'search_rate_limit'] as const;

export type TaskStatus = (typeof TASK_STATUSES)[number];
export type TaskPhase = (typeof TASK_PHASES)[number];
export type TaskActivity = (typeof TASK_ACTIVITIES)[number];
export type TurnKind = (typeof TURN_KINDS)[number];
export type TaskWait = (typeof TASK_WAITS)[number];

export const TaskPhaseSchema = StringEnum([...TASK_PHASES]);
export const TaskActivitySchema = StringEnum([...TASK_ACTIVITIES], { description: 'idle when no turn runs.' });
export const TaskWaitSchema = Type.Union([StringEnum([...TASK_WAITS]), Type.Null()], {
  description: 'What the running turn waits on now: model_rate_limit while its model call waits its place under the provider\'s limits (QUARRY_MODEL_RPM, QUARRY_MODEL_TPM, QUARRY_MODEL_CONCURRENCY, or what the provider\'s 429s and rate-limit headers said), search_rate_limit likewise for web_search; null otherwise.',
});
export const TurnKindSchema = StringEnum([...TURN_KINDS], { description: 'plan: a prompt create; execute: a spec create, execute or cron tick; continue: a message.' });

export const TURN_OUTCOMES = ['completed', 'failed', 'stopped'] as const;
export type TurnOutcome = (typeof TURN_OUTCOMES)[number];
export const TurnOutcomeSchema = StringEnum([...TURN_OUTCOMES]);

export const LastTurn = component('LastTurn', Type.Object({
  turn_id: Type.String(),
  kind: TurnKindSchema,
  outcome: TurnOutcomeSchema,
  started_at: Nullable(Timestamp()),
  ended_at: Timestamp(),
  credits_used: Type.Number({ minimum: 0, description: 'Credits the turn used (at most 6 decimal places).' }),
  error: Type.Union([Type.Object({ error: ErrorCode, message: Type.String() }), Type.Null()], { description: 'What the turn failed with; null when it completed or was stopped.' }),
  changes: Type.Optional({ ...ChangeCounts, description: 'A task with a keyed table output: what the turn changed, as on its done event (GET /task/{task_id}/changes lists it).' }),
}, { description: 'The last turn that ended.' }));
export type LastTurn = Static<typeof LastTurn>;

export const Task = component('Task', Type.Object({
  task_id: Type.String(),
  name: Nullable(Type.String()),
  type: Nullable(Type.String({ description: 'research' })),
  status: StringEnum([...TASK_STATUSES, 'accepted'], { description: 'plan: no turn runs; execute: a turn runs or waits; deleted; accepted on a 202 (message queued).' }),
  phase: Nullable(TaskPhaseSchema),
  activity: Nullable(TaskActivitySchema),
  waiting: TaskWaitSchema,
  output_count: Type.Integer({ minimum: 0 }),
  poll_after_s: Type.Integer({ minimum: 1, description: 'Seconds to wait before polling again: 2 while a turn runs, else 30 (or until the next cron run, at most 300).' }),
  status_url: Type.String(),
  output_url: Type.String(),
  stream_url: Type.String(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  pinned: Type.Boolean(),
  cron: Nullable(Type.Object({ expression: Type.String(), timezone: Type.String(), next_run_at: Nullable(Timestamp()) })),
  queued_messages: Type.Integer({ minimum: 0 }),
  credits_used: Type.Number({ minimum: 0, description: 'Credits this task has used (at most 6 decimal places).' }),
  active_output: Nullable(Type.String()),
  last_turn: Type.Union([LastTurn, Type.Null()], { description: 'The last turn that ended, or null before the first ends.' }),
  citation_accuracy: Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'Over the task\'s rows: supported cells / (supported + unsupported cells); null with no cell checked (decisions §17.1).' })),
  group_id: Type.Optional(Type.String({ description: 'A group\'s run only: its group.' })),
  input_index: Type.Optional(Type.Integer({ minimum: 0, description: 'A group\'s run only: its input\'s index in the group (`_input`).' })),
  input: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'A group\'s run only: the input it runs on.' })),
}));
export type Task = Static<typeof Task>;

export const TurnFailure = component('TurnFailure', Type.Object({
  error: ErrorCode,
  message: Type.String({ description: 'What went wrong and what to do about it; show it to a person.' }),
  retryable: Type.Boolean(),
}, { description: 'The error a turn failed with: the members of its `error` event.' }));

export const TaskState = component('TaskState', Type.Object({
  task_id: Type.String(),
  active: Type.Boolean({ description: 'True while a turn runs (or waits for a worker).' }),
  status: StringEnum([...TASK_STATUSES]),
  phase: Nullable(TaskPhaseSchema),
  activity: Nullable(TaskActivitySchema),
  waiting: TaskWaitSchema,
  queued_messages: Type.Integer({ minimum: 0 }),
  turn: Nullable(Type.Object({ id: Type.String(), kind: TurnKindSchema, started_at: Nullable(Timestamp()) })),
  last_event_id: Type.Integer({ minimum: 0, description: 'Sequence number of the last stored event: a Last-Event-ID to resume from.' }),
  last_error: Type.Union([TurnFailure, Type.Null()], { description: 'While no turn runs: the error the last turn failed with (as its `error` event), or null when it completed or was stopped. Null while a turn runs.' }),
  updated_at: Timestamp(),
}));
export type TaskState = Static<typeof TaskState>;


