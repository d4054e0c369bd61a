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
