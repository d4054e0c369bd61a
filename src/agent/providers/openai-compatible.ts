/**
 * A ModelProvider for any server that speaks the OpenAI chat-completions API (OpenAI, vLLM,
 * llama.cpp, Ollama, LM Studio, ...). Streams via server-sent events by default.
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

export interface OpenAICompatibleOptions {
  /** The API root, e.g. `http://127.0.0.1:8080/v1`; a trailing slash is fine. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string;
  /** Ask for a server-sent-events stream. Default true. */
  stream?: boolean;
  /** Replaces the global fetch (undici). */
  fetch?: typeof fetch;
  /**
   * Limit on the whole call, reading the answer included. Past it generate() rejects with a
   * retryable ModelProviderError. No limit by default: the caller's signal bounds the call.
   */
  requestTimeoutMs?: number;
}

const NAME = 'openai-compatible';

type JsonObject = Record<string, unknown>;

/** What either wire format yields before usage is filled in. */
interface ParsedAnswer {
  text: string;
  toolCalls: ModelToolCall[];
  usage: JsonObject | undefined;
  finishReason: string | undefined;
}

export function createOpenAICompatibleProvider(opts: OpenAICompatibleOptions): ModelProvider {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const stream = opts.stream ?? true;
  const fetchImpl = opts.fetch ?? fetch;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    const { signal } = request;
    if (signal.aborted) throw abortError(signal);
    const body = JSON.stringify(requestBody(opts.model, request, stream));

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

    /** The error to reject with when fetch, or reading the answer, fails. */
    const ioFailure = (err: unknown): Error => {
      if (signal.aborted) return abortError(signal);
      if (timedOut) {
        return new ModelProviderError(`${NAME}: no complete answer within ${opts.requestTimeoutMs} ms`, {
          retryable: true,
          cause: err,
        });
      }
      return new ModelProviderError(`${NAME}: request to ${url} failed: ${describe(err)}`, { retryable: true, cause: err });
    };

    try {
      const response = await fetchImpl(url, { method: 'POST', headers, body, signal: http.signal }).catch(
        (err: unknown) => {
          throw ioFailure(err);
        },
      );
      const readText = () =>
        response.text().catch((err: unknown) => {
          throw ioFailure(err);
        });

      if (!response.ok) throw statusError(response, await readText());

      // Some servers ignore `stream: true` and answer with a plain completion.
      const isJson = response.headers.get('content-type')?.includes('application/json') ?? false;
      let answer: ParsedAnswer;
      if (stream && !isJson) {
        if (!response.body) throw malformed('the answer has no body');
        answer = await readEventStream(response.body, request, ioFailure);
      } else {
        answer = parseCompletion(await readText());
      }
      return {
        text: answer.text,
        toolCalls: answer.toolCalls,
        usage: {
          inputTokens: tokenCount(answer.usage?.prompt_tokens) ?? estimateTokens(request.messages.reduce((n, m) => n + messageChars(m), 0)),
          outputTokens: tokenCount(answer.usage?.completion_tokens) ?? estimateTokens(answerChars(answer)),
        },
        finishReason: answer.finishReason ?? 'unknown',
      };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      // A no-op once the answer was read in full; otherwise it releases the connection.
      http.abort();
    }
  }

  return { specificationVersion: 'v1', name: NAME, generate };
}

function requestBody(model: string, request: ModelRequest, stream: boolean): JsonObject {
  const body: JsonObject = { model, messages: request.messages.map(toWireMessage), stream };
  // OpenAI rejects an empty `tools` array, so tools are sent only when there are some.
  if (request.tools.length > 0) {
    body.tools = request.tools.map(toWireTool);
    body.tool_choice = 'auto';
  }
  if (stream) body.stream_options = { include_usage: true };
  return body;
}

function toWireMessage(message: ModelMessage): JsonObject {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      // `content: null` is only accepted next to tool calls.
      if (calls.length === 0) return { role: 'assistant', content: message.content ?? '' };
      return {
        role: 'assistant',
        content: message.content,
        tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

function toWireTool(tool: ModelToolDefinition): JsonObject {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** Reads a chat-completion-chunk stream to its end, passing text deltas on as they come. */
async function readEventStream(
  body: ReadableStream<Uint8Array>,
  { signal, onTextDelta }: ModelRequest,
  ioFailure: (err: unknown) => Error,
): Promise<ParsedAnswer> {
  const answer: ParsedAnswer = { text: '', toolCalls: [], usage: undefined, finishReason: undefined };
  const calls = new Map<number, ModelToolCall>();
  let sawDone = false;

  const decoder = new SseDecoder((data) => {
    // One network chunk can hold many events: no delta is passed on after an abort.
    if (signal.aborted) throw abortError(signal);
    if (data === '[DONE]') {
      sawDone = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw malformed(`a stream event is not JSON: ${preview(data)}`);
    }
    if (!isObject(chunk)) throw malformed(`a stream event is not an object: ${preview(data)}`);
    if (chunk.error !== undefined) throw errorInBody(chunk.error);
    if (isObject(chunk.usage)) answer.usage = chunk.usage;

    // The final usage chunk has no choices; with n > 1 only the first choice is ours.
    const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => isObject(c) && (c.index ?? 0) === 0) : undefined;
    if (!isObject(choice)) return;
    if (typeof choice.finish_reason === 'string') answer.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (!isObject(delta)) return;
    if (typeof delta.content === 'string' && delta.content !== '') {
      answer.text += delta.content;
      onTextDelta?.(delta.content);
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const part of delta.tool_calls) addToolCallPart(calls, part);
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

  if (!sawDone && answer.finishReason === undefined) {
    throw new ModelProviderError(`${NAME}: the stream ended before the answer was complete`, { retryable: true });
  }
  answer.toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => completeToolCall(call));
  return answer;
}

/**
 * A streamed tool call arrives in parts keyed by `index`: the first carries the id and the
 * name, the following ones pieces of the arguments text.
 */
function addToolCallPart(calls: Map<number, ModelToolCall>, part: unknown): void {
  if (!isObject(part) || typeof part.index !== 'number') throw malformed('a streamed tool call has no index');
  let call = calls.get(part.index);
  if (!call) {
    call = { id: '', name: '', arguments: '' };
    calls.set(part.index, call);
  }
  if (typeof part.id === 'string' && part.id !== '') call.id = part.id;
  const fn = isObject(part.function) ? part.function : {};
  // Assigned rather than appended: some servers repeat the name in every part.
  if (typeof fn.name === 'string' && fn.name !== '') call.name = fn.name;
  if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
}

function parseCompletion(text: string): ParsedAnswer {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw malformed(`the answer is not JSON: ${preview(text)}`);
  }
  if (!isObject(json)) throw malformed(`the answer is not an object: ${preview(text)}`);
  if (json.error !== undefined) throw errorInBody(json.error);
  const choice = Array.isArray(json.choices) ? json.choices[0] : undefined;
  if (!isObject(choice) || !isObject(choice.message)) throw malformed('the answer has no choices[0].message');
  const { content, tool_calls: toolCalls = [] } = choice.message;
  if (content != null && typeof content !== 'string') throw malformed('message.content is not text');
  if (toolCalls !== null && !Array.isArray(toolCalls)) throw malformed('message.tool_calls is not a list');
  return {
    text: typeof content === 'string' ? content : '',
    toolCalls: (toolCalls ?? []).map((raw: unknown) => {
      if (!isObject(raw) || !isObject(raw.function)) throw malformed('a tool call has no function');
      const { name, arguments: args } = raw.function;
      return completeToolCall({
        id: typeof raw.id === 'string' ? raw.id : '',
        name: typeof name === 'string' ? name : '',
        // Arguments are JSON text on the wire; a server that sends an object gets it re-encoded.
        arguments: typeof args === 'string' ? args : args === undefined ? '' : JSON.stringify(args),
      });
    }),
    usage: isObject(json.usage) ? json.usage : undefined,
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : undefined,
  };
}

function completeToolCall(call: ModelToolCall): ModelToolCall {
  if (call.name === '') throw malformed('a tool call has no name');
  // Some local servers leave the id out; the agent needs one to pair the tool result with the call.
  return call.id === '' ? { ...call, id: `call_${randomUUID()}` } : call;
}

/**
 * Splits a server-sent-events byte stream into the `data` of each event. Bytes may be cut
 * anywhere, even inside a UTF-8 character; lines end in LF or CRLF.
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

  /** Flushes what is left: a last event without its closing blank line is still delivered. */
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
    // Only `data` matters: event, id and retry carry nothing for chat completions, and a
    // comment (a keep-alive, say) is a line starting with ':', i.e. with an empty field name.
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
  return new ModelProviderError(`${NAME}: HTTP ${status}${detail ? `: ${detail}` : ''}`, {
    status,
    retryable: status === 408 || status === 409 || status === 429 || status >= 500,
  });
}

/** The provider's own message from an error body (`{error: {message}}`, or `{error: "..."}`). */
function providerMessage(body: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(json)) return undefined;
  if (typeof json.error === 'string') return json.error;
  if (isObject(json.error) && typeof json.error.message === 'string') return json.error.message;
  return undefined;
}

/**
 * An error reported inside a 2xx answer (some gateways do this when the upstream model fails
 * mid-answer). Nothing says it is permanent, so it is treated like a 5xx.
 */
function errorInBody(error: unknown): ModelProviderError {
  const message = isObject(error) && typeof error.message === 'string' ? error.message : preview(JSON.stringify(error));
  return new ModelProviderError(`${NAME}: the server reported an error: ${message}`, { retryable: true });
}

function malformed(what: string): ModelProviderError {
  return new ModelProviderError(`${NAME}: malformed answer: ${what}`, { retryable: false });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError'
    ? reason
    : new DOMException('The model request was aborted.', 'AbortError');
}

/** undici reports network failures as `TypeError: fetch failed` with the real error as cause. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  if (!(cause instanceof Error)) return err.message;
  // Connecting to several addresses fails with an AggregateError whose message is empty.
  const detail = cause.message || (cause as { code?: unknown }).code;
  return detail ? `${err.message} (${String(detail)})` : err.message;
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The rough rule of four characters per token, for servers that report no usage. */
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
