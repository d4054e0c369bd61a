/**
 * Task groups (decisions §15.2): one spec run over many inputs, each input an ordinary task (a
 * run), merged into one table.
 */
import { Type, type Static } from 'typebox';
import { component, IdCursor, MAX_CREDITS, MAX_EVENT_SEQ, Nullable, Str, StringEnum, Timestamp } from './common.js';
import { ScheduleInput, TaskSpec, TaskSpecInput } from './spec.js';
import { EXPORT_FORMATS } from './outputs.js';

/** Inline inputs per request; a file (input_upload_id) may hold any number. */
export const MAX_INLINE_INPUTS = 1000;
export const DEFAULT_MAX_PARALLEL = 8;
export const MAX_PARALLEL_LIMIT = 256;

export const GROUP_STATUSES = ['running', 'finished', 'stopped'] as const;
export type GroupStatus = (typeof GROUP_STATUSES)[number];
/** pending: waits for a free slot · running: its task's turn is pending or running · then how that turn ended. */
export const RUN_STATUSES = ['pending', 'running', 'completed', 'failed', 'stopped'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

const GroupInput = Type.Record(Type.String(), Type.Unknown(), {
  maxProperties: 201,
  description: 'One input: a value per input column; `_key` (optional, a string) makes it idempotent within the group.',
});
const Inputs = Type.Array(GroupInput, { minItems: 1, maxItems: MAX_INLINE_INPUTS, description: `At most ${MAX_INLINE_INPUTS} per request; more through an uploaded file.` });
const InputUploadId = Str({ minLength: 1, maxLength: 64, description: 'A finished upload: a CSV file (a header row naming the columns) or JSON Lines (one object per line).' });

export const GroupBody = Type.Object({
  name: Type.Optional(Str({ maxLength: 200 })),
  task: TaskSpecInput,
  inputs: Type.Optional(Inputs),
  input_upload_id: Type.Optional(InputUploadId),
  max_parallel: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PARALLEL_LIMIT, description: `Runs of this group working at once (default ${DEFAULT_MAX_PARALLEL}).` })),
  max_credits: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_CREDITS, description: 'Once the group\'s runs have used this much (a scheduled group: in this tick), the runs still pending are stopped.' })),
  schedule: Type.Optional(ScheduleInput),
});
export type GroupBody = Static<typeof GroupBody>;

export const GroupInputsBody = Type.Object({
  inputs: Type.Optional(Inputs),
  input_upload_id: Type.Optional(InputUploadId),
});
export type GroupInputsBody = Static<typeof GroupInputsBody>;

export const GroupCounts = Type.Object({
  pending: Type.Integer({ minimum: 0 }),
  running: Type.Integer({ minimum: 0 }),
  completed: Type.Integer({ minimum: 0 }),
  failed: Type.Integer({ minimum: 0 }),
  stopped: Type.Integer({ minimum: 0 }),
}, { description: 'The group\'s inputs by the status of their run (duplicates are not counted).' });

export const Group = component('Group', Type.Object({
  group_id: Type.String(),
  name: Nullable(Type.String()),
  status: StringEnum([...GROUP_STATUSES], { description: 'running while a run is pending or running; finished when none is; stopped by POST /group/{id}/stop.' }),
  counts: GroupCounts,
  inputs: Type.Integer({ minimum: 0, description: 'Inputs received, duplicates included; each took the next index (`_input`).' }),
  duplicates: Type.Integer({ minimum: 0, description: 'Inputs whose `_key` the group already had: counted, never run.' }),
  credits_used: Type.Number({ minimum: 0, description: 'What the group\'s runs used: with max_credits as they are charged, without as each run ends; a scheduled group: since the last tick.' }),
  max_parallel: Type.Integer({ minimum: 1 }),
  max_credits: Nullable(Type.Number()),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  finished_at: Nullable(Timestamp('When no run was left pending or running (last time).')),
  cron: Nullable(Type.Object({ expression: Type.String(), timezone: Type.String(), next_run_at: Nullable(Timestamp()) }, { description: 'A scheduled group: its schedule and next tick; null otherwise.' })),
}));
export type Group = Static<typeof Group>;

export const GroupDetail = component('GroupDetail', Type.Object({
  ...Group.properties,
  spec: TaskSpec,
}, { description: 'A group with the spec its runs share.' }));
export type GroupDetail = Static<typeof GroupDetail>;

export const GroupParams = Type.Object({ group_id: Str({ minLength: 1, maxLength: 200 }) });

export const GroupListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(IdCursor('grp')),
  q: Type.Optional(Str({ minLength: 1, maxLength: 200, description: 'Only groups whose name holds this text (case-insensitive).' })),
  status: Type.Optional(StringEnum([...GROUP_STATUSES], { description: 'Only groups with this status.' })),
});

export const GroupRunsQuery = Type.Object({
  status: Type.Optional(StringEnum([...RUN_STATUSES], { description: 'Only the runs with this status.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  cursor: Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,15})$', description: 'X-Next-Cursor of the previous page.' })),
});

export const GroupRun = component('GroupRun', Type.Object({
  task_id: Nullable(Type.String({ description: 'The run\'s task (its latest, after a retry); null before the run first started.' })),
  input_index: Type.Integer({ minimum: 0, description: 'The input\'s 0-based index in the group (`_input` of its merged rows).' }),
  input: Type.Record(Type.String(), Type.Unknown(), { description: 'The input it runs on.' }),
  status: StringEnum([...RUN_STATUSES]),
  error: Type.Union([Type.Object({ error: Type.String(), message: Type.String() }), Type.Null()], { description: 'A failed run: the error its turn failed with; null otherwise.' }),
  credits_used: Type.Number({ minimum: 0, description: 'Credits the run\'s task has used (at most 6 decimal places).' }),
  updated_at: Nullable(Timestamp('The last change to the run\'s task; null before the run first started.')),
}, { description: 'One input of a group and the run that works on it, rows or not.' }));
export type GroupRun = Static<typeof GroupRun>;

export const GroupRunList = component('GroupRunList', Type.Object({ runs: Type.Array(GroupRun) }));

export const RetryBody = Type.Object({
  include: Type.Optional(Type.Array(StringEnum(['failed', 'stopped']), {
    minItems: 1, maxItems: 2, uniqueItems: true, default: ['failed'], description: 'Which runs to run again: failed (the default), stopped (by POST /group/{id}/stop or max_credits), or both.',
  })),
  max_credits: Type.Optional(Nullable(Type.Number({
    exclusiveMinimum: 0, maximum: MAX_CREDITS, description: 'A new cap for the group (null: none): runs stopped by max_credits would otherwise be stopped again at once.',
  }))),
});
export type RetryBody = Static<typeof RetryBody>;

export const GroupRowsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Rows per page.' })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })),
  format: Type.Optional(StringEnum([...EXPORT_FORMATS], { description: 'csv or jsonl streams every merged row as a file (also Accept: text/csv).' })),
});
export type GroupRowsQuery = Static<typeof GroupRowsQuery>;

export const RunRef = Type.Object({ task_id: Type.String(), status: StringEnum([...RUN_STATUSES]) });

export const GroupRow = Type.Object({
  _input: Type.Integer({ minimum: 0, description: 'The input\'s 0-based index in the group.' }),
  _sources: Type.Array(Type.Unknown(), { description: 'As on the run\'s output rows.' }),
  _basis: Type.Optional(Type.Unknown()),
  _run: RunRef,
}, { additionalProperties: true, description: 'One output row of one run: `_input`, the input\'s fields, the output\'s columns, `_sources`, `_basis`, `_run`.' });

export const GroupRowsPage = component('GroupRowsPage', Type.Object({
  total: Type.Integer({ minimum: 0, description: 'Merged rows in the group so far.' }),
  rows: Type.Array(GroupRow),
}));

export const GroupStreamQuery = Type.Object({ after: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_EVENT_SEQ, description: 'Replay stored events after this sequence number (as Last-Event-ID).' })) });

/** The members every group event has. */
const GroupEventBase = { seq: Type.Integer({ minimum: 1 }), group_id: Type.String(), at: Timestamp() };

export const RunEvent = Type.Object({
  ...GroupEventBase,
  type: Type.Literal('run'),
  task_id: Type.String(),
  input: Type.Integer({ minimum: 0, description: 'The input\'s index.' }),
  status: StringEnum([...RUN_STATUSES]),
}, { description: 'A run started (status running) or ended.' });
export const GroupSnapshotEvent = Type.Object({
  ...GroupEventBase,
  type: Type.Literal('group'),
  reason: StringEnum(['created', 'inputs_added', 'stopped', 'retried', 'budget_reached', 'out_of_credits', 'scheduled_tick'] as const),
  group: Group,
}, { description: 'The group after a change to many runs at once.' });
export const GroupDoneEvent = Type.Object({ ...GroupEventBase, type: Type.Literal('done'), group: Group }, { description: 'No run is pending or running any more.' });
export const GroupEvent = component('GroupEvent', Type.Union([RunEvent, GroupSnapshotEvent, GroupDoneEvent]));
export type GroupEvent = Static<typeof GroupEvent>;
export type GroupEventType = GroupEvent['type'];
export type GroupEventPayload<T extends GroupEventType> = Omit<Extract<GroupEvent, { type: T }>, 'seq' | 'type' | 'group_id' | 'at'>;
export type GroupSnapshotReason = Static<typeof GroupSnapshotEvent>['reason'];
