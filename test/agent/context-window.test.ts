import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fitToContext } from '../../src/agent/context-window.js';
import type { ModelMessage } from '../../src/agent/providers/model-provider.js';

const tool = (id: string, chars: number): ModelMessage => ({ role: 'tool', toolCallId: id, name: 'fetch_url', content: `${id}:`.padEnd(chars, 'x') });
const call = (id: string): ModelMessage => ({ role: 'assistant', content: null, toolCalls: [{ id, name: 'fetch_url', arguments: '{}' }] });

test('a conversation within the budget is sent unchanged', () => {
  const messages: ModelMessage[] = [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }, call('a'), tool('a', 1000)];
  assert.equal(fitToContext(messages, 10_000), messages);
});

test('the oldest tool results are shortened first, the newest two and the user words never', () => {
  const messages: ModelMessage[] = [
    { role: 'system', content: 'system prompt' },
    { role: 'user', content: 'the question'.padEnd(5000, '?') },
    call('a'), tool('a', 50_000),
    call('b'), tool('b', 50_000),
    call('c'), tool('c', 50_000),
    call('d'), tool('d', 50_000),
  ];
  const fitted = fitToContext(messages, 110_000);
  const contents = fitted.filter((m) => m.role === 'tool').map((m) => m.content);
  assert.ok(contents[0]!.length < 1000 && contents[0]!.startsWith('a:') && /event history/.test(contents[0]!));
  assert.ok(contents[1]!.length < 1000, 'b is cut too: a alone did not make it fit');
  assert.equal(contents[2]!.length, 50_000);
  assert.equal(contents[3]!.length, 50_000);
  assert.equal(fitted[1], messages[1]);
  const total = fitted.reduce((n, m) => n + (m.role === 'assistant' ? 2 + 9 : m.content.length), 0);
  assert.ok(total <= 110_000);
  assert.equal(messages.filter((m) => m.role === 'tool').every((m) => m.content.length === 50_000), true, 'the input is not changed');
});

test('when cutting cannot make it fit, it still cuts what it may and sends the rest', () => {
  const messages: ModelMessage[] = [{ role: 'user', content: 'x'.repeat(200_000) }, call('a'), tool('a', 10_000), call('b'), tool('b', 10_000), call('c'), tool('c', 10_000)];
  const fitted = fitToContext(messages, 50_000);
  assert.ok((fitted[2] as { content: string }).content.length < 1000);
  assert.equal((fitted[6] as { content: string }).content.length, 10_000);
});
