/**
 * What the fake model servers share, whatever API they speak: one POST route, replies scripted
 * in advance (a FIFO queue) or computed by a responder, every request recorded, delays and
 * hangs that end when the client leaves, and answers as one JSON body or as server-sent events.
 * Each fake supplies its wire format as a ModelProtocol.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { GAPS_HEADING } from '../../src/agent/output-check.js';
import { startLoopbackServer } from './loopback-server.js';

/** The parts of a scripted reply that mean the same in every wire format. */
export interface FakeModelReply {
  text?: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer; the request ends only when the client gives up. */
  hang?: boolean;
  /**
   * With `status` or `errorMessage`, answer the API's error body with that status (default 500)
   * instead of an answer.
   */
  status?: number;
  errorMessage?: string;
  /** Pause between stream events (streaming requests only). */
  chunkDelayMs?: number;
  /** Answer with one JSON body even when a stream was asked for, as servers that ignore `stream: true` do. */
  ignoreStream?: boolean;
  /** Extra headers on the answer, error answers included (e.g. `retry-after`). */
  headers?: Record<string, string>;
  /**
   * Answer 200 with exactly this body (a malformed answer: not JSON, `choices: []`, …) instead
   * of anything the protocol would make; `contentType` default `application/json`.
   */
  rawBody?: string;
  contentType?: string;
  /** Streaming only: send this many events, then fall silent until the client leaves. */
  hangAfterEvents?: number;
  /** Streaming only: send this many events (`chunkDelayMs` apart), then drop the connection. */
  cutAfterEvents?: number;
}

/** The request body as the client sent it. */
export interface FakeModelRequestBody {
  model?: string;
  tool_choice?: unknown;
  stream?: boolean;
  [field: string]: unknown;
}

export interface RecordedModelRequest<Body> {
  path: string;
  headers: IncomingHttpHeaders;
  body: Body;
}

/** `index` is the request's position in `requests`. */
export type FakeModelResponder<Reply, Body> = (body: Body, index: number) => Reply | Promise<Reply>;

/** A provider's rate limit as the fake keeps it: at most `requests` in any `windowMs` (a sliding window). */
export interface FakeRateLimit {
  requests: number;
  windowMs: number;
}

/** Where a fake's rate limit stands as an answer leaves: what the API's headers say. */
export interface RateLimitStanding {
  /** The limit as the API states it: requests a minute. */
  perMinute: number;
  remaining: number;
  /** When the window ends: ms from now, and the time. */
  resetMs: number;
  resetAt: Date;
}

export interface FakeModelServer<Reply, Body> {
  readonly url: string;
  /**
   * From now on, at most `requests` requests a window are answered; the others get the API's
   * 429 with Retry-After, and every answer carries the API's rate-limit headers. null: no limit.
   */
  limitRate(limit: FakeRateLimit | null): void;
  /** Requests refused with a 429 by limitRate (not in `requests`). */
  rateLimited(): number;
  /** Every well-formed request, in order of arrival. */
  readonly requests: RecordedModelRequest<Body>[];
  /** Appends replies to the queue; each request takes the first one. */
  script(...replies: Reply[]): void;
  /** When set, answers every request instead of the queue. */
  setResponder(responder: FakeModelResponder<Reply, Body> | null): void;
  /**
   * From now on, the engine's message listing what the outputs lack (sent once before a turn
   * ends) is recorded and answered like any request. Until then it is answered with an empty
   * reply of no tokens and not recorded, so scripts of everything else need not know of it.
   */
  recordChecks(): void;
  /** Requests being answered right now (a hanging request counts until the client leaves). */
  pending(): number;
  /** The most requests that were being answered at once. */
  peakPending(): number;
  /** Resolves once at least `n` requests have been recorded; rejects after `timeoutMs`. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Stops the server and drops open connections, hanging requests included. */
  close(): Promise<void>;
}

/** One API's side of a fake model server. */
export interface ModelProtocol<Reply extends FakeModelReply, Body extends FakeModelRequestBody> {
  /** Names the fake in errors, e.g. `OpenAI`. */
  name: string;
  /** The one route, served for POST. */
  path: string;
  /** The API's error body; `reply` is the scripted reply that asked for it, if one did. */
  errorBody(status: number, message: string, reply?: Reply): object;
  /** A request the real API refuses, as [status, message]: checked before the request is recorded. */
  refusal?(headers: IncomingHttpHeaders, body: Body): [number, string] | undefined;
  /** Whether the reply is answered with the error body. Default: when it has a status or an error message. */
  answersWithError?(reply: Reply): boolean;
  /** The answer to the engine's check of the outputs while it is not recorded: no text, no tokens. */
  checkAnswer: Reply;
  /** The API's rate-limit headers on every answer (OpenAI's `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`). */
  rateLimitHeaders(standing: RateLimitStanding): Record<string, string>;
  /** The answer to a request that did not ask for a stream. */
  json(reply: Reply, body: Body, index: number): object;
  /** The server-sent events, each a complete event text, of a streamed answer. */
  events(reply: Reply, body: Body, index: number): string[];
}

export async function startFakeModelServer<Reply extends FakeModelReply, Body extends FakeModelRequestBody>(
  protocol: ModelProtocol<Reply, Body>,
): Promise<FakeModelServer<Reply, Body>> {
  const requests: RecordedModelRequest<Body>[] = [];
  const queue: Reply[] = [];
  let responder: FakeModelResponder<Reply, Body> | null = null;
  let active = 0;
  let peak = 0;
  let answerChecks = true;
  let rateLimit: FakeRateLimit | null = null;
  /** Arrival times of the requests answered within the last window (a sliding window, as the providers' buckets refill). */
  let admitted: number[] = [];
  let refused = 0;
  /** Counts a request against the rate limit: the headers to answer with, whether it is refused, and when a place frees. */
  const countRequest = (): { headers: Record<string, string>; refuse: boolean; resetMs: number } | undefined => {
    if (!rateLimit) return undefined;
    const now = Date.now();
    const { requests, windowMs } = rateLimit;
    admitted = admitted.filter((at) => at > now - windowMs);
    const refuse = admitted.length >= requests;
    if (!refuse) admitted.push(now);
    // Until the oldest leaves the window: the next place.
    const resetMs = admitted[0]! + windowMs - now;
    return {
      refuse, resetMs,
      headers: protocol.rateLimitHeaders({ perMinute: Math.round((requests * 60_000) / windowMs), remaining: requests - admitted.length, resetMs, resetAt: new Date(now + resetMs) }),
    };
  };
  const waiters = new Set<{ n: number; resolve: () => void }>();
  const sendError = (res: ServerResponse, status: number, message: string, reply?: Reply) => sendJson(res, status, protocol.errorBody(status, message, reply));
  const answersWithError = protocol.answersWithError ?? ((reply: Reply) => reply.status !== undefined || reply.errorMessage !== undefined);

  async function handle(req: IncomingMessage, res: ServerResponse, gone: AbortSignal): Promise<void> {
    const path = req.url?.split('?')[0];
    if (req.method !== 'POST' || path !== protocol.path) {
      req.resume();
      return sendError(res, 404, `No route ${req.method} ${req.url} (the fake serves POST ${protocol.path}).`);
    }
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return; // the client left while sending
    }
    let body: Body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
    } catch {
      return sendError(res, 400, 'The body is not valid JSON.');
    }
    const refusal = protocol.refusal?.(req.headers, body);
    if (refusal) return sendError(res, ...refusal);
    const limited = countRequest();
    if (limited) for (const [name, value] of Object.entries(limited.headers)) res.setHeader(name, value);
    if (limited?.refuse) {
      refused++;
      // Retry-After in whole seconds, as both APIs send it.
      res.setHeader('retry-after', String(Math.max(1, Math.ceil(limited.resetMs / 1000))));
      return sendError(res, 429, 'Rate limit reached for requests. Please try again later.');
    }
    const check = answerChecks && asksOutputCheck(body);
    const index = check ? requests.length : requests.push({ path, headers: req.headers, body }) - 1;
    for (const waiter of waiters) {
      if (requests.length >= waiter.n) {
        waiters.delete(waiter);
        waiter.resolve();
      }
    }

    let reply: Reply;
    try {
      // Every field of a reply is optional, so these two are replies of any protocol.
      if (check) reply = protocol.checkAnswer;
      else reply = responder ? await responder(body, index) : (queue.shift() ?? ({ text: 'Done.' } as Reply));
    } catch (err) {
      reply = { status: 500, errorMessage: `The fake responder threw: ${String(err)}` } as Reply;
    }

    if (reply.delayMs) await pause(reply.delayMs, gone);
    if (reply.hang && !gone.aborted) await once(gone, 'abort');
    if (gone.aborted) return;

    for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
    if (answersWithError(reply)) {
      const status = reply.status ?? 500;
      return sendError(res, status, reply.errorMessage ?? `Fake error ${status}.`, reply);
    }
    if (reply.rawBody !== undefined) {
      res.writeHead(200, { 'content-type': reply.contentType ?? 'application/json' });
      res.end(reply.rawBody);
      return;
    }
    if (body.stream !== true || reply.ignoreStream) return sendJson(res, 200, protocol.json(reply, body, index));

    const events = protocol.events(reply, body, index);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (reply.hangAfterEvents !== undefined) {
      res.write(events.slice(0, reply.hangAfterEvents).join(''));
      if (!gone.aborted) await once(gone, 'abort');
      return;
    }
    if (!reply.chunkDelayMs && reply.cutAfterEvents === undefined) {
      res.end(events.join('')); // one write: the benchmarks send thousands of requests
      return;
    }
    for (const [i, event] of events.entries()) {
      if (i > 0 && reply.chunkDelayMs) await pause(reply.chunkDelayMs, gone);
      if (gone.aborted) return;
      if (i === reply.cutAfterEvents) return void res.destroy();
      res.write(event);
    }
    res.end();
  }

  const server = await startLoopbackServer((req, res) => {
    active += 1;
    peak = Math.max(peak, active);
    const gone = new AbortController();
    // Fires when the answer is complete or the client went away; it ends any delay or hang.
    res.once('close', () => {
      active -= 1;
      gone.abort();
    });
    handle(req, res, gone.signal).catch((err: unknown) => {
      // A reply the fake cannot encode (say, circular arguments) fails its request, not the process.
      if (res.headersSent) res.destroy();
      else sendError(res, 500, `The fake server failed: ${String(err)}`);
    });
  });

  return {
    url: server.url,
    requests,
    limitRate(limit) {
      rateLimit = limit;
      admitted = [];
    },
    rateLimited: () => refused,
    script: (...replies) => void queue.push(...replies),
    setResponder: (fn) => void (responder = fn),
    recordChecks: () => void (answerChecks = false),
    pending: () => active,
    peakPending: () => peak,
    waitForRequests(n, timeoutMs = 5000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const waiter = {
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`The fake ${protocol.name} server got ${requests.length} requests within ${timeoutMs} ms, not ${n}.`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    close: server.close,
  };
}

/** Cuts text into at most `parts` pieces, never inside a character. */
export function split(text: string, parts: number): string[] {
  const chars = Array.from(text);
  const size = Math.ceil(chars.length / parts);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(''));
  return pieces;
}

function sendJson(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Waits `ms`, or less if the signal fires first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}

/** Whether the request's last message is the engine's check of the outputs (src/agent/output-check.ts). */
function asksOutputCheck(body: FakeModelRequestBody): boolean {
  const last = (body.messages as { role?: string; content?: unknown }[] | undefined)?.at(-1);
  return last?.role === 'user' && JSON.stringify(last.content ?? '').includes(GAPS_HEADING);
}
