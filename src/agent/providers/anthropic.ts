/**
 * A ModelProvider for Anthropic's Messages API (POST {baseUrl}/v1/messages). The system prompt
 * travels apart from the messages, tools are {name, description, input_schema}, tool calls and
 * their results are tool_use / tool_result content blocks, and consecutive messages of one role
 * are merged (all tool results of a step go back in one user message). Streams via server-sent
 * events by default.
 */
import { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MAX_TOKENS } from '../../config.js';
import { randomUUID } from 'node:crypto';
import type { ModelMessage, ModelProvider, ModelProviderError, ModelRequest, ModelResponse, ModelToolCall, ModelToolDefinition } from './model-provider.js';
import { endpointLimits, isObject, malformedAnswer, modelResponse, parseJsonObject, postToProvider, preview, reportedError, streamEndedEarly, tokenCount, type HttpProviderOptions, type JsonObject, type ParsedContent, type ProviderAnswer, type ProviderEndpoint } from './provider-http.js';

export interface AnthropicOptions extends HttpProviderOptions {
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
}

const NAME = 'anthropic';

/** A prompt-cache breakpoint: the API caches the request up to and including the block that carries it. */
const CACHE_BREAKPOINT = { type: 'ephemeral' } as const;

type ContentBlock = (
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string }
) & { cache_control?: typeof CACHE_BREAKPOINT };

interface WireMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

/** What either wire format yields. */
interface ParsedAnswer extends ParsedContent {
  stopReason: string | undefined;
}

/** Error types that say the request itself is wrong: retrying cannot help. */
const PERMANENT_ERRORS = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'request_too_large', 'billing_error']);

export function createAnthropicProvider(opts: AnthropicOptions): ModelProvider {
  const root = (opts.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, '').replace(/\/v1$/, '');
  const url = `${root}/v1/messages`;
  const stream = opts.stream ?? true;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    'anthropic-version': opts.apiVersion ?? '2023-06-01',
  };
  if (opts.apiKey) headers['x-api-key'] = opts.apiKey;
  const endpoint: ProviderEndpoint = { provider: NAME, url, headers, ...endpointLimits(opts), errorTypeInMessage: true };

  async function generate(request: ModelRequest): Promise<ModelResponse> {
    const answer = await postToProvider(endpoint, requestBody(opts, request, stream), request, async (reply) =>
      stream && !reply.isJson ? readEventStream(reply, request) : parseMessage(await reply.text()),
    );
    return modelResponse(request, answer, finishReason(answer.stopReason));
  }

  return { specificationVersion: 'v1', name: NAME, generate };
}

function requestBody(opts: AnthropicOptions, request: ModelRequest, stream: boolean): JsonObject {
  const system = request.messages
    .filter((m): m is Extract<ModelMessage, { role: 'system' }> => m.role === 'system')
    .map((m) => m.content)
    .filter((c) => c !== '')
    .join('\n\n');
  // Cache breakpoints (3 of the 4 allowed) on the tools, the system message and the newest
  // message: each request of a turn extends the previous one, so all but the new part is read
  // from the cache (decisions §16.3).
  const messages = toWireMessages(request.messages);
  const newest = messages.at(-1)?.content.at(-1);
  if (newest) newest.cache_control = CACHE_BREAKPOINT;
  const body: JsonObject = {
    model: opts.model,
    max_tokens: opts.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    messages,
    stream,
  };
  if (system) body.system = [{ type: 'text', text: system, cache_control: CACHE_BREAKPOINT }];
  if (request.tools.length > 0) {
    const tools = request.tools.map(toWireTool);
    tools[tools.length - 1]!.cache_control = CACHE_BREAKPOINT;
    body.tools = tools;
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
async function readEventStream(reply: ProviderAnswer, { onTextDelta }: ModelRequest): Promise<ParsedAnswer> {
  const answer: ParsedAnswer = { text: '', toolCalls: [], inputTokens: undefined, outputTokens: undefined, stopReason: undefined };
  const blocks = new Map<number, StreamingToolUse | 'text' | 'other'>();
  const calls: { index: number; call: StreamingToolUse }[] = [];
  let sawStop = false;

  await reply.readEvents((data) => {
    const event = parseJsonObject(NAME, data, 'a stream event');
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

  if (!sawStop) throw streamEndedEarly(NAME);
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

/**
 * Input tokens count the cached ones too: they are all tokens the model read (`input_tokens` is
 * only those after the last cache breakpoint). A stream reports them in message_start; a
 * message_delta that repeats them says the same.
 */
function readUsage(answer: ParsedAnswer, usage: unknown): void {
  if (!isObject(usage)) return;
  const input = tokenCount(usage.input_tokens);
  const cacheCreate = tokenCount(usage.cache_creation_input_tokens) ?? 0;
  const cacheRead = tokenCount(usage.cache_read_input_tokens) ?? 0;
  if (input !== undefined) {
    answer.inputTokens = input + cacheCreate + cacheRead;
    answer.cachedInputTokens = cacheRead;
  }
  const output = tokenCount(usage.output_tokens);
  if (output !== undefined) answer.outputTokens = output;
}

function parseMessage(text: string): ParsedAnswer {
  const json = parseJsonObject(NAME, text, 'the answer');
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

/** An error event inside a stream (or an error object in a 200 answer). Overloaded and API errors may pass. */
function errorInBody(error: unknown): ModelProviderError {
  const type = isObject(error) && typeof error.type === 'string' ? error.type : undefined;
  const message = isObject(error) && typeof error.message === 'string' ? error.message : preview(JSON.stringify(error) ?? 'unknown error');
  return reportedError(NAME, `${type ? `${type}: ` : ''}${message}`, type === undefined || !PERMANENT_ERRORS.has(type));
}

function malformed(what: string): ModelProviderError {
  return malformedAnswer(NAME, what);
}
