/**
 * The console's event log as a person reads it, built from a task's events without a browser
 * (test/http/console.test.ts drives the whole console in one).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { TaskEvent } from '../../packages/client/src/index.js';
import { entriesOf } from '../../src/console/event-entries.js';

const base = { task_id: 'tsk_1', turn_id: 'turn_1', at: '2026-01-01T00:00:00.000Z' };
const task = { task_id: 'tsk_1', status: 'execute', phase: 'execute', activity: 'thinking', credits_used: 0 } as unknown as Extract<TaskEvent, { type: 'task' }>['task'];

function texts(events: TaskEvent[]): string[] {
  return entriesOf(events).flatMap((e) => (e.kind === 'text' ? [e.text] : []));
}

it('a reply cut off and asked for again shows once, even with a message queued in the middle of it', () => {
  const events: TaskEvent[] = [
    { ...base, seq: 1, type: 'task', reason: 'turn_started', task },
    { ...base, seq: 2, type: 'text', text: 'Rock of Ages is ' },
    { ...base, seq: 3, type: 'task', reason: 'message_queued', task, turn_id: 'turn_2' },
    { ...base, seq: 4, type: 'text', text: 'in Bar' },
    { ...base, seq: 5, type: 'text', text: '', restart: true },
    { ...base, seq: 6, type: 'text', text: 'Rock of Ages is in Barre.' },
    { ...base, seq: 7, type: 'done', outcome: 'completed', output_count: 0, credits_used: 0 },
  ];
  assert.deepEqual(texts(events), ['Rock of Ages is in Barre.']);
});

it('a reply cut off at every try leaves no text before the error, and earlier replies stay', () => {
  const events: TaskEvent[] = [
    { ...base, seq: 1, type: 'task', reason: 'turn_started', task },
    { ...base, seq: 2, type: 'text', text: 'Searching.' },
    { ...base, seq: 3, type: 'tool', call_id: 'c1', name: 'web_search', state: 'finished', input: {}, summary: '3 results', duration_ms: 5 },
    { ...base, seq: 4, type: 'text', text: 'Rock of' },
    { ...base, seq: 5, type: 'text', text: '', restart: true },
    { ...base, seq: 6, type: 'text', text: 'Rock of' },
    { ...base, seq: 7, type: 'text', text: '', restart: true },
    { ...base, seq: 8, type: 'error', error: 'bad_gateway', message: 'The model provider failed after 2 tries.', retryable: true },
  ];
  assert.deepEqual(texts(events), ['Searching.']);
  assert.equal(entriesOf(events).at(-1)?.kind, 'note');
});

it('a cut reply to the outputs check keeps the answer before it, which its restart carries again', () => {
  const events: TaskEvent[] = [
    { ...base, seq: 1, type: 'task', reason: 'turn_started', task },
    { ...base, seq: 2, type: 'text', text: 'No list could be written. ' },
    { ...base, seq: 3, type: 'text', text: 'Rock of' },
    { ...base, seq: 4, type: 'text', text: 'No list could be written. ', restart: true },
    { ...base, seq: 5, type: 'text', text: 'Rock of Ages is in Barre.' },
    { ...base, seq: 6, type: 'done', outcome: 'completed', output_count: 1, credits_used: 0 },
  ];
  assert.deepEqual(texts(events), ['No list could be written. Rock of Ages is in Barre.']);
});

it('shows the caller\'s words once, where they were said, and each turn\'s length at its end', () => {
  const events: TaskEvent[] = [
    { ...base, seq: 1, type: 'task', reason: 'turn_started', task },
    { ...base, seq: 2, type: 'task', reason: 'message_queued', task, turn_id: 'turn_2', message: 'Add Poland too.', at: '2026-01-01T00:00:05.000Z' },
    { ...base, seq: 3, type: 'done', outcome: 'stopped', output_count: 0, credits_used: 0.5, next_turn_id: 'turn_2', at: '2026-01-01T00:00:12.000Z' },
    { ...base, seq: 4, type: 'task', reason: 'turn_started', task, turn_id: 'turn_2', message: 'Add Poland too.', at: '2026-01-01T00:00:12.100Z' },
    { ...base, seq: 5, type: 'done', outcome: 'completed', output_count: 0, credits_used: 0.25, turn_id: 'turn_2', at: '2026-01-01T00:03:17.100Z' },
    { ...base, seq: 6, type: 'task', reason: 'turn_started', task, turn_id: 'turn_3', message: 'Check the dates.', at: '2026-01-01T01:00:00.000Z' },
  ];
  const entries = entriesOf(events);
  assert.deepEqual(entries.filter((e) => e.kind === 'said').map((e) => [e.text, e.queued, e.at]), [
    ['Add Poland too.', true, '2026-01-01T00:00:05.000Z'],
    ['Check the dates.', false, '2026-01-01T01:00:00.000Z'],
  ]);
  const notes = entries.flatMap((e) => (e.kind === 'note' ? [e.text] : []));
  assert.deepEqual(notes, [
    'Turn started',
    // A stop with a message queued: the next turn starts at once, and the log says why.
    'Turn stopped in 12 s · 0.5 credits · the queued message starts the next turn',
    'Turn started on the queued message',
    'Turn completed in 3 min 05 s · 0.25 credits',
    'Turn started',
  ]);
});

it('puts a sub-researcher\'s calls under the research call that started it, by task, with its objective', () => {
  const research = { ...base, type: 'tool' as const, call_id: 'r1', name: 'research', input: { tasks: [{ objective: 'Plants in Sweden' }, { objective: 'Plants in France' }] }, summary: null, duration_ms: null };
  const sub = (seq: number, agent: string, callId: string, state: 'started' | 'finished') => ({ ...base, seq, type: 'tool' as const, agent, call_id: callId, name: 'fetch_url', state, input: {}, summary: state, duration_ms: state === 'finished' ? 40 : null });
  const events: TaskEvent[] = [
    { ...research, seq: 1, state: 'started' },
    sub(2, 'r1/1', 'c1', 'started'),
    sub(3, 'r1/0', 'c1', 'started'),
    sub(4, 'r1/1', 'c1', 'finished'),
    { ...research, seq: 5, state: 'finished', summary: '2 tasks done', duration_ms: 900 },
  ];
  const entries = entriesOf(events);
  assert.equal(entries.length, 1, 'one line: the research call');
  const [line] = entries;
  assert.ok(line?.kind === 'tool');
  assert.equal(line.event.state, 'finished');
  assert.deepEqual(line.researchers.map((r) => [r.index, r.objective, r.calls.map((c) => `${c.call_id}:${c.state}`)]), [
    [0, 'Plants in Sweden', ['c1:started']],
    [1, 'Plants in France', ['c1:finished']],
  ]);
});
