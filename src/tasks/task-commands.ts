/**
 * The write side of tasks as the API offers it: each request body becomes one command here,
 * which checks what JSON Schema cannot (the spec's cross-field rules, uploads that must be
 * finished, reserved ids, trimmed text) and hands the change to the TaskService state machine.
 */
import { QuarryError } from '../errors.js';
import type { ContinueBody, ExecuteBody, PatchBody, StartBody, TaskSpec } from '../contract/index.js';
import type { Uploads } from '../uploads/uploads.js';
import { checkedText, normalizeSpec } from '../domain/spec.js';
import type { TaskReply, TaskService } from './task-service.js';
import { toTaskView } from '../domain/task-view.js';
import type { TaskQueries } from './task-queries.js';
import type { ChangeGuard } from './unit-of-work.js';

/** Client task ids that fixed routes under /task would shadow, or that URLs cannot carry as a path segment. */
const RESERVED_TASK_IDS = new Set(['workflow', 'metaprompt', 'stream', 'start', '.', '..']);

export interface CommandOptions {
  /** Run in the change's unit of work (the request's Idempotency-Key record). */
  guard?: ChangeGuard;
}

/** A change's answer, and whether it created the task (a failure after that must name it). */
export type CommandReply = TaskReply & { created: boolean };

export interface TaskCommandsOptions {
  tasks: TaskService;
  queries: TaskQueries;
  uploads: Uploads;
  /** The longest a `wait: true` continue or execute blocks (QUARRY_MAX_BLOCK_SECONDS). */
  maxBlockSeconds: number;
}

export class TaskCommands {
  constructor(private readonly opts: TaskCommandsOptions) {}

  /**
   * POST /task and POST /task/start share one rule (decisions §2): a spec creates a task that
   * executes it; a prompt creates a task that plans first, or, with the id of an existing task,
   * is a message to that task.
   */
  async createOrMessage(accountId: string, body: StartBody, opts: CommandOptions = {}): Promise<CommandReply> {
    const { tasks } = this.opts;
    if (body.task_id && RESERVED_TASK_IDS.has(body.task_id)) {
      throw QuarryError.validation('task_id', `task_id "${body.task_id}" is reserved by a route; choose another`, [{ type: 'value_error', loc: ['body', 'task_id'], msg: 'is reserved' }]);
    }
    if (body.task) {
      const spec = await this.specOf(accountId, body.task);
      return { ...(await tasks.create(accountId, { taskId: body.task_id, spec, kind: 'execute' }, opts.guard)), created: true };
    }
    if (body.prompt === undefined) {
      throw QuarryError.validation('prompt', 'prompt is required when task is absent', [{ type: 'missing', loc: ['body', 'prompt'], msg: 'is required' }]);
    }
    const prompt = checkedText(body.prompt, 'prompt');
    if (body.task_id) return { ...(await tasks.message(accountId, body.task_id, prompt, { viaPrompt: true, guard: opts.guard })), created: false };
    return { ...(await tasks.create(accountId, { spec: normalizeSpec({ prompt }), kind: 'plan', planOnly: body.plan_only }, opts.guard)), created: true };
  }

  /** A message: runs now when the task is idle, queued while a turn runs. */
  async continue(accountId: string, taskId: string, body: ContinueBody, opts: CommandOptions = {}): Promise<TaskReply> {
    return this.opts.tasks.message(accountId, taskId, checkedText(body.message, 'message'), { offline: body.offline, guard: opts.guard });
  }

  /** Runs the current spec again; never queued. */
  async execute(accountId: string, taskId: string, body: ExecuteBody, opts: CommandOptions = {}): Promise<TaskReply> {
    const instruction = body.instruction === undefined ? null : checkedText(body.instruction, 'instruction');
    return this.opts.tasks.execute(accountId, taskId, instruction, { offline: body.offline, guard: opts.guard });
  }

  /**
   * `wait: true` or any positive integer (legacy) blocks until the change's turn ends, at most
   * maxBlockSeconds (decisions §4); the answer is then the task as it stands, queued no more.
   */
  async settle(accountId: string, reply: TaskReply, wait: boolean | number | undefined, signal?: AbortSignal): Promise<TaskReply> {
    const blocks = wait === true || (typeof wait === 'number' && wait > 0);
    if (!blocks || !reply.turnId) return reply;
    await this.opts.queries.waitForTurn(reply.task.task_id, reply.turnId, reply.fromSeq, this.opts.maxBlockSeconds * 1000, signal);
    const task = await this.opts.queries.task(accountId, reply.task.task_id, { includeDeleted: true });
    return { ...reply, queued: false, task: toTaskView(task) };
  }

  async recheck(accountId: string, taskId: string): Promise<{ rows: number; changed: number }> {
    return this.opts.tasks.recheck(accountId, taskId);
  }

  async stop(accountId: string, taskId: string, clearQueue: boolean): Promise<TaskReply> {
    return this.opts.tasks.stop(accountId, taskId, clearQueue);
  }

  async patch(accountId: string, taskId: string, body: PatchBody): Promise<TaskReply> {
    return this.opts.tasks.patch(accountId, taskId, body);
  }

  async delete(accountId: string, taskId: string): Promise<TaskReply> {
    return this.opts.tasks.delete(accountId, taskId);
  }

  /**
   * The spec of a create request, checked in full (including its uploads) before anything is
   * stored. Input columns belong to a group's spec only (`forGroup`).
   */
  async specOf(accountId: string, input: NonNullable<StartBody['task']>, opts: { forGroup?: boolean } = {}): Promise<TaskSpec> {
    const spec = normalizeSpec(input, 'task');
    if (spec.input_columns && !opts.forGroup) {
      throw QuarryError.validation('task.input_columns', 'task.input_columns belongs to a group\'s spec: create a group (POST /group) to run one spec over many inputs', [
        { type: 'value_error', loc: ['body', 'task', 'input_columns'], msg: 'is only for a group\'s spec' },
      ]);
    }
    if (!spec.prompt && spec.outputs.length === 0) {
      throw QuarryError.validation('task.prompt', 'task needs a prompt or at least one output', [{ type: 'missing', loc: ['body', 'task', 'prompt'], msg: 'a spec needs a prompt or at least one output' }]);
    }
    for (const [i, input] of spec.inputs.entries()) {
      if (!(await this.opts.uploads.findCompleted(accountId, input.upload_id))) {
        throw QuarryError.validation(`task.inputs[${i}].upload_id`, `task.inputs[${i}].upload_id "${input.upload_id}" is not a finished upload of this account`, [
          { type: 'value_error', loc: ['body', 'task', 'inputs', i, 'upload_id'], msg: 'is not a finished upload of this account' },
        ]);
      }
    }
    return spec;
  }
}
