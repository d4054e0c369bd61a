/**
 * Server-sent events of a task or a group (decisions §10, §15.2): replay stored events after a sequence number,
 * then go live without a gap or a duplicate; keep-alive comments; a client that falls too far
 * behind is disconnected rather than buffered without bound, and resumes with Last-Event-ID.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { MAX_EVENT_SEQ, type EventPayload, type EventType } from '../contract/index.js';
import { QuarryError, turnError } from '../errors.js';
import type { EventFollower } from '../events/event-follower.js';
import type { EventRecord } from '../domain/records.js';

/** How long a replay waits for a client that stopped reading before giving up on it. */
const REPLAY_DRAIN_TIMEOUT_MS = 30_000;
const BACKLOG_CHECK_MS = 250;

/** One timer checks every open stream's backlog (thousands of streams need no timer each). */
const slowClients = new Set<() => void>();
setInterval(() => {
  for (const check of slowClients) check();
}, BACKLOG_CHECK_MS).unref();

export interface StreamOptions {
  events: EventFollower;
  /** Whose stored events: a task's id, or a group's (a group's events are stored under its id). */
  streamId: string;
  /** Send stored events with a sequence number above this. */
  afterSeq: number;
  pingIntervalMs: number;
  maxBufferBytes: number;
  /** Decides after each event whether the stream is over. Called per client per event: keep it cheap. */
  isLast: (event: EventRecord) => boolean;
  /**
   * When set, the replay stops at `throughSeq` (the last event the frames speak for: a turn that
   * starts meanwhile is not replayed under an idle snapshot), then the stream sends `frames` and
   * ends instead of going live. `frames` is told the seq of the last stored event this stream
   * sent (0 when none), so that no frame repeats that id.
   */
  closing?: { throughSeq: number; frames: (sentSeq: number) => string[] };
}

const wireFrames = new WeakMap<EventRecord, string>();

/** The wire form of a stored event, made once however many streams send the same event object. */
export function frame(event: EventRecord): string {
  let text = wireFrames.get(event);
  if (text === undefined) {
    text = `id: ${event.seq}\nevent: ${event.type}\ndata: ${event.data}\n\n`;
    wireFrames.set(event, text);
  }
  return text;
}

const idleAfter = new WeakMap<EventRecord, boolean>();

/** Whether the task has no running turn and nothing queued after this event (a `done` with no next turn). */
export function leavesTaskIdle(event: EventRecord): boolean {
  if (event.type !== 'done') return false;
  let idle = idleAfter.get(event);
  if (idle === undefined) {
    idle = (JSON.parse(event.data) as { next_turn_id?: string | null }).next_turn_id == null;
    idleAfter.set(event, idle);
  }
  return idle;
}

/**
 * An event that is not stored: no seq and no turn. It has no `id:` line unless `position` (a
 * stored seq above 0) is given: the idle `done` carries the task's last stored seq, so that an
 * EventSource that reconnects says where it is and gets 204 instead of the same frames again.
 */
export function unstoredFrame<T extends EventType>(type: T, taskId: string | null, at: string, payload: EventPayload<T>, position = 0): string {
  const id = position > 0 ? `id: ${position}\n` : '';
  return `${id}event: ${type}\ndata: ${JSON.stringify({ type, task_id: taskId, turn_id: null, at, ...payload })}\n\n`;
}

/**
 * The resume point: a numeric `Last-Event-ID` header, else `?after=`, else undefined (none
 * given; `0` is one: from the first event). `after` is bounded by its schema; the header is held
 * to the same range (a sequence number), else 422.
 */
export function resumeSeq(request: FastifyRequest, after: number | undefined): number | undefined {
  const header = request.headers['last-event-id'];
  if (typeof header !== 'string' || !/^\d+$/.test(header.trim())) return after;
  const seq = Number(header.trim());
  if (seq > MAX_EVENT_SEQ) {
    throw QuarryError.validation('Last-Event-ID', `Last-Event-ID must be a sequence number up to ${MAX_EVENT_SEQ}`, [
      { type: 'less_than_equal', loc: ['header', 'Last-Event-ID'], msg: `must be <= ${MAX_EVENT_SEQ}` },
    ]);
  }
  return seq;
}

/**
 * Waits for a stream's client to read what was written: true once `writable` drains, false when
 * the stream closes or `timeoutMs` passes first (a client that stopped reading).
 */
export function drainedWithin(writable: Pick<NodeJS.EventEmitter, 'once' | 'off'>, stream: ServerResponse, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => done(false), timeoutMs);
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const done = (value: boolean) => {
      clearTimeout(timer);
      writable.off('drain', onDrain);
      stream.off('close', onClose);
      resolve(value);
    };
    writable.once('drain', onDrain);
    stream.once('close', onClose);
  });
}

/** The answers that are event streams, for the request metrics (their headers bypass the reply's). */
const eventStreams = new WeakSet<ServerResponse>();

export function isEventStream(raw: ServerResponse): boolean {
  return eventStreams.has(raw);
}

export function openStream(request: FastifyRequest, reply: FastifyReply): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  eventStreams.add(raw);
  // Counted open from here until the connection closes, however the stream ends.
  raw.once('close', request.server.deps.metrics.streamOpened(request.routeOptions.url ?? 'unmatched'));
  raw.writeHead(200, {
    // What hooks set on the reply before the stream took over (the CORS headers, say); Fastify
    // keeps their names in lower case, so ours below, also lower case, replace any of them.
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    // No Connection header of our own: Node keeps an HTTP/1.1 connection open unless the client
    // asked to close it, and an HTTP/1.0 body without a length ends with the connection.
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
  });
  raw.socket?.setNoDelay(true);
  // Headers go out now, not with the first event: a client resuming at the latest event would otherwise wait.
  raw.flushHeaders();
  return raw;
}

export async function streamEvents(request: FastifyRequest, reply: FastifyReply, opts: StreamOptions): Promise<void> {
  const raw = openStream(request, reply);
  const socket = raw.socket;
  // The client is already gone: there is nothing to stream to.
  if (!socket || socket.destroyed) return;
  /** The seq of the last stored event written to this stream (0: none yet). */
  let sentSeq = 0;
  let ended = false;
  const following = new AbortController();

  const stop = () => {
    ended = true;
    following.abort();
    clearInterval(ping);
    slowClients.delete(checkBacklog);
  };
  const end = () => {
    if (ended) return;
    stop();
    if (!raw.destroyed) raw.end();
  };
  // Frames go straight to the socket as HTTP chunks, in one write each: the response's own
  // write() makes four writes per frame and defers them all to the next tick, so thousands of
  // streams would get nothing until the whole fan-out pass had run. The response still sends
  // the last chunk at end(). An HTTP/1.0 client gets no chunks: there the response writes.
  const chunked = raw.chunkedEncoding;
  const write = (text: string): boolean => {
    if (ended || raw.destroyed) return false;
    if (chunked) socket.write(`${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`);
    else raw.write(text);
    return true;
  };
  // Judged between writes, never right after one: what a reading client has not taken by the next
  // check is its backlog. A client too slow to keep up is cut off and resumes with Last-Event-ID.
  const checkBacklog = () => {
    if (ended || socket.writableLength <= opts.maxBufferBytes) return;
    request.log.info({ stream_id: opts.streamId, buffered: socket.writableLength }, 'slow SSE client disconnected');
    stop();
    raw.destroy();
  };
  slowClients.add(checkBacklog);
  /** During the replay the stream waits for the client instead (bounded), so a large history is not a reason to cut it off. */
  const drained = async () => {
    if (!socket.writableNeedDrain || ended) return;
    const ok = await drainedWithin(socket, raw, REPLAY_DRAIN_TIMEOUT_MS);
    if (!ok && !ended) {
      stop();
      raw.destroy();
    }
  };
  /** Writes the events in one write, up to and including the stream's last. */
  const send = (events: readonly EventRecord[]): void => {
    let text = '';
    let last = false;
    let seq = sentSeq;
    for (const event of events) {
      seq = event.seq;
      text += frame(event);
      if (opts.isLast(event)) {
        last = true;
        break;
      }
    }
    if (!text || !write(text)) return;
    sentSeq = seq;
    if (!last) return;
    // Ended on the next turn of the event loop: at a turn's end thousands of streams end in one
    // delivery pass, and writing everyone's last frames before ending any gets them all their
    // `done` sooner.
    stop();
    setImmediate(() => {
      if (!raw.destroyed) raw.end();
    });
  };

  const ping = setInterval(() => write(': ping\n\n'), opts.pingIntervalMs);
  raw.on('close', end);

  try {
    const events = opts.events.follow(opts.streamId, opts.afterSeq, following.signal, { through: opts.closing?.throughSeq, pace: drained });
    for await (const batch of events) send(batch);
    if (ended || !opts.closing) return;
    for (const text of opts.closing.frames(sentSeq)) write(text);
    end();
  } catch (err) {
    if (ended) return;
    request.log.warn({ err, task_id: opts.streamId }, 'event replay failed');
    const failure = turnError('service_unavailable', 'Events cannot be read right now: reconnect with Last-Event-ID.');
    write(unstoredFrame('error', opts.streamId, new Date().toISOString(), failure));
    end();
  }
}

/** A stream that only carries frames decided before it opened (a refusal), then ends. */
export function sendFramesAndEnd(request: FastifyRequest, reply: FastifyReply, frames: string[]): void {
  const raw = openStream(request, reply);
  for (const text of frames) raw.write(text);
  raw.end();
}
