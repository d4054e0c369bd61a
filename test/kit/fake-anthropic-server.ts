/**
 * A fake Anthropic Messages API server for the tests, scripted like the fake OpenAI server:
 * replies are queued in advance or computed by a responder, and every request is recorded.
 * Answers honour the request's `stream` flag: real Messages server-sent events (message_start,
 * content_block_start/delta/stop, message_delta, message_stop, with pings), or one JSON message.
 */
import { split, startFakeModelServer, type FakeModelReply, type FakeModelRequestBody, type FakeModelServer } from './fake-model-server.js';

export interface FakeToolUse {
  /** Default `toolu_<request index>_<position>`. */
  id?: string;
  name: string;
  /** An object is sent as the input; a string is streamed as is, so malformed JSON can be tested. */
  input: unknown;
}

/** Errors are answered as `{type: "error", error: {type, message}}`. */
export interface FakeAnthropicReply extends FakeModelReply {
  toolCalls?: FakeToolUse[];
  /**
   * Default: about four characters per token of the request and of the answer, split into cache
   * reads, cache writes and uncached input by the request's cache_control breakpoints (cacheUsage).
   */
  usage?: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  /** Default `tool_use` with tool calls, else `end_turn`. */
  stopReason?: string;
  /** The error's type; default from the status (529 → overloaded_error, …). */
  errorType?: string;
  /** Streaming only: after this many events, send an `error` event and end the stream. */
  streamErrorAfter?: number;
}

export interface FakeAnthropicRequestBody extends FakeModelRequestBody {
  max_tokens?: number;
  system?: string | { type: string; text: string; cache_control?: unknown }[];
  messages?: { role: string; content: unknown }[];
  tools?: { name: string; description?: string; input_schema?: unknown; cache_control?: unknown }[];
}

/** Its `url` is the API root, without `/v1`. */
export type FakeAnthropic = FakeModelServer<FakeAnthropicReply, FakeAnthropicRequestBody>;

interface Message {
  id: string;
  model: string;
  text: string;
  toolUses: { id: string; name: string; input: unknown; json: string }[];
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  stopReason: string;
}

export function startFakeAnthropic(): Promise<FakeAnthropic> {
  const cached = new Set<string>();
  return startFakeModelServer<FakeAnthropicReply, FakeAnthropicRequestBody>({
    name: 'Anthropic',
    path: '/v1/messages',
    checkAnswer: { text: '', usage: { input_tokens: 0, output_tokens: 0 } },
    errorBody: (status, message, reply) => ({ type: 'error', error: { type: reply?.errorType ?? errorType(status), message } }),
    // Anthropic's headers: limits a minute, resets as RFC 3339 times.
    rateLimitHeaders: ({ perMinute, remaining, resetAt }) => ({
      'anthropic-ratelimit-requests-limit': String(perMinute),
      'anthropic-ratelimit-requests-remaining': String(remaining),
      'anthropic-ratelimit-requests-reset': resetAt.toISOString().replace(/\.\d+Z$/, 'Z'),
    }),
    // Like the real API: the version header and max_tokens are required.
    refusal(headers, body) {
      if (!headers['anthropic-version']) return [400, 'anthropic-version: header is required'];
      if (typeof body.max_tokens !== 'number') return [400, 'max_tokens: Field required'];
      return undefined;
    },
    // An error message with streamErrorAfter is the stream's error event, not the answer.
    answersWithError: (reply) => reply.status !== undefined || (reply.errorMessage !== undefined && reply.streamErrorAfter === undefined),
    json: (reply, body, index) => messageObject(toMessage(reply, body, index, cached)),
    events(reply, body, index) {
      const events = streamEvents(toMessage(reply, body, index, cached));
      if (reply.streamErrorAfter === undefined) return events;
      return [
        ...events.slice(0, reply.streamErrorAfter),
        sse('error', { type: 'error', error: { type: reply.errorType ?? 'overloaded_error', message: reply.errorMessage ?? 'Overloaded' } }),
      ];
    },
  });
}

function toMessage(reply: FakeAnthropicReply, body: FakeAnthropicRequestBody, index: number, cached: Set<string>): Message {
  const toolUses = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `toolu_${index}_${i}`,
    name: call.name,
    input: typeof call.input === 'string' ? {} : call.input,
    json: typeof call.input === 'string' ? call.input : (JSON.stringify(call.input) ?? ''),
  }));
  const outputChars = toolUses.reduce((n, c) => n + c.name.length + c.json.length, reply.text?.length ?? 0);
  const usage = reply.usage ?? { ...cacheUsage(body, cached), output_tokens: Math.ceil(outputChars / 4) };
  return {
    id: `msg_fake_${index}`,
    model: body.model ?? 'fake-claude',
    text: reply.text ?? '',
    toolUses,
    usage,
    stopReason: reply.stopReason ?? (toolUses.length > 0 ? 'tool_use' : 'end_turn'),
  };
}

/** The request's blocks in the order the prompt is read: tools, system, then each message's content blocks. */
function promptBlocks(body: FakeAnthropicRequestBody): { text: string; breakpoint: boolean }[] {
  // A breakpoint marks where to cache; it is no part of the content the cache is keyed on.
  const block = (b: unknown) => {
    const { cache_control: mark, ...content } = b as Record<string, unknown>;
    return { text: JSON.stringify(content), breakpoint: mark !== undefined };
  };
  const system = typeof body.system === 'string' ? [{ type: 'text', text: body.system }] : body.system ?? [];
  const content = (body.messages ?? []).flatMap((m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as unknown[])));
  return [...(body.tools ?? []), ...system, ...content].map(block);
}

/**
 * Anthropic's prompt caching as documented, as far as the tests need: the longest prefix ending
 * at a breakpoint an earlier request wrote is read from the cache; from there to this request's
 * last breakpoint is written to it; the rest is plain input. Tokens are four characters.
 */
export function cacheUsage(body: FakeAnthropicRequestBody, cached: Set<string>): { input_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number } {
  const blocks = promptBlocks(body);
  let prefix = '';
  let read = 0;
  let lastBreakpoint = 0;
  const written: string[] = [];
  for (const b of blocks) {
    prefix += b.text;
    if (cached.has(prefix)) read = prefix.length;
    if (b.breakpoint) {
      lastBreakpoint = prefix.length;
      written.push(prefix);
    }
  }
  for (const p of written) cached.add(p);
  const tokens = (chars: number) => Math.ceil(chars / 4);
  return {
    input_tokens: tokens(prefix.length - Math.max(read, lastBreakpoint)),
    cache_read_input_tokens: tokens(read),
    cache_creation_input_tokens: tokens(Math.max(0, lastBreakpoint - read)),
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
