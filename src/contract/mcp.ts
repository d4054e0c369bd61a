/**
 * The tools of Quarry's MCP server (decisions §15.4): their arguments and results, declared with
 * the REST contract's own schemas, so an MCP client sees the same Task, state and row shapes as
 * a REST client.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { Nullable, Str } from './common.js';
import { OutputPage } from './outputs.js';
import { ContinueBody, StartBody, StopBody, TaskIdParams } from './requests.js';
import { Task, TaskState } from './task.js';

/** The longest wait_for_task waits: below the MCP clients' usual 60 s request timeout. */
export const MAX_MCP_WAIT_SECONDS = 50;

export const StartTaskArgs = Type.Omit(StartBody, ['wait']);
export const WaitForTaskArgs = Type.Object({
  ...TaskIdParams.properties,
  timeout_s: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_MCP_WAIT_SECONDS, default: 30, description: `Seconds to wait for the running turn to end (1-${MAX_MCP_WAIT_SECONDS}, default 30).` })),
});
export const ReadRowsArgs = Type.Object({
  ...TaskIdParams.properties,
  output: Type.Optional(Str({ minLength: 1, maxLength: 200, description: 'A named output; default: the task\'s active output.' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 })),
});
export const ContinueTaskArgs = Type.Object({ ...TaskIdParams.properties, message: ContinueBody.properties.message, offline: ContinueBody.properties.offline });
export const StopTaskArgs = Type.Object({ ...TaskIdParams.properties, ...StopBody.properties });
export const ListTasksArgs = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Str({ maxLength: 1000, description: 'next_cursor of the previous page.' })),
});

export const TaskList = Type.Object({ tasks: Type.Array(Task), next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last.' })) });
export type TaskList = Static<typeof TaskList>;

interface McpToolDecl {
  description: string;
  input: TSchema;
  output: TSchema;
}

/** The seven tools: name → what it does, its arguments and its structured result. */
export const MCP_TOOLS = {
  start_task: {
    description: 'Start a research task from a prompt (it plans, then researches) or from a full spec (task). Returns the task at once; follow it with wait_for_task.',
    input: StartTaskArgs, output: Task,
  },
  get_task: { description: 'The task: its status, activity and how many outputs it has.', input: TaskIdParams, output: Task },
  wait_for_task: {
    description: `Wait up to timeout_s (at most ${MAX_MCP_WAIT_SECONDS}) for the task's running turn to end, with progress notifications as it works. Returns its state: active false once no turn runs; call again while it is true.`,
    input: WaitForTaskArgs, output: TaskState,
  },
  read_rows: { description: 'A page of rows of the task\'s active output (or a named one), each with its sources.', input: ReadRowsArgs, output: OutputPage },
  continue_task: {
    description: 'Send the task a message: it runs now when the task is idle, and is queued (status accepted) while a turn runs.',
    input: ContinueTaskArgs, output: Task,
  },
  stop_task: { description: 'Stop the task\'s running turn (rows written are kept); clear_queue also drops queued messages.', input: StopTaskArgs, output: Task },
  list_tasks: { description: 'The account\'s tasks, pinned first, then most recently updated; page with next_cursor.', input: ListTasksArgs, output: TaskList },
} as const satisfies Record<string, McpToolDecl>;

export type McpToolName = keyof typeof MCP_TOOLS;
export type McpToolArgs<N extends McpToolName> = Static<(typeof MCP_TOOLS)[N]['input']>;
