/**
 * A fake Anthropic Messages API server for the tests, scripted like the fake OpenAI server:
 * replies are queued in advance or computed by a responder, and every request is recorded.
 * Answers honour the request's `stream` flag: real Messages server-sent events (message_start,
 * content_block_start/delta/stop, message_delta, message_stop, with pings), or one JSON message.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface FakeToolUse {
  /** Default `toolu_<request index>_<position>`. */
  id?: string;
  name: string;
  /** An object is sent as the input; a string is streamed as is, so malformed JSON can be tested. */
  input: unknown;
}

export interface FakeAnthropicReply {
  text?: string;
  toolCalls?: FakeToolUse[];
  /** Default: about four characters per token of the request's messages and of the answer. */
  usage?: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  /** Default `tool_use` with tool calls, else `end_turn`. */
  stopReason?: string;
  delayMs?: number;
  /** Never answer; the request ends only when the client gives up. */
  hang?: boolean;
  /**
   * With `status` or `errorMessage`, answer `{type: "error", error: {type, message}}` with that
   * status (default 500) instead of a message.
   */
  status?: number;
  errorMessage?: string;
  /** The error's type; default from the status (529 → overloaded_error, …). */
  errorType?: string;
  /** Streaming only: after this many events, send an `error` event and end the stream. */
  streamErrorAfter?: number;
  /** Pause between stream events (streaming requests only). */
  chunkDelayMs?: number;
}

export interface FakeAnthropicRequestBody {
  model?: string;
  max_tokens?: number;
  system?: string;
  messages?: { role: string; content: unknown }[];
  tools?: { name: string; description?: string; input_schema?: unknown }[];
  tool_choice?: unknown;
  stream?: boolean;
  [field: string]: unknown;
}

export interface RecordedAnthropicRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: FakeAnthropicRequestBody;
}

export type FakeAnthropicResponder = (body: FakeAnthropicRequestBody, index: number) => FakeAnthropicReply | Promise<FakeAnthropicReply>;

export interface FakeAnthropic {
  /** Base URL (without `/v1`). */
  readonly url: string;
  readonly requests: RecordedAnthropicRequest[];
  script(...replies: FakeAnthropicReply[]): void;
  setResponder(responder: FakeAnthropicResponder | null): void;
  pending(): number;
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const MESSAGES_PATH = '/v1/messages';
const DEFAULT_REPLY: FakeAnthropicReply = { text: 'Done.' };

interface Message {
  id: string;
  model: string;
  text: string;
  toolUses: { id: string; name: string; input: unknown; json: string }[];
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  stopReason: string;
}

export async function startFakeAnthropic(): Promise<FakeAnthropic> {
  const requests: RecordedAnthropicRequest[] = [];
  const queue: FakeAnthropicReply[] = [];
  let responder: FakeAnthropicResponder | null = null;
  let active = 0;
  const waiters = new Set<{ n: number; resolve: () => void }>();

  async function handle(req: IncomingMessage, res: ServerResponse, gone: AbortSignal): Promise<void> {
    const path = req.url?.split('?')[0];
    if (req.method !== 'POST' || path !== MESSAGES_PATH) {
      req.resume();
      return sendError(res, 404, `No route ${req.method} ${req.url} (the fake serves POST ${MESSAGES_PATH}).`);
    }
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return;
    }
    let body: FakeAnthropicRequestBody;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as FakeAnthropicRequestBody;
    } catch {
      return sendError(res, 400, 'The body is not valid JSON.');
    }
    // Like the real API: the version header and max_tokens are required.
    if (!req.headers['anthropic-version']) return sendError(res, 400, 'anthropic-version: header is required');
    if (typeof body.max_tokens !== 'number') return sendError(res, 400, 'max_tokens: Field required');
    const index = requests.push({ path, headers: req.headers, body }) - 1;
    for (const waiter of waiters) {
      if (requests.length >= waiter.n) {
        waiters.delete(waiter);
        waiter.resolve();
      }
    }

    let reply: FakeAnthropicReply;
    try {
      reply = responder ? await responder(body, index) : (queue.shift() ?? DEFAULT_REPLY);
    } catch (err) {
      reply = { status: 500, errorMessage: `The fake responder threw: ${String(err)}` };
    }

    if (reply.delayMs) await pause(reply.delayMs, gone);
    if (reply.hang && !gone.aborted) await once(gone, 'abort');
    if (gone.aborted) return;

    if (reply.status !== undefined || (reply.errorMessage !== undefined && reply.streamErrorAfter === undefined)) {
      const status = reply.status ?? 500;
      return sendError(res, status, reply.errorMessage ?? `Fake error ${status}.`, reply.errorType);
    }
    const message = toMessage(reply, body, index);
    if (body.stream !== true) return sendJson(res, 200, messageObject(message));

    let events = streamEvents(message);
    if (reply.streamErrorAfter !== undefined) {
      events = [
        ...events.slice(0, reply.streamErrorAfter),
        sse('error', { type: 'error', error: { type: reply.errorType ?? 'overloaded_error', message: reply.errorMessage ?? 'Overloaded' } }),
      ];
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (!reply.chunkDelayMs) {
      res.end(events.join(''));
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
    const gone = new AbortController();
    res.once('close', () => {
      active -= 1;
      gone.abort();
    });
    handle(req, res, gone.signal).catch((err: unknown) => {
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
    url: `http://127.0.0.1:${port}`,
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
          reject(new Error(`The fake Anthropic server got ${requests.length} requests within ${timeoutMs} ms, not ${n}.`));
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

function toMessage(reply: FakeAnthropicReply, body: FakeAnthropicRequestBody, index: number): Message {
  const toolUses = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `toolu_${index}_${i}`,
    name: call.name,
    input: typeof call.input === 'string' ? {} : call.input,
    json: typeof call.input === 'string' ? call.input : (JSON.stringify(call.input) ?? ''),
  }));
  const outputChars = toolUses.reduce((n, c) => n + c.name.length + c.json.length, reply.text?.length ?? 0);
  const usage = reply.usage ?? {
    input_tokens: Math.ceil((JSON.stringify(body.messages ?? []).length + (body.system?.length ?? 0)) / 4),
    output_tokens: Math.ceil(outputChars / 4),
  };
  return {
    id: `msg_fake_${index}`,
    model: body.model ?? 'fake-claude',
    text: reply.text ?? '',
    toolUses,
    usage,
    stopReason: reply.stopReason ?? (toolUses.length > 0 ? 'tool_use' : 'end_turn'),
  };
}

function messageObject(m: Message): object {
  const content: object[] = [];
  if (m.text !== '') content.push({ type: 'text', text: m.text });
  for (const t of m.toolUses) content.push({ type: 'tool_use', id: t.id, name: t.name, input: t.input });
  return { id: m.id, type: 'message', role: 'assistant', model: m.model, content, stop_reason: m.stopReason, stop_sequence: null, usage: m.usage };
}

/**
 * The events the Messages API sends: message_start (input usage), a ping, each content block as
 * start, deltas (text in several text_deltas, tool input in several input_json_deltas) and stop,
 * then message_delta (stop reason, output usage) and message_stop.
 */
function streamEvents(m: Message): string[] {
  const events: string[] = [];
  const { output_tokens: outputTokens, ...inputUsage } = m.usage;
  events.push(
    sse('message_start', {
      type: 'message_start',
      message: { id: m.id, type: 'message', role: 'assistant', model: m.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...inputUsage, output_tokens: 1 } },
    }),
  );
  events.push(sse('ping', { type: 'ping' }));
  let index = 0;
  if (m.text !== '') {
    events.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
    for (const piece of split(m.text, 4)) events.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }));
    events.push(sse('content_block_stop', { type: 'content_block_stop', index }));
    index++;
  }
  for (const t of m.toolUses) {
    events.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: t.id, name: t.name, input: {} } }));
    for (const piece of split(t.json, 3)) events.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }));
    events.push(sse('content_block_stop', { type: 'content_block_stop', index }));
    index++;
  }
  events.push(sse('message_delta', { type: 'message_delta', delta: { stop_reason: m.stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } }));
  events.push(sse('message_stop', { type: 'message_stop' }));
  return events;
}

function sse(event: string, data: object): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

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

function sendError(res: ServerResponse, status: number, message: string, type?: string): void {
  sendJson(res, status, { type: 'error', error: { type: type ?? errorType(status), message } });
}

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 529) return 'overloaded_error';
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'api_error';
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}
