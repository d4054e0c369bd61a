/**
 * A fake OpenAI-compatible chat-completions server for the tests and the benchmarks. Replies
 * are scripted in advance (a FIFO queue) or computed by a responder; every request is recorded.
 * Answers honour the request's `stream` flag: real server-sent events, or one JSON completion.
 */
import { createHash } from 'node:crypto';
import { split, startFakeModelServer, type FakeModelReply, type FakeModelRequestBody, type FakeModelServer, type RecordedModelRequest } from './fake-model-server.js';

export interface FakeToolCall {
  /** Default `call_<request index>_<position>`. */
  id?: string;
  name: string;
  /** An object is JSON-encoded; a string is sent as is, so malformed JSON can be tested. */
  arguments: unknown;
}

/** Errors are answered as `{error: {message, type}}`. */
export interface FakeReply extends FakeModelReply {
  toolCalls?: FakeToolCall[];
  /**
   * Default: about four characters per token of the request's tools and messages and of the
   * answer, with `prompt_tokens_details.cached_tokens` by OpenAI's rule (cachedTokens).
   */
  usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
}

/** The request body as the client sent it; the fields a chat-completions client sends are typed. */
export interface FakeRequestBody extends FakeModelRequestBody {
  messages?: Record<string, unknown>[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  stream_options?: { include_usage?: boolean };
  prompt_cache_key?: string;
  max_completion_tokens?: number;
  max_tokens?: number;
}

export type RecordedRequest = RecordedModelRequest<FakeRequestBody>;

/** Its `url` is the base URL, ending in `/v1`. */
export type FakeOpenAI = FakeModelServer<FakeReply, FakeRequestBody>;

/** A reply resolved into exactly what is sent. */
interface Completion {
  id: string;
  created: number;
  model: string;
  text: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
  finishReason: 'stop' | 'tool_calls' | 'length';
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const seenPrefixes = new Set<string>();
  const fake = await startFakeModelServer<FakeReply, FakeRequestBody>({
    name: 'OpenAI',
    path: '/v1/chat/completions',
    checkAnswer: { text: '', usage: { prompt_tokens: 0, completion_tokens: 0 } },
    errorBody: (status, message) => ({ error: { message, type: errorType(status) } }),
    // OpenAI's headers: limits a minute, resets as durations ("6m0s", "20ms").
    rateLimitHeaders: ({ perMinute, remaining, resetMs }) => ({
      'x-ratelimit-limit-requests': String(perMinute),
      'x-ratelimit-remaining-requests': String(remaining),
      'x-ratelimit-reset-requests': goDuration(resetMs),
    }),
    json: (reply, body, index) => completionObject(toCompletion(reply, body, index, seenPrefixes)),
    events: (reply, body, index) => streamEvents(toCompletion(reply, body, index, seenPrefixes), body.stream_options?.include_usage === true),
  });
  return { ...fake, url: `${fake.url}/v1` };
}

/** The prompt as the model reads it, in order: the tools, then the messages. */
function promptText(body: FakeRequestBody): string {
  return JSON.stringify(body.tools ?? []) + (body.messages ?? []).map((m) => JSON.stringify(m)).join('');
}

/** Characters in one step of the cache: 128 tokens at the fake's four characters a token. */
const CACHE_STEP_CHARS = 128 * 4;
/** Steps of the shortest prefix read from the cache: 1,024 tokens. */
const CACHE_MIN_STEPS = 1024 / 128;

/**
 * OpenAI's prompt caching as documented: a prompt that shares a prefix of at least 1,024 tokens
 * with an earlier one reads that prefix from the cache, counted in steps of 128 tokens. `seen`
 * holds a digest of each earlier prompt's prefix at every step (this prompt's are added), so a
 * prompt is read once rather than compared with every earlier one: a benchmark's thousands of
 * turns made that comparison the harness's own bottleneck.
 */
export function cachedTokens(prompt: string, seen: Set<string>): number {
  const prefix = createHash('sha256');
  let cachedSteps = 0;
  for (let steps = 1; steps * CACHE_STEP_CHARS <= prompt.length; steps++) {
    prefix.update(prompt.slice((steps - 1) * CACHE_STEP_CHARS, steps * CACHE_STEP_CHARS));
    const digest = prefix.copy().digest('base64');
    // Prefixes nest: one seen before means every shorter one was too.
    if (seen.has(digest)) cachedSteps = steps;
    else seen.add(digest);
  }
  return cachedSteps >= CACHE_MIN_STEPS ? cachedSteps * 128 : 0;
}

function toCompletion(reply: FakeReply, body: FakeRequestBody, index: number, seenPrefixes: Set<string>): Completion {
  const toolCalls = (reply.toolCalls ?? []).map((call, i) => ({
    id: call.id ?? `call_${index}_${i}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : (JSON.stringify(call.arguments) ?? ''),
  }));
  // A text answer longer than the request's limit is cut there (four characters a token), as a
  // model stops at its limit and says so with `finish_reason: "length"`.
  const limit = body.max_completion_tokens ?? body.max_tokens;
  const cut = limit !== undefined && toolCalls.length === 0 && reply.text !== undefined && reply.text.length > limit * 4;
  const text = cut ? reply.text!.slice(0, limit * 4) : reply.text;
  const outputChars = toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, text?.length ?? 0);
  const prompt = promptText(body);
  // Every prompt is cached, whether or not the reply states its own usage.
  const cached = cachedTokens(prompt, seenPrefixes);
  const usage = reply.usage ?? {
    prompt_tokens: Math.ceil(prompt.length / 4),
    completion_tokens: Math.ceil(outputChars / 4),
    prompt_tokens_details: { cached_tokens: cached },
  };
  return {
    id: `chatcmpl-fake-${index}`,
    created: Math.floor(Date.now() / 1000),
    model: body.model ?? 'fake-model',
    // Like OpenAI: no text next to tool calls is `null`.
    text: text ?? (toolCalls.length > 0 ? null : ''),
    toolCalls,
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    finishReason: toolCalls.length > 0 ? 'tool_calls' : cut ? 'length' : 'stop',
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

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'server_error';
}

/** A duration as OpenAI writes its resets: "20ms" under a second, else "1m5.5s", "6m0s", "12s". */
export function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Number(((ms % 60_000) / 1000).toFixed(3));
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}
