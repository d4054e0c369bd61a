/**
 * A fake OpenAI-compatible chat-completions server for the tests and the benchmarks. Replies
 * are scripted in advance (a FIFO queue) or computed by a responder; every request is recorded.
 * Answers honour the request's `stream` flag: real server-sent events, or one JSON completion.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface FakeToolCall {
  /** Default `call_<request index>_<position>`. */
  id?: string;
  name: string;
  /** An object is JSON-encoded; a string is sent as is, so malformed JSON can be tested. */
  arguments: unknown;
}

export interface FakeReply {
  text?: string;
  toolCalls?: FakeToolCall[];
  /** Default: about four characters per token of the request's messages and of the answer. */
  usage?: { prompt_tokens: number; completion_tokens: number };
  /** Wait this long before answering. */
  delayMs?: number;
  /** Never answer; the request ends only when the client gives up. */
  hang?: boolean;
  /**
   * With `status` or `errorMessage`, answer `{error: {message, type}}` with that status
   * (default 500) instead of a completion.
   */
  status?: number;
  errorMessage?: string;
  /** Pause between stream chunks (streaming requests only). */
  chunkDelayMs?: number;
}

/** The request body as the client sent it; the fields a chat-completions client sends are typed. */
export interface FakeRequestBody {
  model?: string;
  messages?: Record<string, unknown>[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  [field: string]: unknown;
}

export interface RecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: FakeRequestBody;
}

/** `index` is the request's position in `requests`. */
export type FakeResponder = (body: FakeRequestBody, index: number) => FakeReply | Promise<FakeReply>;

export interface FakeOpenAI {
  /** Base URL ending in `/v1`. */
  readonly url: string;
  /** Every well-formed chat-completions request, in order of arrival. */
  readonly requests: RecordedRequest[];
  /** Appends replies to the queue; each request takes the first one. */
  script(...replies: FakeReply[]): void;
  /** When set, answers every request instead of the queue. */
  setResponder(responder: FakeResponder | null): void;
  /** Requests being answered right now (a hanging request counts until the client leaves). */
  pending(): number;
  /** Resolves once at least `n` requests have been recorded; rejects after `timeoutMs`. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Stops the server and drops open connections, hanging requests included. */
  close(): Promise<void>;
}

const CHAT_PATH = '/v1/chat/completions';
const DEFAULT_REPLY: FakeReply = { text: 'Done.' };

/** A reply resolved into exactly what is sent. */
interface Completion {
  id: string;
  created: number;
  model: string;
  text: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  finishReason: 'stop' | 'tool_calls';
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: RecordedRequest[] = [];
  const queue: FakeReply[] = [];
  let responder: FakeResponder | null = null;
  let active = 0;
  const waiters = new Set<{ n: number; resolve: () => void }>();

  async function handle(req: IncomingMessage, res: ServerResponse, gone: AbortSignal): Promise<void> {
    const path = req.url?.split('?')[0];
    if (req.method !== 'POST' || path !== CHAT_PATH) {
      req.resume();
      return sendError(res, 404, `No route ${req.method} ${req.url} (the fake serves POST ${CHAT_PATH}).`);
    }
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return; // the client left while sending
    }
    let body: FakeRequestBody;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as FakeRequestBody;
    } catch {
      return sendError(res, 400, 'The body is not valid JSON.');
    }
    const index = requests.push({ path, headers: req.headers, body }) - 1;
    for (const waiter of waiters) {
      if (requests.length >= waiter.n) {
        waiters.delete(waiter);
        waiter.resolve();
      }
    }

    let reply: FakeReply;
    try {
      reply = responder ? await responder(body, index) : (queue.shift() ?? DEFAULT_REPLY);
    } catch (err) {
      reply = { status: 500, errorMessage: `The fake responder threw: ${String(err)}` };
    }

    if (reply.delayMs) await pause(reply.delayMs, gone);
    if (reply.hang && !gone.aborted) await once(gone, 'abort');
    if (gone.aborted) return;

    if (reply.status !== undefined || reply.errorMessage !== undefined) {
      const status = reply.status ?? 500;
      return sendError(res, status, reply.errorMessage ?? `Fake error ${status}.`);
    }
    const completion = toCompletion(reply, body, index);
    if (body.stream !== true) return sendJson(res, 200, completionObject(completion));

    const events = streamEvents(completion, body.stream_options?.include_usage === true);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (!reply.chunkDelayMs) {
      res.end(events.join('')); // one write: the benchmarks send thousands of requests
      return;
    }
    for (const [i, event] of events.entries()) {
      if (i > 0) await pause(reply.chunkDelayMs, gone);
      if (gone.aborted) return;
      res.write(event);
    }
    res.end();
  }

  const server = createServer((req, res) => {
    active += 1;
    // Fires when the answer is complete or the client went away; it ends any delay or hang.
    const gone = new AbortController();
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...replies) => void queue.push(...replies),
    setResponder: (fn) => void (responder = fn),
    pending: () => active,
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
          reject(new Error(`The fake OpenAI server got ${requests.length} requests within ${timeoutMs} ms, not ${n}.`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    close() {
      closed ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

function toCompletion(reply: FakeReply, body: FakeRequestBody, index: number): Completion {
  const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${index}_${i}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : (JSON.stringify(call.arguments) ?? ''),
  }));
  const outputChars = toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, reply.text?.length ?? 0);
  const usage = reply.usage ?? {
    prompt_tokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4),
    completion_tokens: Math.ceil(outputChars / 4),
  };
  return {
    id: `chatcmpl-fake-${index}`,
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? 'fake-model',
    // Like OpenAI: no text next to tool calls is `null`.
    text: reply.text ?? (toolCalls.length > 0 ? null : ''),
    toolCalls,
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
  };
}

function completionObject(c: Completion): object {
  const message: Record<string, unknown> = { role: 'assistant', content: c.text };
  if (c.toolCalls.length > 0) {
    message.tool_calls = c.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: c.id,
    object: 'chat.completion',
    created: c.created,
    model: c.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: c.finishReason }],
    usage: c.usage,
  };
}

/**
 * The SSE events OpenAI would send: a role chunk, the text in several deltas, each tool call
 * as a head (id, name) followed by argument pieces, a finish chunk, the usage chunk when asked
 * for, then `[DONE]`.
 */
function streamEvents(c: Completion, includeUsage: boolean): string[] {
  const head = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model };
  // With include_usage, OpenAI sends `usage: null` on every chunk but the last.
  const noUsage = includeUsage ? { usage: null } : {};
  const chunk = (delta: object, finishReason: string | null = null) => ({
    ...head,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...noUsage,
  });

  const chunks: object[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of split(c.text ?? '', 4)) chunks.push(chunk({ content: piece }));
  c.toolCalls.forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of split(call.arguments, 3)) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  chunks.push(chunk({}, c.finishReason));
  if (includeUsage) chunks.push({ ...head, choices: [], usage: c.usage });
  return [...chunks.map((data) => `data: ${JSON.stringify(data)}\n\n`), 'data: [DONE]\n\n'];
}

/** Cuts text into at most `parts` pieces, never inside a character. */
function split(text: string, parts: number): string[] {
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

function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: { message, type: errorType(status) } });
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'server_error';
}

/** Waits `ms`, or less if the signal fires first. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}
