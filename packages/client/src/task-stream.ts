/**
 * A task's event stream as an async iterator of typed events that survives dropped connections:
 * when a connection drops (or goes silent past the idle timeout, though the server pings every
 * 15 s), the stream reconnects to `GET /task/{task_id}/stream` with `Last-Event-ID`, and the
 * server replays what was missed. Events are handed out once each, in sequence order, and the
 * iterator ends where the server's stream would have ended (docs/api.md, Which stream ends when).
 */
import { ConnectionError, QuarryAbortError, QuarryError, errorFromRefusal } from './errors.js';
import { anySignal } from './internal/any-signal.js';
import { backoffMs, sleep, type BackoffOptions } from './internal/retry.js';
import { SseDecoder, type SseFrame } from './internal/sse-decoder.js';
import type { CallResult, Transport } from './internal/transport.js';
import type { RequestOptions } from './request-options.js';
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
export interface TaskStreamInit {
  transport: Transport;
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
  options: RequestOptions;
  /** A connection that delivers nothing (not even a ping) for this long is treated as dropped. */
  idleTimeoutMs: number;
  /** Reconnects in a row that bring no new event before the stream gives up. */
  maxReconnects: number;
  backoff: BackoffOptions;
}

/** What one connection ended with. */
type ConnectionEnd = 'finished' | 'dropped';

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
  private readonly closer = new AbortController();
  private readonly first: Promise<CallResult>;
  private started = false;
  private lastSeq: number | undefined;
  private ownTurnId: string | undefined;
  private id: string | undefined;
  private reconnectCount = 0;

  /** @internal Built by the `tasks` resource. */
  constructor(private readonly init: TaskStreamInit) {
    this.id = init.taskId;
    this.lastSeq = init.after !== undefined && init.after > 0 ? init.after : undefined;
    this.first = init.open ? init.open(this.signal()) : this.connect(this.signal(), init.options.requestId);
    // Failures surface when the stream is read (or awaited with ready()), never as unhandled.
    this.first.catch(() => undefined);
  }

  /** The task's id: known up front, or from the first event of a create. */
  get taskId(): string | undefined {
    return this.id;
  }

  /** Sequence number of the last stored event handed out: resume from it with `stream(id, { after })`. */
  get lastEventId(): number | undefined {
    return this.lastSeq;
  }

  /** Turn streams: the id of the turn this request started or queued, once known. */
  get turnId(): string | undefined {
    return this.ownTurnId;
  }

  /** How many times the stream has reconnected so far. */
  get reconnects(): number {
    return this.reconnectCount;
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
    await this.first;
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
    this.closer.abort();
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
  async finalDone(): Promise<DoneEvent | undefined> {
    let last: DoneEvent | undefined;
    for await (const event of this) if (event.type === 'done') last = event;
    return last;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<TaskEvent> {
    if (this.started) throw new Error('A TaskStream can be iterated only once.');
    this.started = true;
    const state: IterationState = { doneSeen: false, failures: 0 };
    let pending: Promise<CallResult> = this.first;
    let resumed = false;
    for (;;) {
      let result: CallResult;
      const connection = new AbortController();
      try {
        result = await pending;
      } catch (err) {
        if (this.closer.signal.aborted && !this.init.options.signal?.aborted) return;
        throw err;
      }
      const end = yield* this.read(result, connection, state, resumed);
      if (end === 'finished') return;
      // Dropped: come back with Last-Event-ID, after a backoff when drops keep bringing nothing.
      if (this.init.mode === 'turn' && this.ownTurnId === undefined) {
        throw new ConnectionError('The stream dropped before its first event, so it cannot be resumed: check the task with client.tasks.state() or list().', { request_id: result.requestId });
      }
      if (this.id === undefined) throw new ConnectionError('The stream dropped before the task id was known.', { request_id: result.requestId });
      if (state.failures > this.init.maxReconnects) {
        throw new ConnectionError(`The event stream of ${this.id} dropped ${state.failures} times in a row without delivering an event.`, { request_id: result.requestId });
      }
      await sleep(backoffMs(state.failures - 1, this.init.backoff), this.signal(), result.requestId).catch((err: unknown) => {
        if (!(err instanceof QuarryAbortError) || this.init.options.signal?.aborted) throw err;
      });
      if (this.closer.signal.aborted) return;
      this.reconnectCount += 1;
      resumed = true;
      pending = this.connect(this.signal(), undefined);
      pending.catch(() => undefined);
    }
  }

  /** Reads one connection; yields its new events; tells whether the stream is over or dropped. */
  private async *read(result: CallResult, connection: AbortController, state: IterationState, resumed: boolean): AsyncGenerator<TaskEvent, ConnectionEnd> {
    // A reconnect to a task with no running turn and nothing new: everything was handed out.
    if (result.response.status === 204) return 'finished';
    const body = result.response.body;
    if (!body) return 'dropped';
    if (!/^text\/event-stream\b/i.test(result.response.headers.get('content-type') ?? '')) {
      await body.cancel().catch(() => undefined);
      throw new QuarryError({ status: result.response.status, error: 'invalid_stream', message: 'The server did not answer with an event stream.', retryable: false, request_id: result.requestId });
    }
    const reader = body.getReader();
    const stopReading = () => void reader.cancel().catch(() => undefined);
    this.closer.signal.addEventListener('abort', stopReading, { once: true });
    this.init.options.signal?.addEventListener('abort', stopReading, { once: true });
    const text = new TextDecoder();
    const decoder = new SseDecoder();
    let refusal: ErrorEvent | undefined;
    let sawDone = false;
    let idle: ReturnType<typeof setTimeout> | undefined;
    try {
      for (;;) {
        // The idle clock runs only while waiting for the server, never while the caller holds an event.
        idle = setTimeout(() => {
          connection.abort();
          stopReading();
        }, this.init.idleTimeoutMs);
        let chunk: Awaited<ReturnType<typeof reader.read>> | undefined;
        try {
          chunk = await reader.read();
        } catch {
          chunk = undefined; // the connection failed
        } finally {
          clearTimeout(idle);
        }
        if (this.stopped()) return this.endStopped();
        if (!chunk || connection.signal.aborted) return 'dropped';
        if (chunk.done) break;
        for (const frame of decoder.push(text.decode(chunk.value, { stream: true }))) {
          const data = parse(frame);
          if (!data) continue;
          if (frame.id === undefined) {
            // Unstored frames: a refusal (error + done refused), the idle snapshot and done, or a
            // replay failure (an error and the end of the stream: resumed like any drop).
            if (frame.event === 'error') {
              refusal = data as unknown as ErrorEvent;
              continue;
            }
            if (frame.event === 'done' && data.outcome === 'refused') {
              throw errorFromRefusal(refusal ?? { error: 'refused', message: 'The request was refused inside its stream.', retryable: false, task_id: (data.task_id as string | null) ?? null }, result.requestId);
            }
            if (!EVENT_KINDS.has(frame.event)) continue;
            // After a reconnect, the idle snapshot only restates what the replay already ended with.
            if (resumed && state.doneSeen) {
              if (frame.event === 'done') sawDone = true;
              continue;
            }
            if (frame.event === 'done') sawDone = true;
            yield data as unknown as TaskEvent;
            if (this.stopped()) return this.endStopped();
            continue;
          }
          const seq = Number(frame.id);
          if (!Number.isFinite(seq) || (this.lastSeq !== undefined && seq <= this.lastSeq)) continue;
          this.lastSeq = seq;
          state.failures = 0;
          if (typeof data.task_id === 'string') this.id ??= data.task_id;
          if (this.init.mode === 'turn' && this.ownTurnId === undefined && typeof data.turn_id === 'string') this.ownTurnId = data.turn_id;
          if (!EVENT_KINDS.has(frame.event)) continue;
          const event = data as unknown as TaskEvent;
          yield event;
          if (this.stopped()) return this.endStopped();
          if (event.type === 'done') {
            sawDone = true;
            state.doneSeen = true;
            if (this.init.mode === 'turn' && event.turn_id === this.ownTurnId) return 'finished';
          }
        }
      }
      // A follow stream ends after a done; a turn stream only after its own done (handled above).
      if (this.init.mode === 'follow' && sawDone) return 'finished';
      return 'dropped';
    } finally {
      clearTimeout(idle);
      this.closer.signal.removeEventListener('abort', stopReading);
      this.init.options.signal?.removeEventListener('abort', stopReading);
      stopReading();
      // Reset to 0 by every new event, so this counts the connections since the last one.
      state.failures += 1;
    }
  }

  private stopped(): boolean {
    return this.closer.signal.aborted || this.init.options.signal?.aborted === true;
  }

  private endStopped(): ConnectionEnd {
    if (this.init.options.signal?.aborted) throw new QuarryAbortError({ cause: this.init.options.signal.reason });
    return 'finished';
  }

  /**
   * Opens `GET /task/{task_id}/stream`: the first time with `?after=` when `after` was given, a
   * reconnect with `Last-Event-ID` once an event was handed out. A reconnect passes no
   * `requestId`, so it gets a fresh one.
   */
  private connect(signal: AbortSignal, requestId: string | undefined): Promise<CallResult> {
    const headers: Record<string, string> = { ...this.init.options.headers };
    // An idle task answers ?after= with its snapshot and done, but a Last-Event-ID with
    // nothing new after it with 204: only a reconnect has everything already.
    const first = this.reconnectCount === 0;
    if (this.lastSeq !== undefined && !first) headers['last-event-id'] = String(this.lastSeq);
    const query = this.lastSeq !== undefined && first ? `?after=${this.lastSeq}` : '';
    return this.init.transport.send(
      {
        method: 'GET',
        path: `/task/${encodeURIComponent(this.id!)}/stream${query}`,
        auth: 'key',
        accept: 'text/event-stream',
        resendable: true,
        streaming: true,
      },
      { ...this.init.options, headers, signal, requestId },
    );
  }

  /** Fires on close() or on the caller's signal. */
  private signal(): AbortSignal {
    const user = this.init.options.signal;
    return user ? anySignal([user, this.closer.signal]) : this.closer.signal;
  }
}

interface IterationState {
  /** A stored `done` has been handed out. */
  doneSeen: boolean;
  /** Connections in a row that brought no new stored event. */
  failures: number;
}

function parse(frame: SseFrame): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(frame.data);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
