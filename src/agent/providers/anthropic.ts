/**
 * A ModelProvider for Anthropic's Messages API (POST {baseUrl}/v1/messages). The system prompt
 * travels apart from the messages, tools are {name, description, input_schema}, tool calls and
 * their results are tool_use / tool_result content blocks, and consecutive messages of one role
 * are merged (all tool results of a step go back in one user message). Streams via server-sent
 * events by default.
 */
import { randomUUID } from 'node:crypto';
import {
  ModelProviderError,
  type ModelMessage,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ModelToolCall,
  type ModelToolDefinition,
} from './model-provider.js';

export interface AnthropicOptions {
  /** The API root, default `https://api.anthropic.com`; a trailing slash or `/v1` is fine. */
  baseUrl?: string;
  model: string;
  /** Sent as `x-api-key`. */
  apiKey?: string;
  /** `max_tokens` of each answer (the API requires one). Default 8192. */
  maxTokens?: number;
  /** Ask for a server-sent-events stream. Default true. */
  stream?: boolean;
  /** Default `2023-06-01`. */
  apiVersion?: string;
  /** Replaces the global fetch (undici). */
  fetch?: typeof fetch;
  /**
   * Limit on the whole call, reading the answer included. Past it generate() rejects with a
   * retryable ModelProviderError. No limit by default: the caller's signal bounds the call.
   */
  requestTimeoutMs?: number;
}

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 8192;
const NAME = 'anthropic';

type JsonObject = Record<string, unknown>;

type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string };

interface WireMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** What either wire format yields. */
interface ParsedAnswer {
  text: string;
  toolCalls: ModelToolCall[];
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  stopReason: string | undefined;
}

/** Error types that say the request itself is wrong: retrying cannot help. */
const PERMANENT_ERRORS = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large', 'billing_error']);

export function createAnthropicProvider(opts: AnthropicOptions): ModelProvider {
  const root = (opts.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '').replace(/\/v1$/, '');
  const url = `${root}/v1/messages`;
  const stream = opts.stream ?? true;
  const fetchImpl = opts.fetch ?? fetch;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    'anthropic-version': opts.apiVersion ?? '2023-06-01',
  };
  if (opts.apiKey) headers['x-api-key'] = opts.apiKey;

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    const { signal } = request;
    if (signal.aborted) throw abortError(signal);
    const body = JSON.stringify(requestBody(opts, request, stream));

    // Our own controller for the HTTP call, so that the caller's abort and our timeout both
    // cancel it, and so that `finally` can drop the connection if we stop reading early.
    const http = new AbortController();
    const onAbort = () => http.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer =
      opts.requestTimeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            http.abort();
          }, opts.requestTimeoutMs);

    const ioFailure = (err: unknown): Error => {
      if (signal.aborted) return abortError(signal);
      if (timedOut) {
        return new ModelProviderError(`${NAME}: no complete answer within ${opts.requestTimeoutMs} ms`, { retryable: true, cause: err });
      }
      return new ModelProviderError(`${NAME}: request to ${url} failed: ${describe(err)}`, { retryable: true, cause: err });
    };

    try {
      const response = await fetchImpl(url, { method: 'POST', headers, body, signal: http.signal }).catch((err: unknown) => {
        throw ioFailure(err);
      });
      const readText = () =>
        response.text().catch((err: unknown) => {
          throw ioFailure(err);
        });

      if (!response.ok) throw statusError(response, await readText());

      const isJson = response.headers.get('content-type')?.includes('application/json') ?? false;
      let answer: ParsedAnswer;
      if (stream && !isJson) {
        if (!response.body) throw malformed('the answer has no body');
        answer = await readEventStream(response.body, request, ioFailure);
      } else {
        answer = parseMessage(await readText());
      }
      return {
        text: answer.text,
        toolCalls: answer.toolCalls,
        usage: {
          inputTokens: answer.inputTokens ?? estimateTokens(request.messages.reduce((n, m) => n + messageChars(m), 0)),
          outputTokens: answer.outputTokens ?? estimateTokens(answerChars(answer)),
        },
        finishReason: finishReason(answer.stopReason),
      };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      http.abort();
    }
  }

  return { specificationVersion: 'v1', name: NAME, generate };
}

function requestBody(opts: AnthropicOptions, request: ModelRequest, stream: boolean): JsonObject {
  const system = request.messages
    .filter((m): m is Extract<ModelMessage, { role: 'system' }> => m.role === 'system')
    .map((m) => m.content)
    .filter((c) => c !== '')
    .join('\n\n');
  const body: JsonObject = {
    model: opts.model,
    max_tokens: opts.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages: toWireMessages(request.messages),
    stream,
  };
  if (system) body.system = system;
  if (request.tools.length > 0) {
    body.tools = request.tools.map(toWireTool);
    body.tool_choice = { type: 'auto' };
  }
  return body;
}

/**
 * Our messages as Messages-API turns. The API wants user and assistant turns to alternate and
 * no empty content, so consecutive messages that map to one role are merged into one turn, and
 * an assistant message with neither text nor tool calls is left out. Within a user turn the
 * tool results come first, as the API requires.
 */
export function toWireMessages(messages: ModelMessage[]): WireMessage[] {
  const out: WireMessage[] = [];
  const push = (role: WireMessage['role'], blocks: ContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) {
      last.content.push(...blocks);
      if (role === 'user') last.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
    } else {
      out.push({ role, content: blocks });
    }
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        push('user', message.content === '' ? [] : [{ type: 'text', text: message.content }]);
        break;
      case 'assistant': {
        const blocks: ContentBlock[] = [];
        if (message.content) blocks.push({ type: 'text', text: message.content });
        for (const call of message.toolCalls ?? []) blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: toolInput(call.arguments) });
        push('assistant', blocks);
        break;
      }
      case 'tool':
        // An empty tool_result content is refused by some API versions.
        push('user', [{ type: 'tool_result', tool_use_id: message.toolCallId, content: message.content || '(no output)' }]);
        break;
    }
  }
  return out;
}

/** tool_use input must be an object; arguments that are not a JSON object are passed on inside one. */
function toolInput(args: string): unknown {
  if (args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    if (isObject(parsed)) return parsed;
  } catch {
    // fall through
  }
  return { _unparsed_arguments: args };
}

function toWireTool(tool: ModelToolDefinition): JsonObject {
  return { name: tool.name, description: tool.description, input_schema: tool.parameters };
}

/** A tool_use block being streamed: its input arrives as pieces of JSON text. */
interface StreamingToolUse {
  id: string;
  name: string;
  json: string;
  /** The input given in content_block_start, used when no input_json_delta follows. */
  initial: unknown;
  sawDelta: boolean;
}

/** Reads a Messages stream to its end, passing text deltas on as they come. */
async function readEventStream(
  body: ReadableStream<Uint8Array>,
  { signal, onTextDelta }: ModelRequest,
  ioFailure: (err: unknown) => Error,
): Promise<ParsedAnswer> {
  const answer: ParsedAnswer = { text: '', toolCalls: [], inputTokens: undefined, outputTokens: undefined, stopReason: undefined };
  const blocks = new Map<number, StreamingToolUse | 'text' | 'other'>();
  const calls: { index: number; call: StreamingToolUse }[] = [];
  let sawStop = false;

  const decoder = new SseDecoder((data) => {
    // One network chunk can hold many events: no delta is passed on after an abort.
    if (signal.aborted) throw abortError(signal);
    let event: unknown;
    try {
      event = JSON.parse(data);
    } catch {
      throw malformed(`a stream event is not JSON: ${preview(data)}`);
    }
    if (!isObject(event)) throw malformed(`a stream event is not an object: ${preview(data)}`);
    switch (event.type) {
      case 'message_start': {
        const message = isObject(event.message) ? event.message : {};
        readUsage(answer, message.usage);
        break;
      }
      case 'content_block_start': {
        const index = blockIndex(event);
        const block = isObject(event.content_block) ? event.content_block : {};
        if (block.type === 'tool_use') {
          const call: StreamingToolUse = {
            id: typeof block.id === 'string' ? block.id : '',
            name: typeof block.name === 'string' ? block.name : '',
            json: '',
            initial: block.input,
            sawDelta: false,
          };
          blocks.set(index, call);
          calls.push({ index, call });
        } else if (block.type === 'text') {
          blocks.set(index, 'text');
          if (typeof block.text === 'string' && block.text !== '') addText(answer, block.text, onTextDelta);
        } else {
          blocks.set(index, 'other'); // thinking and other blocks carry nothing we use
        }
        break;
      }
      case 'content_block_delta': {
        const block = blocks.get(blockIndex(event));
        const delta = isObject(event.delta) ? event.delta : {};
        if (delta.type === 'text_delta' && typeof delta.text === 'string') {
          if (block !== 'text') throw malformed('a text delta for a block that is not text');
          if (delta.text !== '') addText(answer, delta.text, onTextDelta);
        } else if (delta.type === 'input_json_delta' && typeof delta.partial_json === 'string') {
          if (block === undefined || typeof block === 'string') throw malformed('an input_json_delta for a block that is not tool_use');
          block.json += delta.partial_json;
          block.sawDelta = true;
        }
        break;
      }
      case 'message_delta': {
        const delta = isObject(event.delta) ? event.delta : {};
        if (typeof delta.stop_reason === 'string') answer.stopReason = delta.stop_reason;
        readUsage(answer, event.usage);
        break;
      }
      case 'message_stop':
        sawStop = true;
        break;
      case 'error':
        throw errorInBody(event.error);
      default:
        break; // ping, content_block_stop and events added later
    }
  });

  const reader = body.getReader();
  while (true) {
    const { done, value } = await reader.read().catch((err: unknown) => {
      throw ioFailure(err);
    });
    if (done) break;
    decoder.push(value);
  }
  decoder.end();

  if (!sawStop) throw new ModelProviderError(`${NAME}: the stream ended before the answer was complete`, { retryable: true });
  answer.toolCalls = calls
    .sort((a, b) => a.index - b.index)
    .map(({ call }) =>
      completeToolCall({
        id: call.id,
        name: call.name,
        // No deltas at all means the input came whole in content_block_start (an empty object, usually).
        arguments: call.sawDelta ? call.json || '{}' : JSON.stringify(call.initial ?? {}),
      }),
    );
  return answer;
}

function addText(answer: ParsedAnswer, text: string, onTextDelta: ((text: string) => void) | undefined): void {
  answer.text += text;
  onTextDelta?.(text);
}

function blockIndex(event: JsonObject): number {
  if (typeof event.index !== 'number') throw malformed(`a ${String(event.type)} event has no index`);
  return event.index;
}

/** Input tokens count the cached ones too: they are all tokens the model read. */
function readUsage(answer: ParsedAnswer, usage: unknown): void {
  if (!isObject(usage)) return;
  const input = tokenCount(usage.input_tokens);
  const cacheCreate = tokenCount(usage.cache_creation_input_tokens) ?? 0;
  const cacheRead = tokenCount(usage.cache_read_input_tokens) ?? 0;
  if (input !== undefined) answer.inputTokens = input + cacheCreate + cacheRead;
  const output = tokenCount(usage.output_tokens);
  if (output !== undefined) answer.outputTokens = output;
}

function parseMessage(text: string): ParsedAnswer {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw malformed(`the answer is not JSON: ${preview(text)}`);
  }
  if (!isObject(json)) throw malformed(`the answer is not an object: ${preview(text)}`);
  if (json.type === 'error' || json.error !== undefined) throw errorInBody(json.error);
  if (!Array.isArray(json.content)) throw malformed('the answer has no content list');
  const answer: ParsedAnswer = { text: '', toolCalls: [], inputTokens: undefined, outputTokens: undefined, stopReason: undefined };
  for (const block of json.content as unknown[]) {
    if (!isObject(block)) throw malformed('a content block is not an object');
    if (block.type === 'text' && typeof block.text === 'string') answer.text += block.text;
    else if (block.type === 'tool_use') {
      answer.toolCalls.push(
        completeToolCall({
          id: typeof block.id === 'string' ? block.id : '',
          name: typeof block.name === 'string' ? block.name : '',
          arguments: JSON.stringify(block.input ?? {}),
        }),
      );
    }
  }
  readUsage(answer, json.usage);
  if (typeof json.stop_reason === 'string') answer.stopReason = json.stop_reason;
  return answer;
}

function completeToolCall(call: ModelToolCall): ModelToolCall {
  if (call.name === '') throw malformed('a tool_use block has no name');
  return call.id === '' ? { ...call, id: `toolu_${randomUUID()}` } : call;
}

/** Stop reasons in the words the rest of Quarry uses (OpenAI's). */
function finishReason(stopReason: string | undefined): string {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
      return 'length';
    case undefined:
      return 'unknown';
    default:
      return stopReason;
  }
}

/**
 * Splits a server-sent-events byte stream into the `data` of each event. Bytes may be cut
 * anywhere, even inside a UTF-8 character; lines end in LF or CRLF. The `event:` line is not
 * needed: every Messages event names its type in its data too.
 */
class SseDecoder {
  private readonly text = new TextDecoder();
  private buffer = '';
  private dataLines: string[] = [];

  constructor(private readonly onData: (data: string) => void) {}

  push(bytes: Uint8Array): void {
    this.buffer += this.text.decode(bytes, { stream: true });
    let start = 0;
    let end: number;
    while ((end = this.buffer.indexOf('\n', start)) !== -1) {
      this.line(this.buffer.slice(start, end));
      start = end + 1;
    }
    this.buffer = this.buffer.slice(start);
  }

  end(): void {
    this.buffer += this.text.decode();
    if (this.buffer !== '') this.line(this.buffer);
    this.buffer = '';
    this.dispatch();
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') return this.dispatch();
    const colon = line.indexOf(':');
    if ((colon === -1 ? line : line.slice(0, colon)) !== 'data') return;
    const value = colon === -1 ? '' : line.slice(colon + 1);
    this.dataLines.push(value.startsWith(' ') ? value.slice(1) : value);
  }

  private dispatch(): void {
    if (this.dataLines.length === 0) return;
    const data = this.dataLines.join('\n');
    this.dataLines = [];
    this.onData(data);
  }
}

function statusError(response: Response, body: string): ModelProviderError {
  const { status } = response;
  const detail = providerMessage(body) ?? (preview(body.trim()) || response.statusText);
  // 529 is Anthropic's "overloaded"; 408 and 409 are worth another try too.
  return new ModelProviderError(`${NAME}: HTTP ${status}${detail ? `: ${detail}` : ''}`, {
    status,
    retryable: status === 408 || status === 409 || status === 429 || status >= 500,
  });
}

/** The message of an error body: `{type: "error", error: {type, message}}`. */
function providerMessage(body: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(json)) return undefined;
  if (typeof json.error === 'string') return json.error;
  if (isObject(json.error) && typeof json.error.message === 'string') {
    return typeof json.error.type === 'string' ? `${json.error.type}: ${json.error.message}` : json.error.message;
  }
  return undefined;
}

/** An error event inside a stream (or an error object in a 200 answer). Overloaded and API errors may pass. */
function errorInBody(error: unknown): ModelProviderError {
  const type = isObject(error) && typeof error.type === 'string' ? error.type : undefined;
  const message = isObject(error) && typeof error.message === 'string' ? error.message : preview(JSON.stringify(error) ?? 'unknown error');
  return new ModelProviderError(`${NAME}: the server reported an error: ${type ? `${type}: ` : ''}${message}`, {
    retryable: type === undefined || !PERMANENT_ERRORS.has(type),
  });
}

function malformed(what: string): ModelProviderError {
  return new ModelProviderError(`${NAME}: malformed answer: ${what}`, { retryable: false });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('The model request was aborted.', 'AbortError');
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (!(cause instanceof Error)) return err.message;
  const detail = cause.message || (cause as { code?: unknown }).code;
  return detail ? `${err.message} (${String(detail)})` : err.message;
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function messageChars(message: ModelMessage): number {
  let chars = message.content?.length ?? 0;
  if (message.role === 'assistant') {
    for (const call of message.toolCalls ?? []) chars += call.name.length + call.arguments.length;
  }
  return chars;
}

function answerChars(answer: ParsedAnswer): number {
  return answer.toolCalls.reduce((n, call) => n + call.name.length + call.arguments.length, answer.text.length);
}

function preview(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
