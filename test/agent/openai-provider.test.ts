import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenAICompatibleProvider, type OpenAICompatibleOptions } from '../../src/agent/providers/openai-compatible.js';
import type { ModelMessage } from '../../src/agent/providers/model-provider.js';
import { startFakeOpenAI, type FakeOpenAI } from '../kit/fake-openai-server.js';
import { abortAndFailureCases, bytes, postAnswering, isProviderError, malformedAnswerCase, request, retryAfterCases, silenceTimeoutCases, statusCases, tokenEstimateCase, type ProviderUnderTest } from '../kit/model-provider-cases.js';
import { loadConfig, MAX_TOKENS_FIELDS } from '../../src/config.js';
import { waitIdle } from '../kit/harness.js';
import { fakeModel, startTestHarness } from '../kit/task-api.js';

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

const subject: ProviderUnderTest = { fake: () => fake, provider, bareProvider: (baseUrl) => createOpenAICompatibleProvider({ baseUrl, model: MODEL }) };

describe('openai-compatible provider', () => {
  it('streams text: onTextDelta gets each piece and the pieces join into the answer', async () => {
    const text = 'The quarry holds granite, marble and a little slate — 🪨 mostly granite.';
    fake.script({ text, usage: { prompt_tokens: 12, completion_tokens: 7 } });
    const deltas: string[] = [];

    const response = await provider({ apiKey: 'sk-test' }).generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.ok(deltas.length > 1, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(''), text);
    assert.deepEqual(response, { text, toolCalls: [], usage: { inputTokens: 12, cachedInputTokens: 0, outputTokens: 7 }, finishReason: 'stop' });
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

  it('follows no redirect: a 307 to the real endpoint fails the call with that status and the endpoint hears nothing', async () => {
    const redirecting = http.createServer((req, res) => {
      req.resume();
      res.writeHead(307, { location: `${fake.url}/chat/completions` }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = redirecting.address() as AddressInfo;
      await assert.rejects(provider({ baseUrl: `http://127.0.0.1:${port}/v1` }).generate(request()), isProviderError({ status: 307, retryable: false }));
      assert.equal(fake.requests.length, 0);
    } finally {
      redirecting.closeAllConnections();
      await new Promise((resolve) => redirecting.close(resolve));
    }
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
      usage: { inputTokens: 40, cachedInputTokens: 0, outputTokens: 9 },
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

    const response = await provider({ post: postAnswering(pieces, 'text/event-stream') }).generate(
      request({ onTextDelta: (d) => deltas.push(d) }),
    );

    assert.deepEqual(deltas, ['Grès ', '€ 5']);
    assert.deepEqual(response, {
      text: 'Grès € 5',
      toolCalls: [{ id: 'c1', name: 'run_code', arguments: '{"code": 1}' }],
      usage: { inputTokens: 3, cachedInputTokens: 0, outputTokens: 4 },
      finishReason: 'tool_calls',
    });
  });

  tokenEstimateCase(subject, 'data: {"choices":[{"index":0,"delta":{"content":"abcde"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n');

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

    const response = await provider({ post: postAnswering(bytes(completion), 'application/json') }).generate(request());

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
        provider({ post: postAnswering(bytes(sse), 'text/event-stream') }).generate(request()),
        isProviderError({ retryable: true, message }),
        what,
      );
    }
  });

  statusCases(subject, {
    retryable: [429, 500],
    retryableMessage: /HTTP \d+: Slow down, quarry\./,
    permanent: [400],
    permanentError: "'messages' must not be empty.",
    permanentMessage: /'messages' must not be empty\./,
  });

  abortAndFailureCases(subject, { chunkDelayMs: 400 });

  malformedAnswerCase(subject, [
    ['a body that is not JSON', postAnswering(bytes('<html>oops</html>'), 'text/html'), false],
    ['a stream event that is not JSON', postAnswering(bytes('data: {"choices": [\n\n'), 'text/event-stream'), true],
    ['a completion without choices', postAnswering(bytes('{"object":"chat.completion"}'), 'application/json'), false],
  ], '{"object":"chat.completion","choices":[]}');

  retryAfterCases(subject);

  silenceTimeoutCases(subject);
});

describe('openai-compatible provider: prompt caching', () => {
  /** A conversation long enough to cache (OpenAI caches prefixes of 1,024 tokens and more). */
  const LONG: ModelMessage[] = [{ role: 'system', content: 'Research carefully. '.repeat(300) }, { role: 'user', content: 'Find granite quarries.' }];
  const NEXT: ModelMessage[] = [...LONG, { role: 'assistant', content: 'Searching.' }, { role: 'user', content: 'Go on.' }];

  for (const stream of [true, false]) {
    it(`sends the task id as prompt_cache_key and reads cached_tokens (${stream ? 'from the stream\'s final usage chunk' : 'from a whole answer'})`, async () => {
      fake.script({ text: 'One.' }, { text: 'Two.' });
      const p = provider({ stream });
      const first = await p.generate(request({ messages: LONG, cacheKey: 'tsk_granite' }));
      const second = await p.generate(request({ messages: NEXT, cacheKey: 'tsk_granite' }));

      assert.deepEqual(fake.requests.map((r) => r.body.prompt_cache_key), ['tsk_granite', 'tsk_granite']);
      assert.equal(first.usage.cachedInputTokens, 0, 'nothing was cached before the first request');
      const cached = second.usage.cachedInputTokens;
      assert.ok(cached >= 1024 && cached % 128 === 0, `the shared prefix is read from the cache in steps of 128 tokens (${cached})`);
      assert.ok(cached <= first.usage.inputTokens && second.usage.inputTokens > cached, 'input tokens count the cached ones too');
    });
  }

  it('sends no prompt_cache_key when told not to (QUARRY_MODEL_CACHE_KEY=0)', async () => {
    fake.script({ text: 'One.' });
    await provider({ sendCacheKey: false }).generate(request({ messages: LONG, cacheKey: 'tsk_granite' }));
    assert.ok(!('prompt_cache_key' in fake.requests[0]!.body));
  });
});

describe('openai-compatible provider: an answer\'s token limit', () => {
  // About 225 tokens at the fake's four characters a token.
  const LONG_ANSWER = 'Granite from Barre. '.repeat(45);

  it('sends no limit unless told which field carries it, and the answer comes whole', async () => {
    fake.script({ text: LONG_ANSWER });
    const response = await provider().generate(request());
    const { body } = fake.requests[0]!;
    assert.ok(!('max_completion_tokens' in body) && !('max_tokens' in body), JSON.stringify(body).slice(0, 200));
    assert.equal(response.text, LONG_ANSWER);
    assert.equal(response.finishReason, 'stop');
  });

  for (const field of MAX_TOKENS_FIELDS) {
    it(`sends the limit as ${field}: the answer stops at it`, async () => {
      fake.script({ text: LONG_ANSWER });
      const response = await provider({ maxTokens: { field, tokens: 16 } }).generate(request());
      assert.equal(fake.requests[0]!.body[field], 16);
      assert.equal(response.usage.outputTokens, 16);
      assert.equal(response.text, LONG_ANSWER.slice(0, 64));
      assert.equal(response.finishReason, 'length');
    });
  }

  it('takes the field from QUARRY_MODEL_MAX_TOKENS_FIELD, refusing any other name', () => {
    const env = { QUARRY_MODEL_BASE_URL: fake.url, QUARRY_MODEL_MAX_TOKENS: '16' };
    assert.equal(loadConfig(env).model?.maxTokensField, undefined);
    const model = loadConfig({ ...env, QUARRY_MODEL_MAX_TOKENS_FIELD: 'max_completion_tokens' }).model;
    assert.deepEqual([model?.maxTokensField, model?.maxTokens], ['max_completion_tokens', 16]);
    assert.throws(() => loadConfig({ ...env, QUARRY_MODEL_MAX_TOKENS_FIELD: 'maxTokens' }), /QUARRY_MODEL_MAX_TOKENS_FIELD must be one of max_completion_tokens, max_tokens .*got "maxTokens"/);
  });

  it('reaches a running Quarry\'s model calls', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MODEL_MAX_TOKENS_FIELD: 'max_tokens', QUARRY_MODEL_MAX_TOKENS: '300' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'Granite quarries of Vermont?' } });
    assert.equal(created.status, 200, created.text);
    await waitIdle(h, created.body.task_id);
    const sent = fakeModel(h).requests;
    assert.ok(sent.length > 0);
    for (const r of sent) assert.equal(r.body.max_tokens, 300);
  });
});
