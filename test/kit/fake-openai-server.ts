/**
 * A fake OpenAI-compatible chat-completions server for the tests and the benchmarks. Replies
 * are scripted in advance (a FIFO queue) or computed by a responder; every request is recorded.
 * Answers honour the request's `stream` flag: real server-sent events, or one JSON completion.
 */
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
  /** Default: about four characters per token of the request's messages and of the answer. */
  usage?: { prompt_tokens: number; completion_tokens: number };
}

/** The request body as the client sent it; the fields a chat-completions client sends are typed. */
export interface FakeRequestBody extends FakeModelRequestBody {
  messages?: Record<string, unknown>[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  stream_options?: { include_usage?: boolean };
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
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  finishReason: 'stop' | 'tool_calls';
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const fake = await startFakeModelServer<FakeReply, FakeRequestBody>({
    name: 'OpenAI',
    path: '/v1/chat/completions',
    checkAnswer: { text: '', usage: { prompt_tokens: 0, completion_tokens: 0 } },
    errorBody: (status, message) => ({ error: { message, type: errorType(status) } }),
    json: (reply, body, index) => completionObject(toCompletion(reply, body, index)),
    events: (reply, body, index) => streamEvents(toCompletion(reply, body, index), body.stream_options?.include_usage === true),
  });
  return { ...fake, url: `${fake.url}/v1` };
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

function errorType(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 400 && status < 500) return 'invalid_request_error';
  return 'server_error';
}
