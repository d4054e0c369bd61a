/**
 * The HTTP side that every model provider shares: one POST bounded by the caller's AbortSignal,
 * a silence limit and an optional time limit, its failures as ModelProviderError, a server-sent-events reader,
 * and the small helpers the wire-format parsers use. What the bodies mean stays in each
 * provider's own file.
 *
 * The POST goes through undici's `request()`, not `fetch`: a model call is on every step of
 * every turn, and fetch's Request, Response, Headers and web-stream objects cost about three
 * times the CPU of the call itself (measured: ~290 µs against ~100 µs a call on loopback).
 */
import { DEFAULT_MODEL_TIMEOUT_MS } from '../../config.js';
import { rateLimitReport, retryAfterMs } from '../../retry-policy.js';
import { STATUS_CODES } from 'node:http';
import { request } from 'undici';
import { ModelProviderError, type ModelMessage, type ModelRequest, type ModelResponse, type ModelToolCall } from './model-provider.js';
import { SseDecoder } from './sse-decoder.js';

export type JsonObject = Record<string, unknown>;

/** A model server's answer as `post` hands it over: status, headers (lower-case names) and the body's chunks. */
export interface ModelHttpAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Uint8Array>;
}

/** Sends one POST and resolves with the answer's head; the body is read from `body` after. */
export type ModelPost = (url: string, init: { headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<ModelHttpAnswer>;

/** The default ModelPost: undici's request() on its global keep-alive pool. */
const undiciPost: ModelPost = (url, init) => request(url, { method: 'POST', headers: init.headers, body: init.body, signal: init.signal });

/** The options every HTTP model provider takes besides its own. */
export interface HttpProviderOptions {
  /** Replaces the HTTP call (undici's request()): tests hand over canned answers with it. */
  post?: ModelPost;
  /**
   * The longest the server may stay silent: from sending the request to the answer's headers,
   * then between two chunks of its body. Past it generate() rejects with a retryable
   * ModelProviderError. A streamed answer is so bounded from the first byte on and between
   * events however long it runs; a whole (non-streamed) answer usually comes only when the model
   * is done, so there it bounds the whole generation. Default DEFAULT_MODEL_TIMEOUT_MS; 0 = none.
   */
  timeoutMs?: number;
  /**
   * Limit on the whole call, reading the answer included. Past it generate() rejects with a
   * retryable ModelProviderError. No limit by default: the caller's signal bounds the call.
   */
  requestTimeoutMs?: number;
}

/** Where and how a provider posts its requests: fixed when the provider is created. */
export interface ProviderEndpoint {
  /** The provider's name, which starts every error message. */
  provider: string;
  url: string;
  headers: Record<string, string>;
  post: ModelPost;
  /** See HttpProviderOptions.timeoutMs; 0 = no limit. */
  timeoutMs: number;
  requestTimeoutMs: number | undefined;
  /** Put an error body's `error.type` before its message (Anthropic's types say what went wrong). */
  errorTypeInMessage: boolean;
}

/** The endpoint fields that follow from a provider's HttpProviderOptions. */
export function endpointLimits(opts: HttpProviderOptions): Pick<ProviderEndpoint, 'post' | 'timeoutMs' | 'requestTimeoutMs'> {
  return { post: opts.post ?? undiciPost, timeoutMs: opts.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS, requestTimeoutMs: opts.requestTimeoutMs };
}

/** A 2xx answer, read under the same signal and time limits as the call. */
export interface ProviderAnswer {
  /** The answer is JSON, not a stream: some servers ignore a request for a stream. */
  readonly isJson: boolean;
  text(): Promise<string>;
  /**
   * Reads a server-sent-events body to its end, handing on the `data` of each event. No event
   * is handed on after an abort, even when one network chunk holds many.
   */
  readEvents(onData: (data: string) => void): Promise<void>;
}

/**
 * POSTs `body` as JSON and hands the 2xx answer to `read`. A status that is not 2xx becomes a
 * ModelProviderError carrying the status and what its headers said of the rate limits; a network
 * failure or the time limit a retryable one; the caller's abort an AbortError. What a 2xx
 * answer's headers say of the rate limits goes to the request's `onRateLimits` as they arrive.
 */
export async function postToProvider<T>(
  endpoint: ProviderEndpoint,
  body: JsonObject,
  request: Pick<ModelRequest, 'signal' | 'onRateLimits'>,
  read: (answer: ProviderAnswer) => T | Promise<T>,
): Promise<T> {
  const { signal } = request;
  if (signal.aborted) throw abortError(signal);
  const json = JSON.stringify(body);

  // Our own controller for the HTTP call, so that the caller's abort and our time limits all
  // cancel it, and so that `finally` can drop the connection if we stop reading early.
  const http = new AbortController();
  const onAbort = () => http.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  let timedOut: 'silent' | 'whole' | undefined;
  const timer =
    endpoint.requestTimeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = 'whole';
          http.abort();
        }, endpoint.requestTimeoutMs);
  // One timer, pushed back whenever bytes arrive: cheaper than a new timer per chunk.
  const silence =
    endpoint.timeoutMs > 0
      ? setTimeout(() => {
          timedOut ??= 'silent';
          http.abort();
        }, endpoint.timeoutMs)
      : undefined;
  const heard = () => silence?.refresh();
  /** The answer's body was read to its end: the connection is free again without an abort. */
  let readToEnd = false;

  /** The error to reject with when the POST, or reading the answer, fails. */
  const ioFailure = (err: unknown): Error => {
    if (signal.aborted) return abortError(signal);
    if (timedOut === 'whole') {
      return new ModelProviderError(`${endpoint.provider}: no complete answer within ${endpoint.requestTimeoutMs} ms`, { retryable: true, cause: err });
    }
    if (timedOut === 'silent') {
      return new ModelProviderError(`${endpoint.provider}: timed out: the server sent nothing for ${endpoint.timeoutMs} ms`, { retryable: true, cause: err });
    }
    return new ModelProviderError(`${endpoint.provider}: request to ${endpoint.url} failed: ${describe(err)}`, { retryable: true, cause: err });
  };

  try {
    const response = await endpoint.post(endpoint.url, { headers: endpoint.headers, body: json, signal: http.signal }).catch((err: unknown) => {
      throw ioFailure(err);
    });
    heard();

    /** The body's chunks as they come, each one pushing the silence limit back. */
    async function* chunks(): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of response.body) {
          heard();
          yield chunk;
        }
      } catch (err) {
        throw ioFailure(err);
      }
      readToEnd = true;
    }
    const text = async () => {
      const decoder = new TextDecoder();
      let out = '';
      for await (const chunk of chunks()) out += decoder.decode(chunk, { stream: true });
      return out + decoder.decode();
    };

    if (response.statusCode < 200 || response.statusCode > 299) throw statusError(endpoint, response, await text());
    request.onRateLimits?.(rateLimitReport((name) => headerOf(response.headers, name)));

    return await read({
      isJson: headerOf(response.headers, 'content-type')?.includes('application/json') ?? false,
      text,
      async readEvents(onData) {
        const decoder = new SseDecoder((data) => {
          if (signal.aborted) throw abortError(signal);
          onData(data);
        });
        for await (const chunk of chunks()) decoder.push(chunk);
        decoder.end();
      },
    });
  } finally {
    clearTimeout(timer);
    clearTimeout(silence);
    signal.removeEventListener('abort', onAbort);
    // Stopped reading early: the abort releases the connection. (An abort builds an error with
    // its stack, which showed in profiles of every model call, so a body read in full skips it.)
    if (!readToEnd) http.abort();
  }
}

/** One header of an answer as a string (the first, where a server sent it twice). */
function headerOf(headers: ModelHttpAnswer['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function statusError(endpoint: ProviderEndpoint, response: ModelHttpAnswer, body: string): ModelProviderError {
  const status = response.statusCode;
  const detail = errorBodyMessage(body, endpoint.errorTypeInMessage) ?? (preview(body.trim()) || STATUS_CODES[status]);
  // 408 and 409 are worth another try too, and so is Anthropic's 529 "overloaded".
  return new ModelProviderError(`${endpoint.provider}: HTTP ${status}${detail ? `: ${detail}` : ''}`, {
    status,
    retryable: status === 408 || status === 409 || status === 429 || status >= 500,
    retryAfterMs: retryAfterMs((name) => headerOf(response.headers, name)),
    rateLimits: rateLimitReport((name) => headerOf(response.headers, name)),
  });
}

/** The provider's own message from an error body: `{error: "..."}` or `{error: {type, message}}`. */
function errorBodyMessage(body: string, withType: boolean): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isObject(json)) return undefined;
  if (typeof json.error === 'string') return json.error;
  if (isObject(json.error) && typeof json.error.message === 'string') {
    return withType && typeof json.error.type === 'string' ? `${json.error.type}: ${json.error.message}` : json.error.message;
  }
  return undefined;
}

/** The AbortError generate() rejects with: the caller's own reason when it is one. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'AbortError' ? reason : new DOMException('The model request was aborted.', 'AbortError');
}

/** A network failure in a few words; an error with a cause (a wrapped socket error) names the cause too. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // Connecting to several addresses fails with an AggregateError whose message is empty.
  const own = err.message || String((err as { code?: unknown }).code ?? err.name);
  const cause: unknown = err.cause;
  if (!(cause instanceof Error)) return own;
  const detail = cause.message || (cause as { code?: unknown }).code;
  return detail ? `${own} (${String(detail)})` : own;
}

/**
 * An answer that does not follow the wire format. Retryable: the usual cause is a server or a
 * gateway in front of it failing for a moment (a cut body, an HTML error page with status 200,
 * an empty `choices`), and the agent's retries are few and bounded. A server that always
 * answers so fails the turn after them, with this message.
 */
export function malformedAnswer(provider: string, what: string): ModelProviderError {
  return new ModelProviderError(`${provider}: malformed answer: ${what}`, { retryable: true });
}

/** An error the server reported inside a 2xx answer or a stream. */
export function reportedError(provider: string, message: string, retryable: boolean): ModelProviderError {
  return new ModelProviderError(`${provider}: the server reported an error: ${message}`, { retryable });
}

/** A stream that stopped before its last event: the connection broke, so another try may do. */
export function streamEndedEarly(provider: string): ModelProviderError {
  return new ModelProviderError(`${provider}: the stream ended before the answer was complete`, { retryable: true });
}

/** Parses a whole answer or one stream event (`what` names it in errors) that must be a JSON object. */
export function parseJsonObject(provider: string, text: string, what: string): JsonObject {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw malformedAnswer(provider, `${what} is not JSON: ${preview(text)}`);
  }
  if (!isObject(json)) throw malformedAnswer(provider, `${what} is not an object: ${preview(text)}`);
  return json;
}

/** What a provider parsed from an answer; token counts are undefined where the server gave none. */
export interface ParsedContent {
  text: string;
  toolCalls: ModelToolCall[];
  inputTokens: number | undefined;
  /** Of inputTokens, those read from the prompt cache (none when the server does not say). */
  cachedInputTokens?: number;
  outputTokens: number | undefined;
}

/** The response to `request`, with the token counts the server left out estimated. */
export function modelResponse(request: ModelRequest, answer: ParsedContent, finishReason: string): ModelResponse {
  return {
    text: answer.text,
    toolCalls: answer.toolCalls,
    usage: {
      inputTokens: answer.inputTokens ?? estimateTokens(request.messages.reduce((n, m) => n + messageChars(m), 0)),
      cachedInputTokens: answer.inputTokens === undefined ? 0 : answer.cachedInputTokens ?? 0,
      outputTokens: answer.outputTokens ?? estimateTokens(answer.toolCalls.reduce((n, call) => n + callChars(call), answer.text.length)),
    },
    finishReason,
  };
}

/** A token count as reported, or undefined when it is not a count. */
export function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The rough rule of four characters per token, for servers that report no usage (and for the context budget). */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

export function messageChars(message: ModelMessage): number {
  let chars = message.content?.length ?? 0;
  if (message.role === 'assistant') {
    for (const call of message.toolCalls ?? []) chars += callChars(call);
  }
  return chars;
}

function callChars(call: ModelToolCall): number {
  return call.name.length + call.arguments.length;
}

/** At most 200 characters of `text`, for error messages. */
export function preview(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
