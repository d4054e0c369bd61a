/**
 * What each MCP tool does (decisions §15.4), on the same command and query layer the REST routes
 * call: a tool's arguments are checked against its contract schema, it runs as the account of
 * the request's API key, and its result is the contract shape (structuredContent) with one line
 * of text. A refusal is an MCP tool error carrying Quarry's error body (code, message, param…)
 * in `_meta["quarry/error"]`, and its code at the start of the text.
 */
import type { ValidateFunction } from 'ajv';
import type { FastifyError } from 'fastify';
import type { Logger } from 'pino';
import { MAX_MCP_WAIT_SECONDS, MCP_TOOLS, type McpToolArgs, type McpToolName, type OutputPage, type Task, type TaskState } from '../../contract/index.js';
import { QuarryError } from '../../errors.js';
import { toQuarryError, validationError } from '../../http/error-handler.js';
import { schemaValidator } from '../../domain/json-schema.js';
import type { EventFollower } from '../../events/event-follower.js';
import type { EventRecord } from '../../domain/records.js';
import type { TaskCommands } from '../../tasks/task-commands.js';
import type { TaskQueries } from '../../tasks/task-queries.js';
import { toTaskView } from '../../domain/task-view.js';

export interface McpToolDeps {
  commands: TaskCommands;
  queries: TaskQueries;
  events: EventFollower;
  logger: Logger;
}

/** What a tool call knows of its request. */
export interface McpCall {
  accountId: string;
  requestId: string;
  /** Aborted when the client's connection closes. */
  signal: AbortSignal;
  /** Sends a progress notification; a no-op when the caller asked for none. */
  progress(progress: number, message: string): Promise<void>;
}

export interface McpToolResult {
  [key: string]: unknown;
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

// Arguments are read as the REST bodies are.
const ajv = schemaValidator('body');
const validators = new Map<McpToolName, ValidateFunction>(
  (Object.keys(MCP_TOOLS) as McpToolName[]).map((name) => [name, ajv.compile(MCP_TOOLS[name].input)]),
);

type Handlers = { [N in McpToolName]: (args: McpToolArgs<N>, call: McpCall) => Promise<{ result: unknown; text: string }> };

function describeTask(task: Task): string {
  const name = task.name ? ` "${task.name}"` : '';
  return `Task ${task.task_id}${name}: ${task.status}, ${task.activity ?? 'no activity'}; ${task.output_count} outputs; ${task.queued_messages} messages queued; ${task.credits_used} credits used.`;
}

function describeState(state: TaskState): string {
  if (state.active) return `Task ${state.task_id} is still working (${state.activity}${state.queued_messages ? `, ${state.queued_messages} messages queued` : ''}): call wait_for_task again.`;
  return state.last_error ? `Task ${state.task_id} is idle; its last turn failed: ${state.last_error.error}: ${state.last_error.message}` : `Task ${state.task_id} is idle: its turn has ended. Read its rows with read_rows.`;
}

/** A progress line for one stored event of the task being waited on. */
function eventLine(event: EventRecord): string {
  const data = JSON.parse(event.data) as { reason?: string; name?: string; state?: string; summary?: string; outcome?: string; error?: string };
  switch (event.type) {
    case 'task': return `task: ${data.reason}`;
    case 'tool': return `${data.name} ${data.state}${data.summary ? `: ${data.summary}` : ''}`;
    case 'text': return 'writing';
    case 'error': return `error: ${data.error}`;
    case 'done': return `turn ${data.outcome}`;
    default: return event.type;
  }
}

/** Sends a progress notification for each event followed, until the follow ends; progress is best effort. */
async function reportProgress(events: AsyncIterable<readonly EventRecord[]>, call: McpCall): Promise<void> {
  let seen = 0;
  try {
    for await (const batch of events) {
      for (const event of batch) void call.progress(++seen, eventLine(event)).catch(() => {});
    }
  } catch {
    // An event read that failed takes nothing from the wait: its answer comes from the task's state.
  }
}

export function createMcpTools(deps: McpToolDeps) {
  const { commands, queries, events } = deps;

  const handlers: Handlers = {
    async start_task(args, call) {
      const reply = await commands.createOrMessage(call.accountId, args);
      return { result: reply.task, text: describeTask(reply.task) };
    },
    async get_task(args, call) {
      const task = toTaskView(await queries.task(call.accountId, args.task_id, { includeDeleted: true }));
      return { result: task, text: describeTask(task) };
    },
    async wait_for_task(args, call) {
      const timeout = Math.min(args.timeout_s ?? 30, MAX_MCP_WAIT_SECONDS);
      // The task must be this account's before any of its events is listened to.
      const now = await queries.state(call.accountId, args.task_id);
      if (!now.active) return { result: now, text: describeState(now) };
      // Every event of the task after the state just read is a step of progress, while it is waited on.
      const waited = new AbortController();
      const progress = reportProgress(events.follow(args.task_id, now.last_event_id, AbortSignal.any([call.signal, waited.signal])), call);
      try {
        // The wait ends early when the client leaves; its answer then goes nowhere.
        const state = await queries.state(call.accountId, args.task_id, timeout, call.signal);
        return { result: state, text: describeState(state) };
      } finally {
        waited.abort();
        await progress;
      }
    },
    async read_rows(args, call) {
      const { task, output } = await queries.output(call.accountId, args.task_id, args.output);
      const page: OutputPage = { total: 0, rows: [], output: null };
      if (output) {
        const { total, rows } = await queries.rows(task, output, args.offset ?? 0, args.limit ?? 100);
        Object.assign(page, { total, rows: rows.map((r) => JSON.parse(r.toString('utf8')) as OutputPage['rows'][number]), output: { id: output.id, kind: output.kind, path: output.path } });
      }
      const from = (args.offset ?? 0) + 1;
      const text = page.output
        ? `${page.rows.length} rows of output ${page.output.id} (${from}-${from + page.rows.length - 1} of ${page.total}).`
        : `Task ${task.id} has no rows yet.`;
      return { result: page, text };
    },
    async continue_task(args, call) {
      const reply = await commands.continue(call.accountId, args.task_id, { message: args.message, offline: args.offline });
      return { result: reply.task, text: reply.queued ? `Queued behind the running turn. ${describeTask(reply.task)}` : describeTask(reply.task) };
    },
    async stop_task(args, call) {
      const reply = await commands.stop(call.accountId, args.task_id, args.clear_queue ?? false);
      return { result: reply.task, text: describeTask(reply.task) };
    },
    async list_tasks(args, call) {
      const page = await queries.list(call.accountId, args.limit ?? 50, args.cursor);
      const now = Date.now();
      const tasks = page.tasks.map((t) => toTaskView(t, now));
      return { result: { tasks, next_cursor: page.nextCursor ?? null }, text: `${tasks.length} tasks${page.nextCursor ? '; more with next_cursor' : ''}.` };
    },
  };

  /** Runs one tool call; never throws for a refusal, which is a tool error. */
  async function call(name: string, rawArgs: unknown, context: McpCall): Promise<McpToolResult> {
    if (!(name in MCP_TOOLS)) return refusal(new QuarryError('not_found', `No tool "${name}": the tools are ${Object.keys(MCP_TOOLS).join(', ')}.`), context);
    const tool = name as McpToolName;
    const args = structuredClone(rawArgs ?? {});
    const validate = validators.get(tool)!;
    // Named as a REST body's fields are (param, detail), the arguments being the body.
    if (!validate(args)) return refusal(validationError(validate.errors!, 'body'), context);
    try {
      const { result, text } = await (handlers[tool] as (a: unknown, c: McpCall) => Promise<{ result: unknown; text: string }>)(args, context);
      return { content: [{ type: 'text', text }], structuredContent: result as Record<string, unknown> };
    } catch (err) {
      if (err instanceof QuarryError) return refusal(err, context);
      if (context.signal.aborted) throw err;
      // A store outage is service_unavailable with retry_after, as on every route.
      const known = err instanceof Error ? toQuarryError(err as FastifyError) : null;
      if (known) return refusal(known, context);
      deps.logger.error({ err, tool, request_id: context.requestId }, 'an MCP tool failed');
      return refusal(new QuarryError('internal_error'), context);
    }
  }

  return { call };
}

/** A refusal as an MCP tool error: the client's model reads the text; a program reads `_meta["quarry/error"]`. */
function refusal(err: QuarryError, context: McpCall): McpToolResult {
  const body = err.toBody(context.requestId);
  return { isError: true, content: [{ type: 'text', text: `${err.code}: ${err.message}` }], _meta: { 'quarry/error': body } };
}
