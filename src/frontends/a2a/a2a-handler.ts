/**
 * A2A's request handler over Quarry's own layers: messages become creates and continues
 * (TaskCommands), reads come from TaskQueries as REST's do, streams follow the task's stored
 * events (EventFollower). Nothing runs in this process for A2A's sake and nothing is kept here:
 * any process that serves the API answers any request, for tasks that run on any worker.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { ValidateFunction } from 'ajv';
import { TaskState, type AgentCard, type CancelTaskRequest, type GetTaskRequest, type ListTasksRequest, type ListTasksResponse, type Message, type SendMessageRequest, type StreamResponse, type SubscribeToTaskRequest, type Task as A2ATask } from '@a2a-js/sdk';
import { ServerCallContext, STATE_HEADERS_KEY, type A2ARequestHandler, type User } from '@a2a-js/sdk/server';
import { ContentTypeNotSupportedError, PushNotificationNotSupportedError, TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { ContinueBody, StartBody } from '../../contract/index.js';
import type { Config } from '../../config.js';
import { QuarryError } from '../../errors.js';
import type { EventFollower } from '../../events/event-follower.js';
import { validationError } from '../../http/error-handler.js';
import { schemaValidator } from '../../domain/json-schema.js';
import type { TaskRecord } from '../../domain/records.js';
import type { TaskCommands } from '../../tasks/task-commands.js';
import type { TaskQueries } from '../../tasks/task-queries.js';
import type { TaskReply } from '../../tasks/task-service.js';
import { buildAgentCard } from './agent-card.js';
import { malformed, quarryMetadata, toA2AError } from './a2a-errors.js';
import { DEFAULT_HISTORY, EventFrames, MAX_HISTORY, readArtifacts, readHistory, recapOf, taskRowBudget, toA2ATask, type Frame, type RowBudget } from './task-mapping.js';

export interface A2AHandlerDeps {
  commands: TaskCommands;
  queries: TaskQueries;
  events: EventFollower;
  config: Config;
  logger: FastifyBaseLogger;
}

/** What one `/a2a` request carries besides its parameters. */
export interface A2ACall {
  accountId: string;
  /** The service's base URL as the caller sees it (for links to the REST routes). */
  baseUrl: string;
  headers: IncomingHttpHeaders;
  /** Aborted when the client goes away: streams stop following the task. */
  signal: AbortSignal;
}

const CALL_KEY = 'quarry.call';

/** The caller: its account, as the request gate found it from the API key. */
class AccountUser implements User {
  constructor(readonly accountId: string) {}
  get isAuthenticated(): boolean { return true; }
  get userName(): string { return this.accountId; }
}

export function callContext(call: A2ACall, requestedVersion: string): ServerCallContext {
  return new ServerCallContext({
    user: new AccountUser(call.accountId),
    requestedVersion,
    state: new Map<string, unknown>([[STATE_HEADERS_KEY, call.headers], [CALL_KEY, call]]),
  });
}

// Bodies built from a message are checked as the REST bodies are.
const ajv = schemaValidator('body');
const validStart: ValidateFunction = ajv.compile(StartBody);
const validContinue: ValidateFunction = ajv.compile(ContinueBody);

function checked<T>(validate: ValidateFunction, body: Record<string, unknown>): T {
  if (!validate(body)) throw validationError(validate.errors as Parameters<typeof validationError>[0], 'body');
  return body as T;
}

/** Keys of a data part that make it a create request (POST /task/start's body) rather than context for the prompt. */
const START_KEYS = new Set(['task', 'task_id', 'prompt', 'plan_only']);

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A message as Quarry reads it: its text, a create body if a data part carried one, and the task it is for. */
interface Submission {
  text: string;
  start: Record<string, unknown> | null;
  taskId: string | null;
}

function readMessage(message: Message | undefined): Submission {
  if (!message) throw malformed('SendMessage needs a message.', 'message');
  const texts: string[] = [];
  let start: Record<string, unknown> | null = null;
  for (const part of message.parts) {
    const content = part.content;
    if (content?.$case === 'text') {
      texts.push(content.value);
    } else if (content?.$case === 'data') {
      const value: unknown = content.value;
      if (isObject(value) && Object.keys(value).length > 0 && Object.keys(value).every((k) => START_KEYS.has(k))) {
        if (start) throw malformed('Only one data part may carry a create request ({"task": …}).', 'message.parts');
        start = { ...value };
      } else {
        // Other structured data is context for the agent: it reads it as part of the prompt.
        texts.push(JSON.stringify(value));
      }
    } else if (content?.$case === 'url' || content?.$case === 'raw') {
      throw new ContentTypeNotSupportedError({
        message: 'File parts are not taken here: upload the file with POST /upload-url and name it in the inputs of a spec ({"task": {…, "inputs": [{"upload_id": …}]}}).',
        metadata: quarryMetadata('invalid_request', { param: 'message.parts', retryable: false }),
      });
    } else {
      throw malformed('A message part has no content.', 'message.parts');
    }
  }
  if (message.taskId && message.contextId && message.taskId !== message.contextId) {
    throw malformed('contextId is the task id here: give the same taskId and contextId, or only one of them.', 'message.contextId');
  }
  // Only a taskId names an existing task: clients make up a contextId for a new conversation.
  const taskId = message.taskId || null;
  return { text: texts.join('\n\n').trim(), start, taskId };
}

export class QuarryA2AHandler implements A2ARequestHandler {
  constructor(private readonly deps: A2AHandlerDeps) {}

  private call(context: ServerCallContext): A2ACall {
    const call = context.state.get(CALL_KEY) as A2ACall | undefined;
    if (!call) throw new Error('an A2A call context was built without callContext()');
    return call;
  }

  /** Runs a handler body: every failure leaves as an A2A error carrying our code. */
  private async answer<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toA2AError(err, this.deps.logger);
    }
  }

  /** The card at QUARRY_PUBLIC_URL; the route serves it at the request's own base URL instead (a2a-routes.ts). */
  async getAgentCard(): Promise<AgentCard> {
    return buildAgentCard(this.deps.config.publicUrl ?? '');
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new UnsupportedOperationError({ message: 'There is no extended agent card: the public one is all there is.', metadata: quarryMetadata('invalid_request', { retryable: false }) });
  }

  // ---- messages -------------------------------------------------------------------------------

  /** A create (no taskId) or a message to a task (queued while a turn runs). */
  private async submit(params: SendMessageRequest, call: A2ACall): Promise<TaskReply> {
    if (params.configuration?.taskPushNotificationConfig) throw pushUnsupported();
    const { text, start, taskId } = readMessage(params.message);
    const { commands } = this.deps;
    if (taskId) {
      if (start) throw malformed(`A {"task": …} data part starts a new task; to message task "${taskId}" send text only.`, 'message.parts');
      const body = checked<ContinueBody>(validContinue, { message: text });
      return commands.continue(call.accountId, taskId, body);
    }
    const body = start ?? {};
    if (text) {
      // The text is the prompt, of the spec when one is sent; a prompt given twice is ambiguous.
      const spec = body.task;
      if (isObject(spec)) {
        if (spec.prompt != null) throw malformed('The spec has a prompt and the message has text: send the prompt once.', 'message.parts');
        body.task = { ...spec, prompt: text };
      } else {
        if (body.prompt !== undefined) throw malformed('The data part has a prompt and the message has text: send the prompt once.', 'message.parts');
        body.prompt = text;
      }
    }
    if (body.task === undefined && body.prompt === undefined) throw malformed('The message has no text: say what to research (or send a {"task": …} data part).', 'message.parts');
    return commands.createOrMessage(call.accountId, checked<StartBody>(validStart, body));
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<A2ATask> {
    return this.answer(async () => {
      const call = this.call(context);
      const history = historyParam(params.configuration?.historyLength, DEFAULT_HISTORY);
      let reply = await this.submit(params, call);
      // Blocking is A2A's default: wait for this message's turn, at most QUARRY_MAX_BLOCK_SECONDS.
      if (!params.configuration?.returnImmediately) reply = await this.deps.commands.settle(call.accountId, reply, true, call.signal);
      const task = await this.deps.queries.task(call.accountId, reply.task.task_id, { includeDeleted: true });
      return this.toTask(task, call, { artifacts: true, history });
    });
  }

  /**
   * SendStreamingMessage: makes the change first (a refusal is an ordinary error answer, before
   * any stream), then the task as the change left it, then its events from the change on.
   */
  async openMessageStream(params: SendMessageRequest, context: ServerCallContext): Promise<AsyncGenerator<Frame, void, undefined>> {
    return this.answer(async () => {
      const call = this.call(context);
      const historyLimit = historyParam(params.configuration?.historyLength, DEFAULT_HISTORY);
      const reply = await this.submit(params, call);
      const task = await this.deps.queries.task(call.accountId, reply.task.task_id, { includeDeleted: true });
      const { artifacts, rowCounts } = await readArtifacts(this.deps.queries, task, call.baseUrl);
      const history = await readHistory(this.deps.queries, task, historyLimit);
      // As of the change: the turn it started or queued is ahead, whatever has happened since.
      const snapshot = toA2ATask(task, { recap: recapOf([]), artifacts, history, seq: reply.fromSeq, state: TaskState.TASK_STATE_WORKING });
      return this.frames(task, reply.fromSeq, snapshot, rowCounts, call.signal);
    });
  }

  async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    for await (const frame of await this.openMessageStream(params, context)) yield frame.response;
  }

  // ---- reads ----------------------------------------------------------------------------------

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<A2ATask> {
    return this.answer(async () => {
      const call = this.call(context);
      const history = historyParam(params.historyLength, DEFAULT_HISTORY);
      const task = await this.deps.queries.task(call.accountId, params.id, { includeDeleted: true });
      return this.toTask(task, call, { artifacts: true, history });
    });
  }

  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return this.answer(async () => {
      const call = this.call(context);
      const pageSize = params.pageSize ?? 50;
      if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100) throw malformed('pageSize must be an integer from 1 to 100.', 'pageSize');
      // The SDK's client sends UNRECOGNIZED (-1) when no status is given, as its enum's "none"; like UNSPECIFIED it filters nothing.
      const status = params.status > TaskState.TASK_STATE_UNSPECIFIED ? params.status : undefined;
      // A page of tasks carries no history unless asked for.
      const history = historyParam(params.historyLength, 0);
      const after = timestampParam(params.statusTimestampAfter);
      let records: TaskRecord[];
      let nextPageToken = '';
      let totalSize: number | undefined;
      if (params.contextId) {
        // A context is one task here.
        records = await this.deps.queries.task(call.accountId, params.contextId).then((t) => [t], (err: unknown) => {
          if (err instanceof QuarryError && err.code === 'task_not_found') return [];
          throw err;
        });
      } else {
        const [page, count] = await Promise.all([
          this.deps.queries.list(call.accountId, pageSize, params.pageToken || undefined).catch((err: unknown) => {
            if (err instanceof QuarryError && err.extras.param === 'cursor') throw malformed('pageToken is not a token this server issued: pass nextPageToken from the previous page.', 'pageToken');
            throw err;
          }),
          // A task's state is read from its turns, not counted in SQL: with a status filter the count is of the rest.
          this.deps.queries.count(call.accountId, after),
        ]);
        records = page.tasks;
        nextPageToken = page.nextCursor ?? '';
        totalSize = count;
      }
      // With artifacts, one byte budget for the page (read in turn): a page is not a hundred tasks' worth.
      const budget = taskRowBudget();
      let tasks: A2ATask[] = [];
      if (params.includeArtifacts === true) for (const task of records) tasks.push(await this.toTask(task, call, { artifacts: true, history, recent: 20, budget }));
      else tasks = await Promise.all(records.map((task) => this.toTask(task, call, { artifacts: false, history, recent: 20 })));
      // Filters apply to the page as listed, so a page may hold fewer than pageSize tasks.
      if (status !== undefined) tasks = tasks.filter((t) => t.status?.state === status);
      if (after !== undefined) tasks = tasks.filter((t) => (t.status?.timestamp ?? '') >= after);
      return { tasks, nextPageToken, pageSize, totalSize: totalSize ?? tasks.length };
    });
  }

  // ---- control --------------------------------------------------------------------------------

  /** Stops the running turn and drops the queued messages (POST /task/{id}/stop with clear_queue). */
  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<A2ATask> {
    return this.answer(async () => {
      const call = this.call(context);
      const before = await this.deps.queries.task(call.accountId, params.id);
      if (!before.currentTurnId && before.queuedCount === 0) {
        throw new TaskNotCancelableError({ message: `Task "${params.id}" has no running turn and nothing queued: there is nothing to cancel.`, metadata: quarryMetadata('invalid_request', { retryable: false }) });
      }
      await this.deps.commands.stop(call.accountId, params.id, true);
      const task = await this.deps.queries.task(call.accountId, params.id, { includeDeleted: true });
      return this.toTask(task, call, { artifacts: true, history: DEFAULT_HISTORY });
    });
  }

  /**
   * SubscribeToTask. With `Last-Event-ID`: the stored events after it, then live, and no Task
   * first (the client has what came before). Without: the task as it stands, then live; a task
   * with no turn running has nothing to follow (A2A refuses to subscribe to a finished task).
   */
  async openSubscription(params: SubscribeToTaskRequest, context: ServerCallContext): Promise<AsyncGenerator<Frame, void, undefined>> {
    return this.answer(async () => {
      const call = this.call(context);
      const task = await this.deps.queries.task(call.accountId, params.id);
      const resumeAt = resumePoint(call.headers['last-event-id']);
      if (resumeAt !== null) {
        // A task with nothing running or queued: what was stored after the resume point, then the end.
        const through = !task.currentTurnId && task.queuedCount === 0 ? task.lastEventSeq : undefined;
        return this.frames(task, Math.min(resumeAt, task.lastEventSeq), null, new Map(), call.signal, through);
      }
      if (!task.currentTurnId && task.queuedCount === 0) {
        throw new UnsupportedOperationError({
          message: `Task "${task.id}" has no running turn: there is nothing to subscribe to. GetTask shows how it ended; send a message to start a new turn.`,
          metadata: quarryMetadata('invalid_request', { retryable: false }),
        });
      }
      const { artifacts, rowCounts } = await readArtifacts(this.deps.queries, task, call.baseUrl);
      const snapshot = toA2ATask(task, { recap: recapOf([]), artifacts });
      return this.frames(task, task.lastEventSeq, snapshot, rowCounts, call.signal);
    });
  }

  async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    for await (const frame of await this.openSubscription(params, context)) yield frame.response;
  }

  // ---- push notifications: not offered (webhooks are Quarry's way) -----------------------------

  async createTaskPushNotificationConfig(): Promise<never> { throw pushUnsupported(); }
  async getTaskPushNotificationConfig(): Promise<never> { throw pushUnsupported(); }
  async listTaskPushNotificationConfigs(): Promise<never> { throw pushUnsupported(); }
  async deleteTaskPushNotificationConfig(): Promise<never> { throw pushUnsupported(); }

  // ---- shared ---------------------------------------------------------------------------------

  private async toTask(task: TaskRecord, call: A2ACall, opts: { artifacts: boolean; history: number; recent?: number; budget?: RowBudget }): Promise<A2ATask> {
    const { queries } = this.deps;
    const recap = recapOf(await queries.lastEvents(task, opts.recent ?? 100));
    // The last turn may have ended further back than the events read (many updates since): its row says how.
    if (recap.outcome === null && !task.currentTurnId) recap.outcome = (await queries.lastOutcome(task)) ?? null;
    // A failed turn's error can lie further back than the events read (a long closing text).
    if (task.lastErrorSeq != null && !recap.error) {
      const failure = await queries.lastTurnError(task);
      if (failure) recap.error = JSON.parse(failure.data) as { error: string; message: string };
    }
    const artifacts = opts.artifacts ? (await readArtifacts(queries, task, call.baseUrl, opts.budget)).artifacts : [];
    return toA2ATask(task, { recap, artifacts, history: await readHistory(queries, task, opts.history) });
  }

  /**
   * The stream: `first` (a Task, as of `afterSeq`), then a frame per event after `afterSeq` until
   * the task is idle, or with `through`, until that event (a task that was idle already).
   */
  private async *frames(task: TaskRecord, afterSeq: number, first: A2ATask | null, rowsHeld: Map<string, number>, signal: AbortSignal, through?: number): AsyncGenerator<Frame, void, undefined> {
    if (first) yield { id: afterSeq, response: { payload: { $case: 'task', value: first } } };
    const mapper = new EventFrames(this.deps.queries, task, rowsHeld);
    for await (const events of this.deps.events.follow(task.id, afterSeq, signal, { through })) {
      for (const event of events) {
        const { frames, last } = await mapper.map(event);
        for (const frame of frames) yield frame;
        if (last) return;
      }
    }
  }
}

/** historyLength as a number of messages (at most MAX_HISTORY): `fallback` when absent. */
function historyParam(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw malformed(`historyLength must be a whole number of messages, 0 or more (0: none), got ${value}.`, 'historyLength');
  return Math.min(value, MAX_HISTORY);
}

const validTimestamp: ValidateFunction = ajv.compile({ type: 'string', format: 'date-time' });

/** statusTimestampAfter as the store writes timestamps (ISO 8601, UTC, milliseconds), so they compare as text; undefined when absent. */
function timestampParam(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!validTimestamp(value)) throw malformed(`statusTimestampAfter must be an ISO 8601 timestamp with a time zone (like 2030-01-31T12:00:00Z), got "${value}".`, 'statusTimestampAfter');
  return new Date(value).toISOString();
}

function pushUnsupported() {
  return new PushNotificationNotSupportedError({ message: 'Push notifications are not offered over A2A: register a webhook (POST /webhooks) for turn outcomes.', metadata: quarryMetadata('invalid_request', { retryable: false }) });
}

/** `Last-Event-ID` as a sequence number; null when absent; malformed when it is not one. */
function resumePoint(header: string | string[] | undefined): number | null {
  if (header === undefined) return null;
  const value = (Array.isArray(header) ? header[0] ?? '' : header).trim();
  if (!/^\d{1,15}$/.test(value)) throw malformed('Last-Event-ID must be the sequence number of an event (the SSE id: of a frame).', 'Last-Event-ID');
  return Number(value);
}
