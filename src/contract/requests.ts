/** Bodies, queries and path parameters of the task routes (interface §4, decisions §2, §4, §6, §8). */
import { Type, type Static } from 'typebox';
import { CLIENT_ID_PATTERN, MAX_EVENT_SEQ, Nullable, Str, StringEnum, Text, Timestamp } from './common.js';
import { TURN_OUTCOMES } from './task.js';
import { ScheduleInput, TaskSpecInput } from './spec.js';

const ClientTaskId = Type.String({ pattern: CLIENT_ID_PATTERN, description: '1-64 chars of A-Z a-z 0-9 _ . : -' });

const PathTaskId = Str({ minLength: 1, maxLength: 200 });
export const TaskIdParams = Type.Object({ task_id: PathTaskId });
export const OutputParams = Type.Object({ task_id: PathTaskId, output_id: Str({ minLength: 1, maxLength: 200 }) });

/** `wait` on a create: accepted for compatibility, never blocks (interface §3). */
const IgnoredWait = Type.Optional(Type.Unknown({ description: 'Accepted for compatibility and ignored: creates never block.' }));

export const PromptBody = Type.Object({
  prompt: Text('What to research (1-100,000 characters after trimming).'),
  task_id: Type.Optional(ClientTaskId),
  plan_only: Type.Optional(Type.Boolean({ description: 'End the first turn after planning; then call execute.' })),
  wait: IgnoredWait,
});
export type PromptBody = Static<typeof PromptBody>;

export const StartBody = Type.Object({
  task: Type.Optional(TaskSpecInput),
  task_id: Type.Optional(ClientTaskId),
  prompt: Type.Optional(Text('Used when `task` is absent: then the request is a prompt, as POST /task.')),
  plan_only: Type.Optional(Type.Boolean()),
  wait: IgnoredWait,
});
export type StartBody = Static<typeof StartBody>;

const WaitFlag = Type.Optional(Type.Union([Type.Boolean(), Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })], { description: 'true or a positive integer: block until the turn ends (at most QUARRY_MAX_BLOCK_SECONDS).' }));

/** Decisions §17.2: the turn runs against the evidence the task already has, and reads nothing new. */
const OfflineFlag = Type.Optional(Type.Boolean({
  description: 'Run this turn offline: web_search is not offered, and fetch_url answers only from the pages this task already fetched (its snapshots); a URL never fetched before is a tool error.',
}));

export const ContinueBody = Type.Object({ message: Text('What to change, add or continue.'), offline: OfflineFlag, wait: WaitFlag });
export type ContinueBody = Static<typeof ContinueBody>;

export const ExecuteBody = Type.Object({ instruction: Type.Optional(Text('An instruction for this run.')), offline: OfflineFlag, wait: WaitFlag });
export type ExecuteBody = Static<typeof ExecuteBody>;

export const StopBody = Type.Object({ clear_queue: Type.Optional(Type.Boolean({ description: 'Also cancel the queued messages.' })) });

export const PatchBody = Type.Object({
  name: Type.Optional(Nullable(Str({ maxLength: 200 }))),
  pinned: Type.Optional(Type.Boolean()),
  schedule: Type.Optional(Nullable(ScheduleInput)),
});
export type PatchBody = Static<typeof PatchBody>;

export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Str({ maxLength: 1000, description: 'X-Next-Cursor of the previous page.' })),
  group_id: Type.Optional(Str({ minLength: 1, maxLength: 200, description: 'List this group\'s runs (they are left out otherwise).' })),
  q: Type.Optional(Str({ minLength: 1, maxLength: 200, description: 'Only tasks whose name or prompt holds this text (case-insensitive).' })),
  state: Type.Optional(StringEnum(['running', 'idle'], { description: 'running: a turn runs or waits for a worker; idle: none does.' })),
  outcome: Type.Optional(StringEnum([...TURN_OUTCOMES], { description: 'Only tasks whose last ended turn had this outcome.' })),
  created_after: Type.Optional(Timestamp('Only tasks created after this time (ISO 8601).')),
  created_before: Type.Optional(Timestamp('Only tasks created before this time (ISO 8601).')),
});
export type ListQuery = Static<typeof ListQuery>;

export const WaitQuery = Type.Object({ wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60, description: 'Seconds to wait for the running turn to end.' })) });

/** A resume point: a stored event's sequence number (0: from the start). */
const After = (options: { default?: number; description?: string }) => Type.Integer({ minimum: 0, maximum: MAX_EVENT_SEQ, ...options });

export const StreamQuery = Type.Object({ after: Type.Optional(After({ description: 'Replay stored events after this sequence number (as Last-Event-ID).' })) });

export const EventsQuery = Type.Object({
  after: Type.Optional(After({ default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});
