import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicProvider, type AnthropicOptions } from '../src/agent/providers/anthropic.js';
import { ModelProviderError, type ModelRequest } from '../src/agent/providers/model-provider.js';
import { startFakeAnthropic, type FakeAnthropic } from './fake-model/fake-anthropic-server.js';

const MODEL = 'claude-fake-1';

let fake: FakeAnthropic;

beforeEach(async () => {
  fake = await startFakeAnthropic();
});

afterEach(async () => {
  await fake.close();
});

function provider(opts: Partial<AnthropicOptions> = {}) {
  return createAnthropicProvider({ baseUrl: fake.url, model: MODEL, apiKey: 'sk-ant-test', ...opts });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], signal: new AbortController().signal, ...overrides };
}

function fetchAnswering(pieces: Uint8Array[], contentType: string): typeof fetch {
  return async () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const piece of pieces) controller.enqueue(piece);
          controller.close();
        },
      }),
      { status: 200, headers: { 'content-type': contentType } },
    );
}

function bytes(text: string): Uint8Array[] {
  return [new TextEncoder().encode(text)];
}

function sse(events: object[]): string {
  return events.map((e) => `event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitUntil(condition: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function isProviderError(expected: { status?: number; retryable: boolean; message?: RegExp }) {
  return (err: unknown) => {
    assert.ok(err instanceof ModelProviderError, `expected a ModelProviderError, got ${String(err)}`);
    assert.equal(err.status, expected.status);
    assert.equal(err.retryable, expected.retryable);
    if (expected.message) assert.match(err.message, expected.message);
    return true;
  };
}

function isAbortError(err: unknown): boolean {
  assert.ok(err instanceof Error);
  assert.equal(err.name, 'AbortError');
  assert.ok(!(err instanceof ModelProviderError));
  return true;
}

describe('anthropic provider', () => {
  it('streams text: onTextDelta gets each piece, usage comes from message_start and message_delta', async () => {
    const text = 'The quarry holds granite, marble and a little slate — 🪨 mostly granite.';
    fake.script({ text, usage: { input_tokens: 12, output_tokens: 7, cache_read_input_tokens: 3 } });
    const deltas: string[] = [];

    const response = await provider().generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.ok(deltas.length > 1, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(''), text);
    assert.deepEqual(response, { text, toolCalls: [], usage: { inputTokens: 15, outputTokens: 7 }, finishReason: 'stop' });
    const [sent] = fake.requests;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-test');
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.headers.authorization, undefined);
    assert.equal(sent.body.model, MODEL);
    assert.equal(sent.body.stream, true);
    assert.equal(sent.body.max_tokens, 8192);
    assert.ok(!('tools' in sent.body) && !('tool_choice' in sent.body) && !('system' in sent.body));
  });

  it('sends the system prompt apart, tools with input_schema, and tool turns as content blocks', async () => {
    const parameters = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };
    await provider({ baseUrl: `${fake.url}/v1/`, maxTokens: 1024 }).generate(
      request({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Find quarries.' },
          { role: 'user', content: 'In Vermont.' },
          {
            role: 'assistant',
            content: 'Searching.',
            toolCalls: [
              { id: 'toolu_1', name: 'web_search', arguments: '{"query":"quarries"}' },
              { id: 'toolu_2', name: 'fetch_url', arguments: '{"url": "https://ex' },
            ],
          },
          { role: 'tool', toolCallId: 'toolu_1', name: 'web_search', content: '3 results' },
          { role: 'tool', toolCallId: 'toolu_2', name: 'fetch_url', content: 'Error: bad JSON' },
          { role: 'assistant', content: null, toolCalls: [] },
          { role: 'user', content: 'Now write the rows.' },
          { role: 'assistant', content: 'Three.' },
        ],
        tools: [{ name: 'web_search', description: 'Search the web.', parameters }],
      }),
    );

    const [sent] = fake.requests;
    assert.equal(sent.path, '/v1/messages', 'a trailing /v1/ on baseUrl is not doubled');
    assert.equal(sent.body.max_tokens, 1024);
    assert.equal(sent.body.system, 'Be brief.');
    assert.deepEqual(sent.body.messages, [
      { role: 'user', content: [{ type: 'text', text: 'Find quarries.' }, { type: 'text', text: 'In Vermont.' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Searching.' },
          { type: 'tool_use', id: 'toolu_1', name: 'web_search', input: { query: 'quarries' } },
          { type: 'tool_use', id: 'toolu_2', name: 'fetch_url', input: { _unparsed_arguments: '{"url": "https://ex' } },
        ],
      },
      {
        // Both results in one user turn; the empty assistant turn is dropped and the nudge joins it.
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: '3 results' },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'Error: bad JSON' },
          { type: 'text', text: 'Now write the rows.' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Three.' }] },
    ]);
    assert.deepEqual(sent.body.tools, [{ name: 'web_search', description: 'Search the web.', input_schema: parameters }]);
    assert.deepEqual(sent.body.tool_choice, { type: 'auto' });
  });

  it('reassembles streamed tool_use input from input_json_delta pieces, malformed JSON kept as is', async () => {
    fake.script({
      text: 'Let me look.',
      toolCalls: [
        { id: 'toolu_a', name: 'web_search', input: { query: 'granite quarries in Vermont', max_results: 3 } },
        { id: 'toolu_b', name: 'fetch_url', input: '{"url": "https://example.com/quarr' },
      ],
    });
    const deltas: string[] = [];

    const response = await provider().generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.equal(response.text, 'Let me look.');
    assert.equal(deltas.join(''), 'Let me look.');
    assert.deepEqual(response.toolCalls, [
      { id: 'toolu_a', name: 'web_search', arguments: '{"query":"granite quarries in Vermont","max_results":3}' },
      { id: 'toolu_b', name: 'fetch_url', arguments: '{"url": "https://example.com/quarr' },
    ]);
    assert.equal(response.finishReason, 'tool_calls');
  });

  it('reads text, tool calls and usage from a non-streamed answer', async () => {
    fake.script({
      text: 'Checking.',
      toolCalls: [{ id: 'toolu_x', name: 'read_input', input: { upload_id: 'upl_1' } }],
      usage: { input_tokens: 40, output_tokens: 9 },
    });
    const deltas: string[] = [];

    const response = await provider({ stream: false }).generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.deepEqual(response, {
      text: 'Checking.',
      toolCalls: [{ id: 'toolu_x', name: 'read_input', arguments: '{"upload_id":"upl_1"}' }],
      usage: { inputTokens: 40, outputTokens: 9 },
      finishReason: 'tool_calls',
    });
    assert.deepEqual(deltas, []);
    const [sent] = fake.requests;
    assert.equal(sent.body.stream, false);
  });

  it('maps stop reasons: max_tokens is length', async () => {
    fake.script({ text: 'Cut sh', stopReason: 'max_tokens' });
    const response = await provider().generate(request());
    assert.equal(response.finishReason, 'length');
  });

  it('parses events cut at any byte, with pings, thinking blocks, CRLF and a tool_use without deltas', async () => {
    const events = sse([
      { type: 'message_start', message: { id: 'm', usage: { input_tokens: 3, output_tokens: 1 } } },
      { type: 'ping' },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Grès ' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: '€ 5' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'tu1', name: 'run_code', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"co' } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: 'de": 1}' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'tu2', name: 'update_spec', input: {} } },
      { type: 'content_block_stop', index: 3 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } },
      { type: 'message_stop' },
    ]).replace(/\n/g, '\r\n');
    const all = new TextEncoder().encode(`: comment\r\n\r\n${events}`);
    const pieces = Array.from(all, (_, i) => all.subarray(i, i + 1));
    const deltas: string[] = [];

    const response = await provider({ fetch: fetchAnswering(pieces, 'text/event-stream') }).generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.deepEqual(deltas, ['Grès ', '€ 5']);
    assert.deepEqual(response, {
      text: 'Grès € 5',
      toolCalls: [
        { id: 'tu1', name: 'run_code', arguments: '{"code": 1}' },
        { id: 'tu2', name: 'update_spec', arguments: '{}' },
      ],
      usage: { inputTokens: 3, outputTokens: 4 },
      finishReason: 'tool_calls',
    });
  });

  it('estimates tokens as ceil(chars / 4) when the server reports no usage', async () => {
    const stream = sse([
      { type: 'message_start', message: { id: 'm' } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'abcde' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' } },
      { type: 'message_stop' },
    ]);

    const response = await provider({ fetch: fetchAnswering(bytes(stream), 'text/event-stream') }).generate(
      request({ messages: [{ role: 'system', content: 'x'.repeat(6) }, { role: 'user', content: 'y'.repeat(7) }] }),
    );

    assert.deepEqual(response.usage, { inputTokens: 4, outputTokens: 2 });
  });

  it('accepts a plain message answer to a streaming request', async () => {
    const message = JSON.stringify({
      type: 'message',
      content: [{ type: 'tool_use', id: 'toolu_q', name: 'web_search', input: { query: 'q' } }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 5, output_tokens: 6 },
    });

    const response = await provider({ fetch: fetchAnswering(bytes(message), 'application/json') }).generate(request());

    assert.deepEqual(response.toolCalls, [{ id: 'toolu_q', name: 'web_search', arguments: '{"query":"q"}' }]);
    assert.equal(response.finishReason, 'tool_calls');
  });

  it('reports a stream cut short as retryable', async () => {
    const cut = sse([
      { type: 'message_start', message: { id: 'm', usage: { input_tokens: 1, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hal' } },
    ]);
    await assert.rejects(
      provider({ fetch: fetchAnswering(bytes(cut), 'text/event-stream') }).generate(request()),
      isProviderError({ retryable: true, message: /ended before the answer was complete/ }),
    );
  });

  it('reports an overloaded_error event mid-stream as retryable, an invalid_request_error as not', async () => {
    fake.script(
      { text: 'Some text first', streamErrorAfter: 4, errorType: 'overloaded_error', errorMessage: 'Overloaded' },
      { text: 'x', streamErrorAfter: 1, errorType: 'invalid_request_error', errorMessage: 'prompt is too long' },
    );
    await assert.rejects(provider().generate(request()), isProviderError({ retryable: true, message: /overloaded_error: Overloaded/ }));
    await assert.rejects(provider().generate(request()), isProviderError({ retryable: false, message: /prompt is too long/ }));
  });

  for (const status of [429, 500, 529]) {
    it(`answers ${status} with a retryable ModelProviderError carrying the provider's message`, async () => {
      fake.script({ status, errorMessage: 'Slow down, quarry.' });

      await assert.rejects(provider().generate(request()), isProviderError({ status, retryable: true, message: /HTTP \d+: \w+: Slow down, quarry\./ }));
    });
  }

  for (const status of [400, 401]) {
    it(`answers ${status} with a ModelProviderError that is not retryable`, async () => {
      fake.script({ status, errorMessage: 'messages: at least one message is required' });

      await assert.rejects(provider().generate(request()), isProviderError({ status, retryable: false, message: /at least one message is required/ }));
    });
  }

  it('rejects at once with AbortError when aborted during a hanging call, and drops the connection', async () => {
    fake.script({ hang: true });
    const controller = new AbortController();
    const pending = provider().generate(request({ signal: controller.signal }));
    await fake.waitForRequests(1);
    assert.equal(fake.pending(), 1);

    controller.abort();

    await assert.rejects(within(pending, 500), isAbortError);
    await waitUntil(() => fake.pending() === 0, 1000);
  });

  it('rejects with AbortError when aborted in the middle of a stream', async () => {
    fake.script({ text: 'a'.repeat(400), chunkDelayMs: 300 });
    const controller = new AbortController();
    const deltas: string[] = [];
    let firstDelta!: () => void;
    const gotFirstDelta = new Promise<void>((resolve) => (firstDelta = resolve));

    const pending = provider().generate(
      request({
        signal: controller.signal,
        onTextDelta: (d) => {
          deltas.push(d);
          firstDelta();
        },
      }),
    );
    await gotFirstDelta;
    controller.abort();

    await assert.rejects(within(pending, 200), isAbortError);
    assert.equal(deltas.length, 1);
    await waitUntil(() => fake.pending() === 0, 1000);
  });

  it('passes on no delta after onTextDelta aborts, even within one network chunk', async () => {
    fake.script({ text: 'Several deltas, all written at once.' });
    const controller = new AbortController();
    const deltas: string[] = [];

    await assert.rejects(
      provider().generate(
        request({
          signal: controller.signal,
          onTextDelta: (d) => {
            deltas.push(d);
            controller.abort();
          },
        }),
      ),
      isAbortError,
    );
    assert.equal(deltas.length, 1);
  });

  it('sends nothing when the signal is already aborted', async () => {
    await assert.rejects(provider().generate(request({ signal: AbortSignal.abort() })), isAbortError);
    assert.equal(fake.requests.length, 0);
  });

  it('turns requestTimeoutMs into a retryable ModelProviderError, not an AbortError', async () => {
    fake.script({ hang: true });

    await assert.rejects(within(provider({ requestTimeoutMs: 50 }).generate(request()), 1000), isProviderError({ retryable: true, message: /within 50 ms/ }));
  });

  it('reports a refused connection as a retryable ModelProviderError', async () => {
    const { url } = fake;
    await fake.close();

    await assert.rejects(createAnthropicProvider({ baseUrl: url, model: MODEL }).generate(request()), isProviderError({ retryable: true, message: /ECONNREFUSED/ }));
  });

  it('reports a malformed answer as a ModelProviderError that is not retryable', async () => {
    const cases: [string, AnthropicOptions['fetch'], boolean][] = [
      ['a body that is not JSON', fetchAnswering(bytes('<html>oops</html>'), 'text/html'), false],
      ['a stream event that is not JSON', fetchAnswering(bytes('event: message_start\ndata: {"type": \n\n'), 'text/event-stream'), true],
      ['a message without content', fetchAnswering(bytes('{"type":"message"}'), 'application/json'), false],
      ['a tool_use without a name', fetchAnswering(bytes('{"type":"message","content":[{"type":"tool_use","id":"t","input":{}}]}'), 'application/json'), false],
    ];
    for (const [what, fetchImpl, stream] of cases) {
      await assert.rejects(provider({ fetch: fetchImpl, stream }).generate(request()), isProviderError({ retryable: false, message: /malformed answer/ }), what);
    }
  });
});
