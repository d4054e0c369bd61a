import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAICompatibleProvider, type OpenAICompatibleOptions } from '../src/agent/providers/openai-compatible.js';
import { ModelProviderError, type ModelRequest } from '../src/agent/providers/model-provider.js';
import { startFakeOpenAI, type FakeOpenAI } from './fake-model/fake-openai-server.js';

const MODEL = 'fake-model-1';

let fake: FakeOpenAI;

beforeEach(async () => {
  fake = await startFakeOpenAI();
});

afterEach(async () => {
  await fake.close();
});

function provider(opts: Partial<OpenAICompatibleOptions> = {}) {
  return createOpenAICompatibleProvider({ baseUrl: fake.url, model: MODEL, ...opts });
}

function request(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ role: 'user', content: 'Hi' }], tools: [], signal: new AbortController().signal, ...overrides };
}

/** A fetch that answers every call with this body, given as byte pieces to cut events anywhere. */
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

/** Fails instead of hanging the suite when a promise does not settle in time. */
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

describe('openai-compatible provider', () => {
  it('streams text: onTextDelta gets each piece and the pieces join into the answer', async () => {
    const text = 'The quarry holds granite, marble and a little slate — 🪨 mostly granite.';
    fake.script({ text, usage: { prompt_tokens: 12, completion_tokens: 7 } });
    const deltas: string[] = [];

    const response = await provider({ apiKey: 'sk-test' }).generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.ok(deltas.length > 1, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(''), text);
    assert.deepEqual(response, { text, toolCalls: [], usage: { inputTokens: 12, outputTokens: 7 }, finishReason: 'stop' });
    const [sent] = fake.requests;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, 'Bearer sk-test');
    assert.equal(sent.body.model, MODEL);
    assert.equal(sent.body.stream, true);
    assert.deepEqual(sent.body.stream_options, { include_usage: true });
    assert.ok(!('tools' in sent.body) && !('tool_choice' in sent.body), 'no tools, so no tools field');
  });

  it('sends the conversation and the tools in the OpenAI wire format', async () => {
    const parameters = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };
    await provider({ baseUrl: `${fake.url}/` }).generate(
      request({
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Find quarries.' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'web_search', arguments: '{"query":"quarries"}' }] },
          { role: 'tool', toolCallId: 'call_1', name: 'web_search', content: '3 results' },
          { role: 'assistant', content: 'Three.' },
        ],
        tools: [{ name: 'web_search', description: 'Search the web.', parameters }],
      }),
    );

    const [sent] = fake.requests;
    assert.equal(sent.path, '/v1/chat/completions', 'a trailing slash on baseUrl is not doubled');
    assert.equal(sent.headers.authorization, undefined);
    assert.deepEqual(sent.body.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Find quarries.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'web_search', arguments: '{"query":"quarries"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '3 results' },
      { role: 'assistant', content: 'Three.' },
    ]);
    assert.deepEqual(sent.body.tools, [{ type: 'function', function: { name: 'web_search', description: 'Search the web.', parameters } }]);
    assert.equal(sent.body.tool_choice, 'auto');
  });

  it('reassembles streamed tool calls by index, arguments intact even when malformed', async () => {
    fake.script({
      text: 'Let me look.',
      toolCalls: [
        { id: 'call_a', name: 'web_search', arguments: { query: 'granite quarries in Vermont', limit: 3 } },
        { id: 'call_b', name: 'fetch_url', arguments: '{"url": "https://example.com/quarr' },
      ],
    });
    const deltas: string[] = [];

    const response = await provider().generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.equal(response.text, 'Let me look.');
    assert.equal(deltas.join(''), 'Let me look.');
    assert.deepEqual(response.toolCalls, [
      { id: 'call_a', name: 'web_search', arguments: '{"query":"granite quarries in Vermont","limit":3}' },
      { id: 'call_b', name: 'fetch_url', arguments: '{"url": "https://example.com/quarr' },
    ]);
    assert.equal(response.finishReason, 'tool_calls');
  });

  it('reads text, tool calls and usage from a non-streamed answer', async () => {
    fake.script({
      text: 'Checking.',
      toolCalls: [{ id: 'call_x', name: 'read_input', arguments: { id: 'upl_1' } }],
      usage: { prompt_tokens: 40, completion_tokens: 9 },
    });

    const response = await provider({ stream: false }).generate(request());

    assert.deepEqual(response, {
      text: 'Checking.',
      toolCalls: [{ id: 'call_x', name: 'read_input', arguments: '{"id":"upl_1"}' }],
      usage: { inputTokens: 40, outputTokens: 9 },
      finishReason: 'tool_calls',
    });
    const [sent] = fake.requests;
    assert.equal(sent.body.stream, false);
    assert.ok(!('stream_options' in sent.body));
  });

  it('parses events cut at any byte, with comments, CRLF line ends and extra fields', async () => {
    const events = [
      ': keep-alive',
      '',
      'event: message',
      'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Grès "}}]}',
      '',
      'id: 7',
      'data: {"choices":[{"index":0,"delta":{"content":"€ 5"}}]}',
      '',
      'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"run_code","arguments":"{\\"co"}}]}}]}',
      '',
      'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"de\\": 1}"}}]}}]}',
      '',
      'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
      '',
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}',
      '',
      'data: [DONE]',
      '',
      '',
    ].join('\r\n');
    const all = new TextEncoder().encode(events);
    // One byte at a time: every line, CRLF pair and multi-byte character (è, €) is cut.
    const pieces = Array.from(all, (_, i) => all.subarray(i, i + 1));
    const deltas: string[] = [];

    const response = await provider({ fetch: fetchAnswering(pieces, 'text/event-stream') }).generate(
      request({ onTextDelta: (d) => deltas.push(d) }),
    );

    assert.deepEqual(deltas, ['Grès ', '€ 5']);
    assert.deepEqual(response, {
      text: 'Grès € 5',
      toolCalls: [{ id: 'c1', name: 'run_code', arguments: '{"code": 1}' }],
      usage: { inputTokens: 3, outputTokens: 4 },
      finishReason: 'tool_calls',
    });
  });

  it('estimates tokens as ceil(chars / 4) when the server reports no usage', async () => {
    const sse = 'data: {"choices":[{"index":0,"delta":{"content":"abcde"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n';

    const response = await provider({ fetch: fetchAnswering(bytes(sse), 'text/event-stream') }).generate(
      request({ messages: [{ role: 'system', content: 'x'.repeat(6) }, { role: 'user', content: 'y'.repeat(7) }] }),
    );

    assert.deepEqual(response.usage, { inputTokens: 4, outputTokens: 2 });
  });

  it('accepts a plain completion to a streaming request, and gives id-less tool calls an id', async () => {
    const completion = JSON.stringify({
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: null, tool_calls: [{ type: 'function', function: { name: 'web_search', arguments: '{}' } }] },
          finish_reason: 'tool_calls',
        },
      ],
    });

    const response = await provider({ fetch: fetchAnswering(bytes(completion), 'application/json') }).generate(request());

    assert.equal(response.text, '');
    assert.equal(response.toolCalls.length, 1);
    assert.match(response.toolCalls[0].id, /^call_./);
    assert.equal(response.toolCalls[0].name, 'web_search');
  });

  it('reports a stream cut short, or an error sent inside the stream, as retryable', async () => {
    const cases: [string, string, RegExp][] = [
      ['cut short', 'data: {"choices":[{"index":0,"delta":{"content":"Hal"}}]}\n\n', /ended before the answer was complete/],
      ['error event', 'data: {"error":{"message":"upstream overloaded"}}\n\n', /upstream overloaded/],
    ];
    for (const [what, sse, message] of cases) {
      await assert.rejects(
        provider({ fetch: fetchAnswering(bytes(sse), 'text/event-stream') }).generate(request()),
        isProviderError({ retryable: true, message }),
        what,
      );
    }
  });

  for (const status of [429, 500]) {
    it(`answers ${status} with a retryable ModelProviderError carrying the provider's message`, async () => {
      fake.script({ status, errorMessage: 'Slow down, quarry.' });

      await assert.rejects(
        provider().generate(request()),
        isProviderError({ status, retryable: true, message: /HTTP \d+: Slow down, quarry\./ }),
      );
    });
  }

  it('answers 400 with a ModelProviderError that is not retryable', async () => {
    fake.script({ status: 400, errorMessage: "'messages' must not be empty." });

    await assert.rejects(
      provider().generate(request()),
      isProviderError({ status: 400, retryable: false, message: /'messages' must not be empty\./ }),
    );
  });

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
    // The text comes in four deltas 400 ms apart: aborting after the first must not wait for the next.
    fake.script({ text: 'a'.repeat(400), chunkDelayMs: 400 });
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

    await assert.rejects(
      within(provider({ requestTimeoutMs: 50 }).generate(request()), 1000),
      isProviderError({ retryable: true, message: /within 50 ms/ }),
    );
  });

  it('reports a refused connection as a retryable ModelProviderError', async () => {
    const { url } = fake;
    await fake.close();

    await assert.rejects(
      createOpenAICompatibleProvider({ baseUrl: url, model: MODEL }).generate(request()),
      isProviderError({ retryable: true, message: /ECONNREFUSED/ }),
    );
  });

  it('reports a malformed answer as a ModelProviderError that is not retryable', async () => {
    const cases: [string, OpenAICompatibleOptions['fetch'], boolean][] = [
      ['a body that is not JSON', fetchAnswering(bytes('<html>oops</html>'), 'text/html'), false],
      ['a stream event that is not JSON', fetchAnswering(bytes('data: {"choices": [\n\n'), 'text/event-stream'), true],
      ['a completion without choices', fetchAnswering(bytes('{"object":"chat.completion"}'), 'application/json'), false],
    ];
    for (const [what, fetchImpl, stream] of cases) {
      await assert.rejects(
        provider({ fetch: fetchImpl, stream }).generate(request()),
        isProviderError({ retryable: false, message: /malformed answer/ }),
        what,
      );
    }
  });
});
