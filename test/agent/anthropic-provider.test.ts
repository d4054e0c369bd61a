import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAnthropicProvider, type AnthropicOptions } from '../../src/agent/providers/anthropic.js';
import type { ModelMessage } from '../../src/agent/providers/model-provider.js';
import { startFakeAnthropic, type FakeAnthropic } from '../kit/fake-anthropic-server.js';
import { abortAndFailureCases, bytes, postAnswering, isProviderError, malformedAnswerCase, request, retryAfterCases, silenceTimeoutCases, statusCases, tokenEstimateCase, type ProviderUnderTest } from '../kit/model-provider-cases.js';

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

function sse(events: object[]): string {
  return events.map((e) => `event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`).join('');
}

const subject: ProviderUnderTest = { fake: () => fake, provider, bareProvider: (baseUrl) => createAnthropicProvider({ baseUrl, model: MODEL }) };

describe('anthropic provider', () => {
  it('streams text: onTextDelta gets each piece, usage comes from message_start and message_delta', async () => {
    const text = 'The quarry holds granite, marble and a little slate — 🪨 mostly granite.';
    fake.script({ text, usage: { input_tokens: 12, output_tokens: 7, cache_read_input_tokens: 3 } });
    const deltas: string[] = [];

    const response = await provider().generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.ok(deltas.length > 1, `expected several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(''), text);
    assert.deepEqual(response, { text, toolCalls: [], usage: { inputTokens: 15, cachedInputTokens: 3, outputTokens: 7 }, finishReason: 'stop' });
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
    assert.deepEqual(sent.body.system, [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
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
      { role: 'assistant', content: [{ type: 'text', text: 'Three.', cache_control: { type: 'ephemeral' } }] },
    ]);
    assert.deepEqual(sent.body.tools, [{ name: 'web_search', description: 'Search the web.', input_schema: parameters, cache_control: { type: 'ephemeral' } }]);
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
      usage: { inputTokens: 40, cachedInputTokens: 0, outputTokens: 9 },
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

    const response = await provider({ post: postAnswering(pieces, 'text/event-stream') }).generate(request({ onTextDelta: (d) => deltas.push(d) }));

    assert.deepEqual(deltas, ['Grès ', '€ 5']);
    assert.deepEqual(response, {
      text: 'Grès € 5',
      toolCalls: [
        { id: 'tu1', name: 'run_code', arguments: '{"code": 1}' },
        { id: 'tu2', name: 'update_spec', arguments: '{}' },
      ],
      usage: { inputTokens: 3, cachedInputTokens: 0, outputTokens: 4 },
      finishReason: 'tool_calls',
    });
  });

  tokenEstimateCase(
    subject,
    sse([
      { type: 'message_start', message: { id: 'm' } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'abcde' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' } },
      { type: 'message_stop' },
    ]),
  );

  it('accepts a plain message answer to a streaming request', async () => {
    const message = JSON.stringify({
      type: 'message',
      content: [{ type: 'tool_use', id: 'toolu_q', name: 'web_search', input: { query: 'q' } }],
      stop_reason: 'tool_use',
      usage: { input_tokens: 5, output_tokens: 6 },
    });

    const response = await provider({ post: postAnswering(bytes(message), 'application/json') }).generate(request());

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
      provider({ post: postAnswering(bytes(cut), 'text/event-stream') }).generate(request()),
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

  statusCases(subject, {
    retryable: [429, 500, 529],
    retryableMessage: /HTTP \d+: \w+: Slow down, quarry\./,
    permanent: [400, 401],
    permanentError: 'messages: at least one message is required',
    permanentMessage: /at least one message is required/,
  });

  abortAndFailureCases(subject, { chunkDelayMs: 300 });

  malformedAnswerCase(subject, [
    ['a body that is not JSON', postAnswering(bytes('<html>oops</html>'), 'text/html'), false],
    ['a stream event that is not JSON', postAnswering(bytes('event: message_start\ndata: {"type": \n\n'), 'text/event-stream'), true],
    ['a message without content', postAnswering(bytes('{"type":"message"}'), 'application/json'), false],
    ['a tool_use without a name', postAnswering(bytes('{"type":"message","content":[{"type":"tool_use","id":"t","input":{}}]}'), 'application/json'), false],
  ], '{"type":"message","role":"assistant"}');

  retryAfterCases(subject);

  silenceTimeoutCases(subject);
});

describe('anthropic provider: prompt caching', () => {
  const TOOLS = [{ name: 'web_search', description: 'Search the web.', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];
  const FIRST: ModelMessage[] = [
    { role: 'system', content: 'Research carefully. '.repeat(100) },
    { role: 'user', content: 'Find granite quarries.' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'toolu_1', name: 'web_search', arguments: '{"query":"granite"}' }] },
    { role: 'tool', toolCallId: 'toolu_1', name: 'web_search', content: 'Rock of Ages, Barre. '.repeat(50) },
  ];
  const SECOND: ModelMessage[] = [...FIRST, { role: 'assistant', content: 'Found one.', toolCalls: [{ id: 'toolu_2', name: 'web_search', arguments: '{"query":"marble"}' }] }, { role: 'tool', toolCallId: 'toolu_2', name: 'web_search', content: 'No results.' }];

  for (const stream of [true, false]) {
    it(`marks breakpoints on the tools, the system message and the newest message, and counts cache reads (${stream ? 'streamed' : 'whole'})`, async () => {
      fake.script({ text: 'One.' }, { text: 'Two.' });
      const p = provider({ stream });
      const first = await p.generate(request({ messages: FIRST, tools: TOOLS }));
      const second = await p.generate(request({ messages: SECOND, tools: TOOLS }));

      for (const sent of fake.requests) {
        const marked = JSON.stringify(sent.body).match(/"cache_control":\{"type":"ephemeral"\}/g) ?? [];
        assert.equal(marked.length, 3, 'three breakpoints of the four allowed');
        assert.deepEqual(sent.body.tools!.at(-1)!.cache_control, { type: 'ephemeral' });
        assert.deepEqual((sent.body.system as { cache_control?: unknown }[])[0]!.cache_control, { type: 'ephemeral' });
        const newest = sent.body.messages!.at(-1)!.content as { cache_control?: unknown }[];
        assert.deepEqual(newest.at(-1)!.cache_control, { type: 'ephemeral' });
      }
      assert.equal(first.usage.cachedInputTokens, 0);
      // The second request extends the first: everything up to the first's newest message is read from the cache.
      const firstAll = first.usage.inputTokens;
      assert.ok(second.usage.cachedInputTokens > 0 && second.usage.cachedInputTokens <= firstAll, `cache read ${second.usage.cachedInputTokens} of ${firstAll}`);
      assert.ok(firstAll - second.usage.cachedInputTokens <= 2, 'the whole earlier request was read from the cache');
      assert.ok(second.usage.inputTokens > firstAll, 'input tokens are input + cache reads + cache writes');
    });
  }
});
