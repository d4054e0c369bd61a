/**
 * Task routes (interface §4, decisions §2, §8): each is its contract schema, one call to the
 * command or query layer, and the reply. Streams follow a change or a task as SSE.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ROUTES, type StartBody, type TaskState } from '../../contract/index.js';
import { QuarryError } from '../../errors.js';
import type { CommandReply } from '../../tasks/task-commands.js';
import type { TaskReply } from '../../tasks/task-service.js';
import type { ChangeGuard } from '../../tasks/unit-of-work.js';
import { toTaskView } from '../../domain/task-view.js';
import { contractRoute, typed } from '../contract-route.js';
import { withIdempotency } from '../idempotency.js';
import { publicBaseUrl } from '../public-url.js';
import { frame, leavesTaskIdle, resumeSeq, sendFramesAndEnd, streamEvents, unstoredFrame } from '../sse.js';
import { eventsBody, taskDetailBody } from '../spliced-bodies.js';

/** Refusals that come from the task's state travel inside an opened stream (decisions §13). */
const IN_STREAM_REFUSALS = new Set(['out_of_credits', 'task_executing', 'task_in_cron_mode', 'task_exists']);

/** Remembers a new task so a failure after this point tells the caller it exists (500 with task_id). */
function noteCreated(request: FastifyRequest, result: CommandReply): TaskReply {
  if (result.created) request.createdTaskId = result.task.task_id;
  return result;
}

/** 200 with the task, or 202 when the change is a message queued behind a running turn. */
function answer(reply: FastifyReply, result: TaskReply) {
  return reply.code(result.queued ? 202 : 200).send(result.task);
}

/** Aborted when the client goes away before its answer is sent: a long-poll then stops waiting for it. */
function clientGone(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  return gone.signal;
}

export async function taskRoutes(fastify: FastifyInstance): Promise<void> {
  const app = typed(fastify);
  const { commands, queries, events, config } = app.deps;
  const streamOptions = { events, pingIntervalMs: config.pingIntervalMs, maxBufferBytes: config.sseMaxBufferBytes };

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
          unstoredFrame('error', taskId, at, { error: err.code, message: err.message, retryable: err.retryable }),
          unstoredFrame('done', taskId, at, { outcome: 'refused', output_count: null, credits_used: 0 }),
        ]);
        return;
      }
      throw err;
    }
    const turnId = result.turnId;
    await streamEvents(request, reply, {
      ...streamOptions, streamId: result.task.task_id, afterSeq: result.fromSeq,
      isLast: (event) => event.type === 'done' && event.turnId === turnId,
    });
  }

  // ---- creates ---------------------------------------------------------------------------------

  /** POST /task and /task/start, with or without a stream: one rule (decisions §2). */
  async function createOrMessage(request: FastifyRequest, body: StartBody, guard?: ChangeGuard): Promise<TaskReply> {
    return noteCreated(request, await commands.createOrMessage(request.accountId, body, { guard }));
  }

  app.route({
    ...contractRoute(ROUTES.createTask),
    handler: (request, reply) => withIdempotency(request, reply, async (guard) => answer(reply, await createOrMessage(request, request.body, guard))),
  });
  app.route({ ...contractRoute(ROUTES.createTaskStream), handler: (request, reply) => streamChange(request, reply, () => createOrMessage(request, request.body)) });
  app.route({
    ...contractRoute(ROUTES.startTask),
    handler: (request, reply) => withIdempotency(request, reply, async (guard) => answer(reply, await createOrMessage(request, request.body, guard))),
  });
  app.route({ ...contractRoute(ROUTES.startTaskStream), handler: (request, reply) => streamChange(request, reply, () => createOrMessage(request, request.body)) });

  // ---- reads -----------------------------------------------------------------------------------

  app.route({
    ...contractRoute(ROUTES.listTasks),
    handler: async (request, reply) => {
      const { limit = 50, cursor, group_id: groupId, q, state, outcome, created_after: createdAfter, created_before: createdBefore } = request.query;
      const page = await queries.listBody(request.accountId, limit, cursor, { groupId, q, state, outcome, createdAfter, createdBefore });
      if (page.nextCursor) {
        reply.header('X-Next-Cursor', page.nextCursor);
        // The next page keeps the filters: every query value but the cursor, then the new cursor.
        const next = new URLSearchParams({ limit: String(limit) });
        for (const [name, value] of Object.entries({ group_id: groupId, q, state, outcome, created_after: createdAfter, created_before: createdBefore })) {
          if (value !== undefined) next.set(name, value);
        }
        next.set('cursor', page.nextCursor);
        reply.header('Link', `<${publicBaseUrl(request, config.publicUrl)}/task?${next.toString()}>; rel="next"`);
      }
      return reply.type('application/json; charset=utf-8').send(page.body);
    },
  });

  app.route({
    ...contractRoute(ROUTES.getTask),
    handler: async (request, reply) => {
      const { task, events } = await queries.detail(request.accountId, request.params.task_id, request.query.wait, request.query.wait ? clientGone(reply) : undefined);
      return reply.type('application/json; charset=utf-8').send(taskDetailBody(task, events));
    },
  });

  // The poll's body, serialized by the route's schema once per state body object: between two
  // commits every poll of a task gets the same object (TaskQueries.state). Not an async handler:
  // a state at hand is answered in the tick the poll arrived, with no promise to settle.
  const stateBodies = new WeakMap<Readonly<TaskState>, string>();
  const sendState = (reply: FastifyReply, state: Readonly<TaskState>) => {
    let body = stateBodies.get(state);
    if (body === undefined) {
      body = reply.getSerializationFunction('200', 'application/json')!(state);
      stateBodies.set(state, body);
    }
    return reply.type('application/json; charset=utf-8').send(body);
  };
  app.route({
    ...contractRoute(ROUTES.getTaskState),
    handler: (request, reply) => {
      const { wait } = request.query;
      const state = queries.state(request.accountId, request.params.task_id, wait, wait ? clientGone(reply) : undefined);
      if (state instanceof Promise) return state.then((s) => sendState(reply, s));
      // Nothing returned: Fastify waits on a returned reply (a thenable) until the answer is written.
      sendState(reply, state);
    },
  });

  app.route({
    ...contractRoute(ROUTES.streamTask),
    handler: async (request, reply) => {
      const resumeAt = resumeSeq(request, request.query.after);
      // A resume point past the task's last event has nothing new: the stream goes on from the
      // last event (else it would skip every event to come, its own turn's `done` too, for ever).
      const task = await queries.task(request.accountId, request.params.task_id);
      const afterSeq = Math.min(resumeAt ?? 0, task.lastEventSeq);
      // A reconnect (EventSource sends Last-Event-ID) to a task with no running turn and nothing
      // new: 204 tells a standard EventSource to stop instead of reconnecting for ever.
      if (!task.currentTurnId && request.headers['last-event-id'] !== undefined && afterSeq >= task.lastEventSeq) {
        return reply.code(204).send(null);
      }
      if (task.currentTurnId) {
        await streamEvents(request, reply, { ...streamOptions, streamId: task.id, afterSeq, isLast: leavesTaskIdle });
        return;
      }
      // Idle: what was missed after the resume point when one is given (`after=0`: every event,
      // so a turn that ended before its follower connected is still seen), then the snapshot and a done, neither stored. A
      // client that did not follow the task before (no resume point) gets the stored `error` of
      // a last turn that failed first, as it was sent then: the stream then shows why nothing
      // happens (a turn without a model fails at once), and clients take it as any stored event.
      // The done carries the last stored seq as its id (decisions §13), unless this stream just
      // sent that event: an EventSource that reconnects then says where it is and gets the 204
      // above, and no client sees an id twice.
      const failure = resumeAt !== undefined ? undefined : await queries.lastTurnError(task);
      const at = new Date().toISOString();
      await streamEvents(request, reply, {
        ...streamOptions, streamId: task.id,
        afterSeq: resumeAt !== undefined ? afterSeq : task.lastEventSeq,
        isLast: () => false,
        closing: {
          throughSeq: task.lastEventSeq,
          frames: (sentSeq) => {
            const sent = Math.max(sentSeq, failure?.seq ?? 0);
            return [
              ...(failure ? [frame(failure)] : []),
              unstoredFrame('task', task.id, at, { reason: 'snapshot', task: toTaskView(task) }),
              unstoredFrame('done', task.id, at, { outcome: 'idle', output_count: task.spec.outputs.length, credits_used: 0 }, sent === task.lastEventSeq ? 0 : task.lastEventSeq),
            ];
          },
        },
      });
    },
  });

  app.route({
    ...contractRoute(ROUTES.listEvents),
    handler: async (request, reply) => {
      const { after = 0, limit = 100 } = request.query;
      const page = await queries.events(request.accountId, request.params.task_id, after, limit);
      return reply.type('application/json; charset=utf-8').send(eventsBody(page.events, page.nextAfter));
    },
  });

  // ---- messages and control --------------------------------------------------------------------

  app.route({
    ...contractRoute(ROUTES.continueTask),
    handler: (request, reply) => withIdempotency(request, reply, async (guard) => {
      const result = await commands.continue(request.accountId, request.params.task_id, request.body, { guard });
      return answer(reply, await commands.settle(request.accountId, result, request.body.wait));
    }),
  });

  app.route({
    ...contractRoute(ROUTES.continueTaskStream),
    handler: (request, reply) => streamChange(request, reply, () => commands.continue(request.accountId, request.params.task_id, request.body)),
  });

  app.route({
    ...contractRoute(ROUTES.executeTask),
    handler: (request, reply) => withIdempotency(request, reply, async (guard) => {
      const result = await commands.execute(request.accountId, request.params.task_id, request.body, { guard });
      return answer(reply, await commands.settle(request.accountId, result, request.body.wait));
    }),
  });

  app.route({
    ...contractRoute(ROUTES.executeTaskStream),
    handler: (request, reply) => streamChange(request, reply, () => commands.execute(request.accountId, request.params.task_id, request.body)),
  });

  app.route({
    ...contractRoute(ROUTES.stopTask),
    handler: async (request, reply) => answer(reply, await commands.stop(request.accountId, request.params.task_id, request.body.clear_queue ?? false)),
  });

  app.route({
    ...contractRoute(ROUTES.updateTask),
    handler: async (request, reply) => answer(reply, await commands.patch(request.accountId, request.params.task_id, request.body)),
  });

  app.route({
    ...contractRoute(ROUTES.deleteTask),
    handler: async (request, reply) => answer(reply, await commands.delete(request.accountId, request.params.task_id)),
  });
}
