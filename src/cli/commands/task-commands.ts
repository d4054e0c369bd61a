/**
 * `quarry task …`: create, list, show, follow, wait, continue, execute, stop, rm, outputs, rows, recheck.
 */
import fs from 'node:fs/promises';
import type { ListTasksParams, Row, Task, TaskEvent } from '../../../packages/client/src/index.js';
import { changesCommand, intOption, LIST_OPTIONS, listItems, parseCommand, ROWS_OPTIONS, rowsRequest, writeExport, type CliContext, type Command } from '../context.js';
import { ExitCode, UsageError } from '../exit-codes.js';
import { credits, eventLine, fields, outputsTable, rowsTable, shortTime, taskStatus, tasksTable } from '../format.js';
import { followStream } from './follow.js';

async function readStdin(ctx: CliContext): Promise<string> {
  let text = '';
  for await (const chunk of ctx.io.stdin) text += chunk.toString();
  return text;
}

/** Reads a spec file ("-" for stdin) as JSON; a `{"task": {...}}` wrapper is accepted too. */
export async function readSpec(ctx: CliContext, file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = file === '-' ? await readStdin(ctx) : await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read spec file ${file}: ${(err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`spec file ${file} is not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new UsageError(`spec file ${file} must hold a JSON object (a task spec)`);
  const obj = value as Record<string, unknown>;
  const inner = obj.task;
  return typeof inner === 'object' && inner !== null && !Array.isArray(inner) ? (inner as Record<string, unknown>) : obj;
}

function printTaskAnswer(ctx: CliContext, task: Task, what: string): void {
  if (ctx.json) return ctx.printJson(task);
  const queued = task.status === 'accepted';
  ctx.out(`${task.task_id} ${queued ? `message queued (${task.queued_messages} waiting)` : `${what} (${taskStatus(task)})`}`);
}

const create: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, {
    spec: { type: 'string' },
    id: { type: 'string' },
    'plan-only': { type: 'boolean' },
    follow: { type: 'boolean', short: 'f' },
  }, { min: 0, max: 1, names: 'PROMPT' });
  const prompt = positionals[0];
  if (!values.spec && !prompt) throw new UsageError('missing PROMPT (or --spec FILE)');
  if (values.id && !values.spec) throw new UsageError('--id names the task a spec creates; to message an existing task use "quarry task continue ID MESSAGE"');
  const client = ctx.client();
  if (values.spec) {
    const spec = await readSpec(ctx, values.spec);
    if (prompt) spec.prompt = prompt;
    const params = { task: spec, task_id: values.id, plan_only: values['plan-only'] };
    if (values.follow) return followStream(ctx, client.tasks.startAndStream(params));
    printTaskAnswer(ctx, await client.tasks.start(params), 'created');
    return ExitCode.ok;
  }
  const params = { prompt: prompt!, plan_only: values['plan-only'] };
  if (values.follow) return followStream(ctx, client.tasks.createAndStream(params));
  printTaskAnswer(ctx, await client.tasks.create(params), 'created');
  return ExitCode.ok;
};

/** `task ls` filters, passed to GET /task as they are: the server names a bad one. */
const LS_FILTERS = {
  q: { type: 'string' }, state: { type: 'string' }, outcome: { type: 'string' }, 'created-after': { type: 'string' }, 'created-before': { type: 'string' },
} as const;

const ls: Command = async (ctx, args) => {
  const { values } = parseCommand(args, { ...LIST_OPTIONS, ...LS_FILTERS }, { min: 0, max: 0, names: '' });
  const filters = {
    q: values.q, state: values.state as ListTasksParams['state'], outcome: values.outcome as ListTasksParams['outcome'],
    created_after: values['created-after'], created_before: values['created-before'],
  };
  const { items: tasks } = await listItems(values, (limit) => ctx.client().tasks.list({ limit, ...filters }));
  if (ctx.json) ctx.printJson(tasks);
  else ctx.out(tasks.length ? tasksTable(tasks) : 'no tasks');
  return ExitCode.ok;
};

const show: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { events: { type: 'string' } }, { min: 1, max: 1, names: 'ID' });
  const client = ctx.client();
  const detail = await client.tasks.retrieve(positionals[0]!);
  if (ctx.json) {
    ctx.printJson(detail);
    return ExitCode.ok;
  }
  const lines: [string, string][] = [
    ['task', detail.task_id],
    ['name', detail.name ?? '-'],
    ['status', `${taskStatus(detail)}${detail.phase ? ` (phase ${detail.phase})` : ''}${detail.pinned ? ', pinned' : ''}`],
    ['created', shortTime(detail.created_at)],
    ['updated', shortTime(detail.updated_at)],
    ['credits', credits(detail.credits_used)],
    ['queued', String(detail.queued_messages)],
    ['cron', detail.cron ? `${detail.cron.expression} ${detail.cron.timezone} (next ${shortTime(detail.cron.next_run_at)})` : '-'],
  ];
  if (detail.spec.prompt) lines.push(['prompt', detail.spec.prompt.replace(/\s+/g, ' ')]);
  ctx.out(fields(lines, 8));
  if (detail.status !== 'deleted') {
    const outputs = await client.tasks.outputs(detail.task_id);
    ctx.out(outputs.length ? `\n${outputsTable(outputs)}` : '\nno outputs yet');
  }
  const count = intOption(values.events, 'events', { min: 0, max: 100 }) ?? 10;
  const events = (detail.events as TaskEvent[]).slice(-count);
  if (events.length) ctx.out(`\nlast events:\n${events.map((e) => `  ${String(e.seq ?? '-').padStart(4)}  ${eventLine(e)}`).join('\n')}`);
  return ExitCode.ok;
};

const follow: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { after: { type: 'string' } }, { min: 1, max: 1, names: 'ID' });
  const after = intOption(values.after, 'after', { min: 0 });
  return followStream(ctx, ctx.client().tasks.stream(positionals[0]!, { after }));
};

const wait: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { timeout: { type: 'string' } }, { min: 1, max: 1, names: 'ID' });
  const timeout = intOption(values.timeout, 'timeout', { min: 1 });
  const state = await ctx.client().tasks.waitForTurn(positionals[0]!, { timeoutMs: timeout === undefined ? undefined : timeout * 1000 });
  if (ctx.json) ctx.printJson(state);
  else {
    ctx.out(`${state.task_id} ${state.status}/${state.activity ?? '-'} (last event ${state.last_event_id})`);
    if (state.last_error) ctx.out(`the last turn failed: ${state.last_error.message} (${state.last_error.error})`);
  }
  return ExitCode.ok;
};

const continueTask: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { follow: { type: 'boolean', short: 'f' }, offline: { type: 'boolean' } }, { min: 2, max: 2, names: 'ID and MESSAGE' });
  const [taskId, message] = positionals as [string, string];
  const params = { message, offline: values.offline };
  const client = ctx.client();
  if (values.follow) return followStream(ctx, client.tasks.continueAndStream(taskId, params));
  printTaskAnswer(ctx, await client.tasks.continue(taskId, params), 'turn started');
  return ExitCode.ok;
};

const execute: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { follow: { type: 'boolean', short: 'f' }, offline: { type: 'boolean' } }, { min: 1, max: 2, names: 'ID' });
  const [taskId, instruction] = positionals as [string, string | undefined];
  const params = { instruction, offline: values.offline };
  const client = ctx.client();
  if (values.follow) return followStream(ctx, client.tasks.executeAndStream(taskId, params));
  printTaskAnswer(ctx, await client.tasks.execute(taskId, params), 'turn started');
  return ExitCode.ok;
};

const stop: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { 'clear-queue': { type: 'boolean' } }, { min: 1, max: 1, names: 'ID' });
  const task = await ctx.client().tasks.stop(positionals[0]!, { clear_queue: values['clear-queue'] });
  if (ctx.json) ctx.printJson(task);
  else ctx.out(`${task.task_id} stopped (${taskStatus(task)}${task.queued_messages ? `, ${task.queued_messages} queued` : ''})`);
  return ExitCode.ok;
};

const rm: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const task = await ctx.client().tasks.delete(positionals[0]!);
  if (ctx.json) ctx.printJson(task);
  else ctx.out(`${task.task_id} deleted`);
  return ExitCode.ok;
};

const outputs: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const list = await ctx.client().tasks.outputs(positionals[0]!);
  if (ctx.json) ctx.printJson(list);
  else ctx.out(list.length ? outputsTable(list) : 'no outputs yet');
  return ExitCode.ok;
};

const recheck: Command = async (ctx, args) => {
  const { positionals } = parseCommand(args, {}, { min: 1, max: 1, names: 'ID' });
  const taskId = positionals[0]!;
  const result = await ctx.client().tasks.recheck(taskId);
  if (ctx.json) ctx.printJson(result);
  else ctx.out(`${taskId} rechecked: ${result.rows} rows, ${result.changed} changed`);
  return ExitCode.ok;
};

const rows: Command = async (ctx, args) => {
  const { values, positionals } = parseCommand(args, { output: { type: 'string', short: 'o' }, ...ROWS_OPTIONS }, { min: 1, max: 1, names: 'ID' });
  const taskId = positionals[0]!;
  const client = ctx.client();
  const asked = rowsRequest(ctx, values, { maxLimit: 50_000, exported: 'the whole output' });
  if ('export' in asked) {
    await writeExport(ctx, await client.tasks.export(taskId, { output: values.output, format: asked.export }));
    return ExitCode.ok;
  }
  const { limit, offset } = asked;
  const page = await client.tasks.output(taskId, { output: values.output, limit, offset });
  if (ctx.json) {
    ctx.printJson(page);
    return ExitCode.ok;
  }
  if (!page.output) {
    ctx.out('no outputs yet');
    return ExitCode.ok;
  }
  if (page.rows.length === 0) {
    ctx.out(`no rows${offset ? ` from ${offset}` : ''} in ${page.output.id} (${page.total} in all)`);
    return ExitCode.ok;
  }
  ctx.out(rowsTable(page.rows as Row[]));
  const first = page.rows[0]!._row;
  const last = page.rows[page.rows.length - 1]!._row;
  ctx.err(`rows ${first}-${last} of ${page.total} in ${page.output.id}${last < page.total ? '; --offset to page, --csv or --jsonl to export all' : ''}`);
  return ExitCode.ok;
};

const changes = changesCommand((client, id, params) => client.tasks.changes(id, params));

export const TASK_COMMANDS: Record<string, Command> = {
  create,
  ls,
  list: ls,
  show,
  follow,
  wait,
  continue: continueTask,
  execute,
  stop,
  rm,
  delete: rm,
  outputs,
  rows,
  recheck,
  changes,
};

