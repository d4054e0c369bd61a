/**
 * The machinery behind TaskStream and GroupStream: a server-sent-events endpoint read as an async
 * iterator of typed events that survives dropped connections. A connection that drops (or goes
 * silent past the idle timeout) is reopened with `Last-Event-ID` after a backoff, and the server
 * replays what was missed; stored events (an `id:`, their sequence number, and `seq` in the data) are handed
 * out once each, in sequence order. What differs between the streams comes in a StreamSpec: which
 * kinds are handed out, what unstored frames mean, when the stream is over, how it is reached.
 */
import { ConnectionError, QuarryAbortError, QuarryError } from '../errors.js';
import type { RequestOptions } from '../request-options.js';
import { anySignal } from './any-signal.js';
import { backoffMs, sleep, type BackoffOptions } from './retry.js';
import { SseDecoder, type SseFrame } from './sse-decoder.js';
import type { CallResult, Transport } from './transport.js';

/** What every resumable stream is built with. */
export interface StreamSettings {
  transport: Transport;
  options: RequestOptions;
  /** A connection that delivers nothing (not even a ping) for this long is treated as dropped. */
  idleTimeoutMs: number;
  /** Reconnects in a row that bring no new event before the stream gives up. */
  maxReconnects: number;
  backoff: BackoffOptions;
}

/** What one stream does its own way. */
export interface StreamSpec<E> {
  /** The class the caller holds, named in the error a second iteration throws. */
  name: string;
  /** The event kinds handed out; a new stored frame of another kind is skipped, yet counts as news. */
  kinds: ReadonlySet<string>;
  /** Resume after this sequence number (0 or less: from the first event, an idle task's too; none: the server's default). */
  after: number | undefined;
  /** The stream's path below the base URL, asked for on every connection. */
  path(): string;
  /**
   * How the first connection resumes after a known event: by `?after=` or by `Last-Event-ID`
   * (reconnects always use `Last-Event-ID`). The two differ in what the server answers when
   * nothing came after that event.
   */
  firstResumesBy: 'after' | 'last-event-id';
  /**
   * Asked after a drop, before reconnecting: the id the stream follows (named in the error after
   * too many drops in a row), or throws where the stream cannot be resumed.
   */
  resumable(requestId: string): string;
  /** Sees every new stored event, handed out or not. */
  stored?(data: Record<string, unknown>): void;
  /** The rules for one connection (`resumed`: it is a reconnect), as they track what it brought. */
  connection(requestId: string, resumed: boolean): ConnectionRules<E>;
}

/** How one connection's frames are judged, beyond sequence numbers. */
export interface ConnectionRules<E> {
  /**
   * A frame without a seq, which is not stored and so never replayed: whether to hand it out (if
   * its kind is handed out). May throw, for what the frame reports.
   */
  unstored?(kind: string, data: Record<string, unknown>): boolean;
  /** A stored event was handed out: whether the stream is over now. */
  afterStored(event: E): boolean;
  /** The server ended the connection: whether the stream is over (otherwise it dropped). */
  ended(): boolean;
}

/** What one connection ended with. */
type ConnectionEnd = 'finished' | 'dropped';

export class ResumableStream<E extends { type: string }> implements AsyncIterable<E> {
  private readonly closer = new AbortController();
  private first: Promise<CallResult> | undefined;
  private started = false;
  private lastSeq: number | undefined;
  /** `after` was given as 0 (or less): until an event comes, the stream resumes from the first (an idle task's too). */
  private readonly fromStart: boolean;
  private reconnectCount = 0;
  /** Connections in a row that brought no new stored event. */
  private drops = 0;

  constructor(
    private readonly settings: StreamSettings,
    private readonly spec: StreamSpec<E>,
  ) {
    this.lastSeq = spec.after !== undefined && spec.after > 0 ? spec.after : undefined;
    this.fromStart = spec.after !== undefined && spec.after <= 0;
  }

  /** Sequence number of the last stored event handed out. */
  get lastEventId(): number | undefined {
    return this.lastSeq;
  }

  get reconnects(): number {
    return this.reconnectCount;
  }

  /**
   * Sends the first request, unless it went already, and answers it: `send` opens the stream its
   * own way (a start or message request), else it is the same GET a reconnect sends. Left to
   * iteration, the first request goes out when iteration begins.
   */
  start(send?: (signal: AbortSignal) => Promise<CallResult>): Promise<CallResult> {
    if (!this.first) {
      this.first = send ? send(this.signal()) : this.connect();
      // Failures surface when the stream is read (or awaited by the caller), never as unhandled.
      this.first.catch(() => undefined);
    }
    return this.first;
  }

  close(): void {
    this.closer.abort();
  }

  /** Reads the stream to its end; answers its last `done` (undefined if none came). */
  async finalDone(): Promise<Extract<E, { type: 'done' }> | undefined> {
    let last: Extract<E, { type: 'done' }> | undefined;
    for await (const event of this) if (event.type === 'done') last = event as Extract<E, { type: 'done' }>;
    return last;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<E, void, undefined> {
    if (this.started) throw new Error(`A ${this.spec.name} can be iterated only once.`);
    this.started = true;
    let pending = this.start();
    for (;;) {
      let result: CallResult;
      try {
        result = await pending;
      } catch (err) {
        if (this.closer.signal.aborted && !this.settings.options.signal?.aborted) return;
        throw err;
      }
      if ((yield* this.read(result)) === 'finished') return;
      // Dropped: come back with Last-Event-ID, after a backoff when drops keep bringing nothing.
      const id = this.spec.resumable(result.requestId);
      this.drops += 1;
      if (this.drops > this.settings.maxReconnects) {
        throw new ConnectionError(`The event stream of ${id} dropped ${this.drops} times in a row without delivering an event.`, { request_id: result.requestId });
      }
      await sleep(backoffMs(this.drops - 1, this.settings.backoff), this.signal(), result.requestId).catch((err: unknown) => {
        if (!(err instanceof QuarryAbortError) || this.settings.options.signal?.aborted) throw err;
      });
      if (this.closer.signal.aborted) return;
      this.reconnectCount += 1;
      pending = this.connect();
    }
  }

  /** Reads one connection; yields its new events; tells whether the stream is over or dropped. */
  private async *read(result: CallResult): AsyncGenerator<E, ConnectionEnd> {
    // A resume with nothing new after its Last-Event-ID: everything was handed out.
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
    this.settings.options.signal?.addEventListener('abort', stopReading, { once: true });
    const rules = this.spec.connection(result.requestId, this.reconnectCount > 0);
    const text = new TextDecoder();
    const decoder = new SseDecoder();
    let silent = false;
    let idle: ReturnType<typeof setTimeout> | undefined;
    try {
      for (;;) {
        // The idle clock runs only while waiting for the server, never while the caller holds an event.
        idle = setTimeout(() => {
          silent = true;
          stopReading();
        }, this.settings.idleTimeoutMs);
        let chunk: Awaited<ReturnType<typeof reader.read>> | undefined;
        try {
          chunk = await reader.read();
        } catch {
          chunk = undefined; // the connection failed
        } finally {
          clearTimeout(idle);
        }
        if (this.stopped()) return this.endStopped();
        if (!chunk || silent) return 'dropped';
        if (chunk.done) return rules.ended() ? 'finished' : 'dropped';
        for (const frame of decoder.push(text.decode(chunk.value, { stream: true }))) {
          const taken = this.take(frame, rules);
          if (!taken) continue;
          yield taken.event;
          if (this.stopped()) return this.endStopped();
          if (taken.stored && rules.afterStored(taken.event)) return 'finished';
        }
      }
    } finally {
      clearTimeout(idle);
      this.closer.signal.removeEventListener('abort', stopReading);
      this.settings.options.signal?.removeEventListener('abort', stopReading);
      stopReading();
    }
  }

  /**
   * The event a frame hands out, if any, and whether it is stored. A stored frame (an `id:`, and
   * its seq in the data) is new when its sequence number is past the last one seen (a
   * reconnect's replay may repeat events); a new one moves `lastEventId` on and resets the drops
   * in a row, whether or not it is handed out. An unstored frame may carry an `id:` too (an idle
   * task's `done`: the last stored seq it speaks for), which moves `lastEventId` on and nothing else.
   */
  private take(frame: SseFrame, rules: ConnectionRules<E>): { event: E; stored: boolean } | undefined {
    const data = parse(frame);
    if (!data) return undefined;
    const seq = frame.id === undefined ? NaN : Number(frame.id);
    const stored = Number.isFinite(seq) && typeof data.seq === 'number';
    if (!stored) {
      if (Number.isFinite(seq) && (this.lastSeq === undefined || seq > this.lastSeq)) this.lastSeq = seq;
      if (!rules.unstored?.(frame.event, data)) return undefined;
    } else {
      if (this.lastSeq !== undefined && seq <= this.lastSeq) return undefined;
      this.lastSeq = seq;
      this.drops = 0;
      this.spec.stored?.(data);
    }
    return this.spec.kinds.has(frame.event) ? { event: data as unknown as E, stored } : undefined;
  }

  private stopped(): boolean {
    return this.closer.signal.aborted || this.settings.options.signal?.aborted === true;
  }

  private endStopped(): ConnectionEnd {
    if (this.settings.options.signal?.aborted) throw new QuarryAbortError({ cause: this.settings.options.signal.reason });
    return 'finished';
  }

  /**
   * Opens a connection to the stream's path, resuming after the last event seen (if any) as
   * `firstResumesBy` says the first time, with `Last-Event-ID` after that. Only the first
   * connection carries the caller's `requestId`; a reconnect gets a fresh one.
   */
  private connect(): Promise<CallResult> {
    const first = this.reconnectCount === 0;
    const byQuery = first && this.spec.firstResumesBy === 'after';
    const headers: Record<string, string> = { ...this.settings.options.headers };
    const resumeAt = this.lastSeq ?? (this.fromStart ? 0 : undefined);
    if (resumeAt !== undefined && !byQuery) headers['last-event-id'] = String(resumeAt);
    const query = resumeAt !== undefined && byQuery ? `?after=${resumeAt}` : '';
    return this.settings.transport.send(
      { method: 'GET', path: `${this.spec.path()}${query}`, auth: 'key', accept: 'text/event-stream', resendable: true, streaming: true },
      { ...this.settings.options, headers, signal: this.signal(), requestId: first ? this.settings.options.requestId : undefined },
    );
  }

  /** Fires on close() or on the caller's signal. */
  private signal(): AbortSignal {
    const user = this.settings.options.signal;
    return user ? anySignal([user, this.closer.signal]) : this.closer.signal;
  }
}

function parse(frame: SseFrame): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(frame.data);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
