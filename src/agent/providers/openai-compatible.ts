/**
 * A ModelProvider for any server that speaks the OpenAI chat-completions API (OpenAI, vLLM,
 * llama.cpp, Ollama, LM Studio, ...). Streams via server-sent events by default.
 */
import { randomUUID } from 'node:crypto';
import type { MaxTokensField } from '../../config.js';
import type { ModelMessage, ModelProvider, ModelProviderError, ModelRequest, ModelResponse, ModelToolCall, ModelToolDefinition } from './model-provider.js';
import { endpointLimits, isObject, malformedAnswer, modelResponse, parseJsonObject, postToProvider, preview, reportedError, streamEndedEarly, tokenCount, type HttpProviderOptions, type JsonObject, type ProviderAnswer, type ProviderEndpoint } from './provider-http.js';

export interface OpenAICompatibleOptions extends HttpProviderOptions {
  /** The API root, e.g. `http://127.0.0.1:8080/v1`; a trailing slash is fine. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string;
  /** Ask for a server-sent-events stream. Default true. */
  stream?: boolean;
  /** Send the request's cacheKey as `prompt_cache_key` (QUARRY_MODEL_CACHE_KEY). Default true; some servers refuse unknown fields. */
  sendCacheKey?: boolean;
  /** The most tokens a reply may have, and the field that says so (QUARRY_MODEL_MAX_TOKENS_FIELD); none sent without it. */
  maxTokens?: { field: MaxTokensField; tokens: number };
}

const NAME = 'openai-compatible';

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
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  const endpoint: ProviderEndpoint = { provider: NAME, url, headers, ...endpointLimits(opts), errorTypeInMessage: false };

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    // Some servers ignore `stream: true` and answer with a plain completion.
    const answer = await postToProvider(endpoint, requestBody(opts, request, stream), request, async (reply) =>
      stream && !reply.isJson ? readEventStream(reply, request) : parseCompletion(await reply.text()),
    );
    const inputTokens = tokenCount(answer.usage?.prompt_tokens);
    // prompt_tokens counts the cached ones too; servers without a prompt cache leave the details out.
    const details = isObject(answer.usage?.prompt_tokens_details) ? answer.usage.prompt_tokens_details : {};
    const cachedInputTokens = tokenCount(details.cached_tokens);
    const outputTokens = tokenCount(answer.usage?.completion_tokens);
    return modelResponse(request, { ...answer, inputTokens, cachedInputTokens, outputTokens }, answer.finishReason ?? 'unknown');
  }

  return { specificationVersion: 'v1', name: NAME, generate };
}

function requestBody(opts: OpenAICompatibleOptions, request: ModelRequest, stream: boolean): JsonObject {
  const body: JsonObject = { model: opts.model, messages: request.messages.map(toWireMessage), stream };
  if ((opts.sendCacheKey ?? true) && request.cacheKey) body.prompt_cache_key = request.cacheKey;
  if (opts.maxTokens) body[opts.maxTokens.field] = opts.maxTokens.tokens;
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
async function readEventStream(reply: ProviderAnswer, { onTextDelta }: ModelRequest): Promise<ParsedAnswer> {
  const answer: ParsedAnswer = { text: '', toolCalls: [], usage: undefined, finishReason: undefined };
  const calls = new Map<number, ModelToolCall>();
  let sawDone = false;

  await reply.readEvents((data) => {
    if (data === '[DONE]') {
      sawDone = true;
      return;
    }
    const chunk = parseJsonObject(NAME, data, 'a stream event');
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

  if (!sawDone && answer.finishReason === undefined) throw streamEndedEarly(NAME);
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
  const json = parseJsonObject(NAME, text, 'the answer');
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
 * An error reported inside a 2xx answer (some gateways do this when the upstream model fails
 * mid-answer). Nothing says it is permanent, so it is treated like a 5xx.
 */
function errorInBody(error: unknown): ModelProviderError {
  const message = isObject(error) && typeof error.message === 'string' ? error.message : preview(JSON.stringify(error));
  return reportedError(NAME, message, true);
}

function malformed(what: string): ModelProviderError {
  return malformedAnswer(NAME, what);
}
