/**
 * Task routes (interface §4, decisions §2, §8): creates, messages, execute, stop, patch, delete,
 * reads, long-polls and streams. Each handler checks the request's shape and hands the change
 * to the TaskService; no task state is decided here.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { QuarryError } from '../../errors.js';
import { checkedText, normalizeSpec, type TaskSpec } from '../../tasks/spec.js';
import type { TaskReply } from '../../tasks/task-service.js';
import { toTaskDetailView, toTaskView } from '../../tasks/task-view.js';
import type { TaskListCursor } from '../../store/store.js';
import { withIdempotency } from '../idempotency.js';
import { publicBaseUrl } from '../public-url.js';
import {
  ContinueBody, EventsQuery, ExecuteBody, ListQuery, PatchBody, PromptBody, StartBody, StateReplies, StopBody, StreamQuery, StreamReplies,
  TaskDetailReplies, TaskIdParams, TaskListReplies, TaskReplies, WaitQuery,
} from '../schemas.js';
import { leavesTaskIdle, resumeSeq, sendFramesAndEnd, streamTaskEvents, unstoredFrame } from '../sse.js';
import { StreamFanout } from '../sse-fanout.js';

/** Client task ids that fixed routes under /task would shadow, or that URLs cannot carry as a path segment. */
const RESERVED_TASK_IDS = new Set(['workflow', 'metaprompt', 'stream', 'start', '.', '..']);

/** Refusals that come from the task's state travel inside an opened stream (decisions §13). */
const IN_STREAM_REFUSALS = new Set(['out_of_credits', 'task_executing', 'task_in_cron_mode', 'task_exists']);

type Params = { task_id: string };

function encodeCursor(c: TaskListCursor): string {
  return Buffer.from(JSON.stringify([c.pinned ? 1 : 0, c.updatedAt, c.id])).toString('base64url');
}

function decodeCursor(raw: string): TaskListCursor {
  try {
    const [pinned, updatedAt, id] = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown[];
    if ((pinned === 0 || pinned === 1) && typeof updatedAt === 'string' && typeof id === 'string') return { pinned: pinned === 1, updatedAt, id };
  } catch {
    // fall through to the 422 below
  }
  throw QuarryError.validation('cursor', 'cursor is not a value this server issued: pass X-Next-Cursor from the previous page', [
    { type: 'value_error', loc: ['query', 'cursor'], msg: 'is not a cursor this server issued' },
  ]);
}

function checkClientTaskId(taskId: string | undefined): void {
  if (taskId && RESERVED_TASK_IDS.has(taskId)) {
    throw QuarryError.validation('task_id', `task_id "${taskId}" is reserved by a route; choose another`, [{ type: 'value_error', loc: ['body', 'task_id'], msg: 'is reserved' }]);
  }
}

/** `wait: true` or any positive integer blocks until the turn ends, at most `max` seconds (decisions §4). */
function blockSeconds(wait: boolean | number | undefined, max: number): number {
  return wait === true || (typeof wait === 'number' && wait > 0) ? max : 0;
}

/** Stop and execute take an optional body: no body at all means `{}`. */
async function defaultEmptyBody(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

export async function taskRoutes(app: FastifyInstance): Promise<void> {
  const { tasks, store, bus, config, uploads } = app.deps;
  // One fan-out for every stream these routes open: one bus subscription per followed task.
  const fanout = new StreamFanout(bus);

  /** The spec of a create request, checked in full (including its uploads) before anything is stored. */
  async function specFromRequest(accountId: string, body: StartBody): Promise<TaskSpec> {
    const spec = normalizeSpec(body.task!, 'task');
    if (!spec.prompt && spec.outputs.length === 0) {
      throw QuarryError.validation('task.prompt', 'task needs a prompt or at least one output', [{ type: 'missing', loc: ['body', 'task', 'prompt'], msg: 'a spec needs a prompt or at least one output' }]);
    }
    for (const [i, input] of spec.inputs.entries()) {
      if (!(await uploads.findCompleted(accountId, input.upload_id))) {
        throw QuarryError.validation(`task.inputs[${i}].upload_id`, `task.inputs[${i}].upload_id "${input.upload_id}" is not a finished upload of this account`, [
          { type: 'value_error', loc: ['body', 'task', 'inputs', i, 'upload_id'], msg: 'is not a finished upload of this account' },
        ]);
      }
    }
    return spec;
  }

  /** POST /task and POST /task/start share one rule (decisions §2). */
  async function createOrMessage(request: FastifyRequest, body: StartBody): Promise<TaskReply> {
    checkClientTaskId(body.task_id);
    if (body.task) {
      const spec = await specFromRequest(request.accountId, body);
      return created(request, await tasks.create(request.accountId, { taskId: body.task_id, spec, kind: 'execute' }, request.idempotency));
    }
    if (body.prompt === undefined) {
      throw QuarryError.validation('prompt', 'prompt is required when task is absent', [{ type: 'missing', loc: ['body', 'prompt'], msg: 'is required' }]);
    }
    const prompt = checkedText(body.prompt, 'prompt');
    if (body.task_id) return tasks.message(request.accountId, body.task_id, prompt, { viaPrompt: true, idempotency: request.idempotency });
    return created(request, await tasks.create(request.accountId, { spec: normalizeSpec({ prompt }), kind: 'plan', planOnly: body.plan_only }, request.idempotency));
  }

  /** Remembers the new task so a failure after this point tells the caller it exists (500 with task_id). */
  function created(request: FastifyRequest, reply: TaskReply): TaskReply {
    request.createdTaskId = reply.task.task_id;
    return reply;
  }

  async function answer(reply: FastifyReply, result: TaskReply) {
    return reply.code(result.statusCode).send(result.task);
  }

  /** Runs a change and follows it as SSE until its own turn's `done`. */
  async function streamChange(request: FastifyRequest, reply: FastifyReply, change: () => Promise<TaskReply>): Promise<void> {
    let result: TaskReply;
    try {
      result = await change();
    } catch (err) {
      if (err instanceof QuarryError && IN_STREAM_REFUSALS.has(err.code)) {
        const at = new Date().toISOString();
        const taskId = err.extras.task_id ?? null;
        sendFramesAndEnd(request, reply, [
          unstoredFrame('error', { type: 'error', task_id: taskId, turn_id: null, at, error: err.code, message: err.message, retryable: err.retryable }),
          unstoredFrame('done', { type: 'done', task_id: taskId, turn_id: null, at, outcome: 'refused', output_count: null, credits_used: 0 }),
        ]);
        return;
      }
      throw err;
    }
    const turnId = result.turnId;
    await streamTaskEvents(request, reply, {
      store, fanout, taskId: result.task.task_id, afterSeq: result.fromSeq, pingIntervalMs: config.pingIntervalMs, maxBufferBytes: config.sseMaxBufferBytes,
      isLast: (event) => event.type === 'done' && event.turnId === turnId,
    });
  }

  // ---- creates ---------------------------------------------------------------------------------

  app.post('/task', { schema: { response: TaskReplies,  body: PromptBody, tags: ['tasks'], summary: 'Start a task from a prompt, or message an existing task' } }, (request, reply) =>
    withIdempotency(request, reply, async () => answer(reply, await createOrMessage(request, request.body as PromptBody))),
  );

  app.post('/task/stream', { schema: { response: StreamReplies,  body: PromptBody, tags: ['tasks'], summary: 'As POST /task, answered with the event stream' } }, (request, reply) =>
    streamChange(request, reply, () => createOrMessage(request, request.body as PromptBody)),
  );

  app.post('/task/start', { schema: { response: TaskReplies,  body: StartBody, tags: ['tasks'], summary: 'Start a task from a spec (without task: as POST /task)' } }, (request, reply) =>
    withIdempotency(request, reply, async () => answer(reply, await createOrMessage(request, request.body as StartBody))),
  );

  app.post('/task/start/stream', { schema: { response: StreamReplies,  body: StartBody, tags: ['tasks'], summary: 'As POST /task/start, answered with the event stream' } }, (request, reply) =>
    streamChange(request, reply, () => createOrMessage(request, request.body as StartBody)),
  );

  // ---- reads -----------------------------------------------------------------------------------

  app.get('/task', { schema: { response: TaskListReplies,  querystring: ListQuery, tags: ['tasks'], summary: 'List tasks: pinned first, then most recently updated' } }, async (request, reply) => {
    const query = request.query as { limit: number; cursor?: string };
    const after = query.cursor ? decodeCursor(query.cursor) : undefined;
    const page = await tasks.listTasks(request.accountId, query.limit, after);
    if (page.next) {
      const cursor = encodeCursor(page.next);
      reply.header('X-Next-Cursor', cursor);
      reply.header('Link', `<${publicBaseUrl(request, config.publicUrl)}/task?limit=${query.limit}&cursor=${cursor}>; rel="next"`);
    }
    const now = Date.now();
    return page.tasks.map((t) => toTaskView(t, now));
  });

  app.get('/task/:task_id', { schema: { response: TaskDetailReplies,  params: TaskIdParams, querystring: WaitQuery, tags: ['tasks'], summary: 'The task with its spec and last 100 events' } }, async (request) => {
    const { task_id } = request.params as Params;
    const { wait } = request.query as { wait?: number };
    let task = await tasks.getTask(request.accountId, task_id, { includeDeleted: true });
    if (wait && task.currentTurnId) {
      await tasks.waitForTurn(task.id, task.currentTurnId, wait * 1000);
      task = await tasks.getTask(request.accountId, task_id, { includeDeleted: true });
    }
    const events = await store.lastEvents(task.id, 100);
    return toTaskDetailView(task, events);
  });

  app.get('/task/:task_id/state', { schema: { response: StateReplies,  params: TaskIdParams, querystring: WaitQuery, tags: ['tasks'], summary: 'The cheap poll: is a turn running?' } }, async (request) => {
    const { task_id } = request.params as Params;
    const { wait } = request.query as { wait?: number };
    let state = await store.getTaskState(task_id);
    if (!state || state.accountId !== request.accountId || state.status === 'deleted') throw QuarryError.taskNotFound(task_id);
    if (wait && state.currentTurnId) {
      await tasks.waitForTurn(task_id, state.currentTurnId, wait * 1000);
      state = (await store.getTaskState(task_id))!;
    }
    const { turn } = state;
    return {
      task_id: state.id,
      active: state.currentTurnId !== null,
      status: state.status,
      phase: state.phase,
      activity: state.activity,
      queued_messages: state.queuedCount,
      turn: turn ? { id: turn.id, kind: turn.kind, started_at: turn.startedAt } : null,
      last_event_id: state.lastEventSeq,
      updated_at: state.updatedAt,
    };
  });

  app.get('/task/:task_id/stream', { schema: { response: StreamReplies,  params: TaskIdParams, querystring: StreamQuery, tags: ['tasks'], summary: 'Follow the task as SSE until no turn runs and nothing is queued' } }, async (request, reply) => {
    const { task_id } = request.params as Params;
    const task = await tasks.getTask(request.accountId, task_id);
    const afterSeq = resumeSeq(request, (request.query as { after?: number }).after);
    const common = { store, fanout, taskId: task.id, afterSeq, pingIntervalMs: config.pingIntervalMs, maxBufferBytes: config.sseMaxBufferBytes };
    if (!task.currentTurnId) {
      // Idle: what was missed (when resuming), then the snapshot and a done, neither stored.
      const at = new Date().toISOString();
      const resuming = afterSeq > 0;
      await streamTaskEvents(request, reply, {
        ...common,
        afterSeq: resuming ? afterSeq : task.lastEventSeq,
        isLast: () => false,
        closingFrames: [
          unstoredFrame('task', { type: 'task', task_id: task.id, turn_id: null, at, reason: 'snapshot', task: toTaskView(task) }),
          unstoredFrame('done', { type: 'done', task_id: task.id, turn_id: null, at, outcome: 'idle', output_count: task.spec.outputs.length, credits_used: 0 }),
        ],
      });
      return;
    }
    await streamTaskEvents(request, reply, {
      ...common,
      isLast: leavesTaskIdle,
    });
  });

  app.get('/task/:task_id/events', { schema: { params: TaskIdParams, querystring: EventsQuery, tags: ['tasks'], summary: 'Page through the full event history' } }, async (request) => {
    const { task_id } = request.params as Params;
    const { after, limit } = request.query as { after: number; limit: number };
    const task = await tasks.getTask(request.accountId, task_id);
    const events = await store.listEvents(task.id, after, limit);
    const last = events[events.length - 1];
    return { events: events.map((e) => JSON.parse(e.data)), next_after: events.length === limit && last ? last.seq : null };
  });

  // ---- messages and control --------------------------------------------------------------------

  async function continueTask(request: FastifyRequest): Promise<TaskReply> {
    const { task_id } = request.params as Params;
    return tasks.message(request.accountId, task_id, checkedText((request.body as ContinueBody).message, 'message'), { idempotency: request.idempotency });
  }

  async function executeTask(request: FastifyRequest): Promise<TaskReply> {
    const { task_id } = request.params as Params;
    const body = request.body as ExecuteBody;
    return tasks.execute(request.accountId, task_id, body.instruction === undefined ? null : checkedText(body.instruction, 'instruction'), request.idempotency);
  }

  /** `wait: true` blocks until the turn ends (legacy); the answer is the task as it then stands. */
  async function answerMaybeBlocking(request: FastifyRequest, reply: FastifyReply, result: TaskReply, wait: boolean | number | undefined) {
    const seconds = blockSeconds(wait, config.maxBlockSeconds);
    if (seconds === 0 || !result.turnId) return answer(reply, result);
    await tasks.waitForTurn(result.task.task_id, result.turnId, seconds * 1000);
    const task = await tasks.getTask(request.accountId, result.task.task_id, { includeDeleted: true });
    return reply.code(200).send(toTaskView(task));
  }

  app.post('/task/:task_id/continue', { schema: { response: TaskReplies,  params: TaskIdParams, body: ContinueBody, tags: ['tasks'], summary: 'Send a message: runs now when idle, queued (202) while a turn runs' } }, (request, reply) =>
    withIdempotency(request, reply, async () => answerMaybeBlocking(request, reply, await continueTask(request), (request.body as ContinueBody).wait)),
  );

  app.post('/task/:task_id/continue/stream', { schema: { response: StreamReplies,  params: TaskIdParams, body: ContinueBody, tags: ['tasks'], summary: 'As continue, answered with the event stream' } }, (request, reply) =>
    streamChange(request, reply, () => continueTask(request)),
  );

  app.post('/task/:task_id/execute', { preValidation: defaultEmptyBody, schema: { response: TaskReplies,  params: TaskIdParams, body: ExecuteBody, tags: ['tasks'], summary: 'Run the current spec again; refused while a turn runs' } }, (request, reply) =>
    withIdempotency(request, reply, async () => answerMaybeBlocking(request, reply, await executeTask(request), (request.body as ExecuteBody).wait)),
  );

  app.post('/task/:task_id/execute/stream', { preValidation: defaultEmptyBody, schema: { response: StreamReplies,  params: TaskIdParams, body: ExecuteBody, tags: ['tasks'], summary: 'As execute, answered with the event stream' } }, (request, reply) =>
    streamChange(request, reply, () => executeTask(request)),
  );

  app.post('/task/:task_id/stop', { preValidation: defaultEmptyBody, schema: { response: TaskReplies,  params: TaskIdParams, body: StopBody, tags: ['tasks'], summary: 'Stop the running turn (rows written are kept)' } }, async (request, reply) => {
    const { task_id } = request.params as Params;
    const body = request.body as { clear_queue?: boolean };
    return answer(reply, await tasks.stop(request.accountId, task_id, body.clear_queue ?? false));
  });

  app.patch('/task/:task_id', { schema: { response: TaskReplies,  params: TaskIdParams, body: PatchBody, tags: ['tasks'], summary: 'Rename, pin, or enter/leave cron mode' } }, async (request, reply) => {
    const { task_id } = request.params as Params;
    return answer(reply, await tasks.patch(request.accountId, task_id, request.body as PatchBody));
  });

  app.delete('/task/:task_id', { schema: { response: TaskReplies,  params: TaskIdParams, tags: ['tasks'], summary: 'Delete the task (its turn is stopped)' } }, async (request, reply) => {
    const { task_id } = request.params as Params;
    return answer(reply, await tasks.delete(request.accountId, task_id));
  });
}
