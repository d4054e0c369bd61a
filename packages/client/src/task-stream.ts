/**
 * A task's event stream as an async iterator of typed events that survives dropped connections:
 * when a connection drops (or goes silent past the idle timeout, though the server pings every
 * 15 s), the stream reconnects to `GET /task/{task_id}/stream` with `Last-Event-ID`, and the
 * server replays what was missed. Events are handed out once each, in sequence order, and the
 * iterator ends where the server's stream would have ended (docs/api.md, Which stream ends when).
 */
import { ConnectionError, errorFromRefusal } from './errors.js';
import { ResumableStream, type ConnectionRules, type StreamSettings } from './internal/resumable-stream.js';
import type { CallResult } from './internal/transport.js';
import type { DoneEvent, ErrorEvent, TaskEvent } from './types.js';

const EVENT_KINDS = new Set(['task', 'tool', 'text', 'error', 'done']);

/**
 * `follow`: `GET /task/{task_id}/stream`, which ends once no turn runs and nothing is queued.
 * `turn`: a start or message stream, which ends after the `done` of the turn the request caused.
 *
 * @example
 * ```ts
 * const mode: TaskStreamMode = 'follow'; // what client.tasks.stream(id) makes
 * ```
 */
export type TaskStreamMode = 'follow' | 'turn';

/** @internal */
export interface TaskStreamInit extends StreamSettings {
  mode: TaskStreamMode;
  /** Known up front for everything but creates (then it comes with the first event). */
  taskId?: string;
  /** Follow streams: replay stored events after this sequence number. */
  after?: number;
  /**
   * Sends the request that opens the first connection (already started, for write ordering).
   * Without it (follow streams), the first connection is sent like a reconnect, with the caller's
   * `requestId`.
   */
  open?: (signal: AbortSignal) => Promise<CallResult>;
}

/**
 * An event stream of one task, consumed with `for await`. It can be iterated once.
 *
 * @example
 * ```ts
 * const stream = client.tasks.createAndStream({ prompt: 'EU battery makers' });
 * for await (const event of stream) {
 *   if (event.type === 'tool') console.log(event.name, event.state, event.summary ?? '');
 *   if (event.type === 'done') console.log('turn', event.outcome, 'credits', event.credits_used);
 * }
 * console.log('task', stream.taskId, 'last event', stream.lastEventId);
 * ```
 */
export class TaskStream implements AsyncIterable<TaskEvent> {
  private readonly core: ResumableStream<TaskEvent>;
  private ownTurnId: string | undefined;
  private id: string | undefined;
  /** A stored `done` has been handed out. */
  private doneSeen = false;

  /** @internal Built by the `tasks` resource. */
  constructor(private readonly init: TaskStreamInit) {
    this.id = init.taskId;
    this.core = new ResumableStream<TaskEvent>(init, {
      name: 'TaskStream',
      kinds: EVENT_KINDS,
      after: init.after,
      path: () => `/task/${encodeURIComponent(this.id!)}/stream`,
      // An idle task answers ?after= with its snapshot and done, but a Last-Event-ID with
      // nothing new after it with 204: only a reconnect has everything already.
      firstResumesBy: 'after',
      resumable: (requestId) => this.resumable(requestId),
      stored: (data) => this.stored(data),
      connection: (requestId, resumed) => this.connection(requestId, resumed),
    });
    // Sent now, not when iterated: a start or message request goes out in write order.
    this.core.start(init.open);
  }

  /** The task's id: known up front, or from the first event of a create. */
  get taskId(): string | undefined {
    return this.id;
  }

  /** Sequence number of the last stored event handed out: resume from it with `stream(id, { after })`. */
  get lastEventId(): number | undefined {
    return this.core.lastEventId;
  }

  /** Turn streams: the id of the turn this request started or queued, once known. */
  get turnId(): string | undefined {
    return this.ownTurnId;
  }

  /** How many times the stream has reconnected so far. */
  get reconnects(): number {
    return this.core.reconnects;
  }

  /**
   * Resolves once the server has accepted the request and opened the stream; rejects with the
   * error it refused with before opening (e.g. a ValidationError).
   *
   * @example
   * ```ts
   * const stream = client.tasks.continueAndStream(taskId, { message: 'Also cover Norway.' });
   * await stream.ready(); // the message went through
   * ```
   */
  async ready(): Promise<void> {
    await this.core.start();
  }

  /**
   * Stops reading and closes the connection; a running `for await` then ends quietly. The task
   * itself keeps running.
   *
   * @example
   * ```ts
   * setTimeout(() => stream.close(), 10_000);
   * for await (const event of stream) console.log(event.type);
   * ```
   */
  close(): void {
    this.core.close();
  }

  /**
   * Reads the stream to its end and returns its last `done` event (undefined if none came).
   *
   * @example
   * ```ts
   * const done = await client.tasks.createAndStream({ prompt: 'EU battery makers' }).finalDone();
   * console.log(done?.outcome);
   * ```
   */
  finalDone(): Promise<DoneEvent | undefined> {
    return this.core.finalDone();
  }

  [Symbol.asyncIterator](): AsyncIterator<TaskEvent> {
    return this.core[Symbol.asyncIterator]();
  }

  /** After a drop: a turn stream resumes only once it knows its turn, and any stream its task. */
  private resumable(requestId: string): string {
    if (this.init.mode === 'turn' && this.ownTurnId === undefined) {
      throw new ConnectionError('The stream dropped before its first event, so it cannot be resumed: check the task with client.tasks.state() or list().', { request_id: requestId });
    }
    if (this.id === undefined) throw new ConnectionError('The stream dropped before the task id was known.', { request_id: requestId });
    return this.id;
  }

  /** A create learns its task from the first stored event, a turn stream its turn. */
  private stored(data: Record<string, unknown>): void {
    if (typeof data.task_id === 'string') this.id ??= data.task_id;
    if (this.init.mode === 'turn' && this.ownTurnId === undefined && typeof data.turn_id === 'string') this.ownTurnId = data.turn_id;
  }

  /** What one connection's frames mean: unstored ones may refuse or restate, and a done may end the stream. */
  private connection(requestId: string, resumed: boolean): ConnectionRules<TaskEvent> {
    let refusal: ErrorEvent | undefined;
    let sawDone = false;
    return {
      // Unstored frames: a refusal (error + done refused), the idle snapshot and done, or a
      // replay failure (an error and the end of the stream: resumed like any drop).
      unstored: (kind, data) => {
        if (kind === 'error') {
          refusal = data as unknown as ErrorEvent;
          return false;
        }
        if (kind === 'done' && data.outcome === 'refused') {
          throw errorFromRefusal(refusal ?? { error: 'refused', message: 'The request was refused inside its stream.', retryable: false, task_id: (data.task_id as string | null) ?? null }, requestId);
        }
        if (kind === 'done') sawDone = true;
        // After a reconnect, the idle snapshot only restates what the replay already ended with.
        return !(resumed && this.doneSeen);
      },
      afterStored: (event) => {
        if (event.type !== 'done') return false;
        sawDone = true;
        this.doneSeen = true;
        return this.init.mode === 'turn' && event.turn_id === this.ownTurnId;
      },
      // A follow stream ends after a done; a turn stream only after its own done (afterStored).
      ended: () => this.init.mode === 'follow' && sawDone,
    };
  }
}
