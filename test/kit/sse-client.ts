/**
 * A small server-sent-events reader for the tests (and the benchmarks' load generator), over
 * node:http so that a test controls the socket: it can read as events arrive, disconnect
 * mid-stream, or see how a stream ended.
 * Parses `id:`, `event:`, `data:` (several data lines join with "\n") and comment lines.
 */
import http from 'node:http';
import net from 'node:net';
import { SseDecoder } from '../../packages/client/src/internal/sse-decoder.js';

export interface SseEvent {
  /** The `id:` field, or undefined when the event had none. */
  id: string | undefined;
  /** The `event:` field ("message" when absent, as EventSource does). */
  event: string;
  data: string;
  /** `data` parsed as JSON, or undefined when it is not JSON. */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * Whether an event is a stored one: an `id:` and its seq in the data. An unstored frame may carry
 * an `id:` too (an idle task's `done` carries the last stored seq, so a client keeps its place).
 */
export function isStored(event: SseEvent): boolean {
  return event.id !== undefined && typeof event.json?.seq === 'number';
}

/** Events and comment lines of an SSE text stream, read with the client package's decoder: a test sees each frame Quarry sends. */
export class SseParser {
  private readonly decoder: SseDecoder;

  /** `parseJson: false` leaves `json` undefined (a load generator reading thousands of streams reads `data` itself). */
  constructor(
    private readonly onEvent: (event: SseEvent) => void,
    onComment: (text: string) => void = () => {},
    private readonly opts: { parseJson?: boolean } = {},
  ) {
    this.decoder = new SseDecoder(onComment);
  }

  push(chunk: string): void {
    for (const frame of this.decoder.push(chunk)) this.onEvent({ ...frame, json: this.opts.parseJson === false ? undefined : jsonOrUndefined(frame.data) });
  }
}

function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Events received so far, in order of arrival. */
  events: SseEvent[];
  /** Comment lines received so far (the text after the colon, e.g. "ping"). */
  comments: string[];
  /** For a response that is not an event stream: its body, parsed as JSON when it is JSON. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Whether the response has ended (by the server, or because the test closed it). */
  readonly ended: boolean;
  /** Whether the server ended the response properly (not cut off, not closed by the test). */
  readonly completed: boolean;
  /** Resolves with the first event (already received or still to come) that matches; rejects after timeoutMs or when the stream ends first. */
  waitFor(predicate: (event: SseEvent) => boolean, timeoutMs?: number, what?: string): Promise<SseEvent>;
  /** Resolves once `n` comment lines have arrived. */
  waitForComments(n: number, timeoutMs?: number): Promise<void>;
  /** Resolves when the response ends; rejects after timeoutMs. */
  finished(timeoutMs?: number): Promise<void>;
  /** Drops the connection (a client going away mid-stream). */
  close(): void;
}

export interface SseRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
  /** Sent as X-API-Key unless null. */
  key?: string | null;
}

/** Opens a request and resolves once the response head has arrived. */
export function openSse(baseUrl: string, path: string, opts: SseRequest = {}): Promise<SseStream> {
  const url = new URL(path, baseUrl);
  const headers: Record<string, string> = { accept: 'text/event-stream', ...opts.headers };
  if (opts.key) headers['x-api-key'] = opts.key;
  let payload: string | undefined;
  if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers, agent: false });
    req.once('error', reject);
    req.once('response', (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      const listeners = new Set<() => void>();
      let ended = false;
      let completed = false;
      const notify = () => {
        for (const l of [...listeners]) l();
      };
      const isStream = /^text\/event-stream\b/.test(res.headers['content-type'] ?? '');
      let raw = '';
      const parser = new SseParser(
        (e) => {
          events.push(e);
          notify();
        },
        (c) => {
          comments.push(c);
          notify();
        },
      );
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (isStream) parser.push(chunk);
        else raw += chunk;
      });
      const finish = (ok: boolean) => {
        if (ended) return;
        ended = true;
        completed = ok;
        if (!isStream) {
          try {
            stream.body = raw ? JSON.parse(raw) : undefined;
          } catch {
            stream.body = raw;
          }
        }
        notify();
      };
      res.once('end', () => finish(true));
      res.once('aborted', () => finish(false));
      res.once('error', () => finish(false));
      res.once('close', () => finish(res.complete));
      req.removeListener('error', reject);
      req.on('error', () => finish(false));

      const wait = <T>(check: () => T | undefined, timeoutMs: number, describe: () => string): Promise<T> =>
        new Promise<T>((ok, fail) => {
          const attempt = () => {
            let value: T | undefined;
            try {
              value = check();
            } catch (err) {
              done();
              fail(err);
              return;
            }
            if (value !== undefined) {
              done();
              ok(value);
            }
          };
          const timer = setTimeout(() => {
            done();
            fail(new Error(`timed out after ${timeoutMs} ms waiting for ${describe()}; got ${events.length} events: ${events.map((e) => `${e.id ?? '-'}:${e.event}`).join(' ')}`));
          }, timeoutMs);
          const done = () => {
            clearTimeout(timer);
            listeners.delete(attempt);
          };
          listeners.add(attempt);
          attempt();
        });

      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        comments,
        body: undefined,
        get ended() {
          return ended;
        },
        get completed() {
          return completed;
        },
        waitFor(predicate, timeoutMs = 10_000, what = 'a matching event') {
          return wait(() => {
            const found = events.find(predicate);
            if (found) return found;
            if (ended) throw new Error(`the stream ended before ${what}; got ${events.length} events: ${events.map((e) => `${e.id ?? '-'}:${e.event}`).join(' ')}`);
            return undefined;
          }, timeoutMs, () => what);
        },
        waitForComments(n, timeoutMs = 10_000) {
          return wait(() => {
            if (comments.length >= n) return true;
            if (ended) throw new Error(`the stream ended after ${comments.length} comments, before ${n}`);
            return undefined;
          }, timeoutMs, () => `${n} comment lines (got ${comments.length})`).then(() => undefined);
        },
        finished(timeoutMs = 10_000) {
          return wait(() => (ended ? true : undefined), timeoutMs, () => 'the end of the stream').then(() => undefined);
        },
        close() {
          res.destroy();
          req.destroy();
          finish(false);
        },
      };
      resolve(stream);
    });
    req.end(payload);
  });
}

/** Opens a stream and reads it to its end. */
export async function readSse(baseUrl: string, path: string, opts: SseRequest = {}, timeoutMs = 15_000): Promise<SseStream> {
  const stream = await openSse(baseUrl, path, opts);
  await stream.finished(timeoutMs);
  return stream;
}

/**
 * A client that sends a GET and then never reads: the socket is left paused, so the server's
 * writes pile up in the kernel and then in the server's own buffer. `drain()` later reads
 * whatever the server left before it closed (or, while the connection stays open, until
 * `timeoutMs`).
 */
export interface StalledClient {
  socket: net.Socket;
  /** Resumes reading; resolves with every byte received and whether the server closed the connection. */
  drain(timeoutMs?: number): Promise<{ bytes: Buffer; closedByServer: boolean }>;
}

export function stalledGet(baseUrl: string, path: string, headers: Record<string, string>, opts: { httpVersion?: '1.0' | '1.1' } = {}): Promise<StalledClient> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port) });
    // Paused before it connects, so nothing is read until drain().
    socket.pause();
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      const lines = [`GET ${url.pathname}${url.search} HTTP/${opts.httpVersion ?? '1.1'}`, `Host: ${url.host}`, 'Accept: text/event-stream', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      resolve({
        socket,
        drain(timeoutMs = 10_000) {
          return new Promise((ok) => {
            const chunks: Buffer[] = [];
            let settled = false;
            const settle = (closedByServer: boolean) => {
              if (settled) return;
              settled = true;
              clearTimeout(timer);
              socket.destroy();
              ok({ bytes: Buffer.concat(chunks), closedByServer });
            };
            const timer = setTimeout(() => settle(false), timeoutMs);
            socket.on('data', (c: Buffer) => chunks.push(c));
            socket.once('end', () => settle(true));
            socket.once('error', () => settle(true));
            socket.once('close', () => settle(true));
            socket.resume();
          });
        },
      });
    });
  });
}

/**
 * Splits raw HTTP/1.1 response bytes into status, head and body, undoing chunked transfer
 * encoding. `complete` says whether the body ended properly (the last chunk arrived); a cut-off
 * body keeps what arrived of it.
 */
export function parseRawResponse(bytes: Buffer): { status: number; head: string; body: string; complete: boolean } {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return { status: 0, head: bytes.toString('latin1'), body: '', complete: false };
  const head = bytes.subarray(0, headEnd).toString('latin1');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
  let rest = bytes.subarray(headEnd + 4);
  if (!/^transfer-encoding:\s*chunked\s*$/im.test(head)) return { status, head, body: rest.toString('utf8'), complete: false };
  const parts: Buffer[] = [];
  let complete = false;
  while (rest.length > 0) {
    const lineEnd = rest.indexOf('\r\n');
    if (lineEnd < 0) break;
    const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size)) break;
    if (size === 0) {
      complete = true;
      break;
    }
    const data = rest.subarray(lineEnd + 2, lineEnd + 2 + size);
    parts.push(data);
    if (data.length < size) break;
    rest = rest.subarray(lineEnd + 2 + size + 2);
  }
  return { status, head, body: Buffer.concat(parts).toString('utf8'), complete };
}

/** Parses a whole SSE body (events that are cut off at the end are left out). */
export function parseSseText(text: string): { events: SseEvent[]; comments: string[] } {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const parser = new SseParser((e) => events.push(e), (c) => comments.push(c));
  parser.push(text);
  return { events, comments };
}
