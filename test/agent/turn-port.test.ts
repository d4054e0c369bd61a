/**
 * TaskTurnPort, the TurnPort the turn runner gives the agent: which of its calls reach the turn's
 * writes (each one a transaction). The writes here only record what they are asked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { Config } from '../../src/config.js';
import type { TaskRecord, TurnRecord } from '../../src/domain/records.js';
import { normalizeSpec } from '../../src/domain/spec.js';
import type { TurnQueries } from '../../src/tasks/turn-queries.js';
import type { TurnWrites } from '../../src/tasks/turn-writes.js';
import type { SourceSnapshots } from '../../src/outputs/source-snapshots.js';
import { TaskTurnPort } from '../../src/engine/task-turn-port.js';
import type { Uploads } from '../../src/uploads/uploads.js';

/** The fields of a claimed turn and its task that the port reads; the rest do not matter here. */
const TURN = { id: 'turn_1', taskId: 'tsk_1', accountId: 'acc_1', kind: 'plan', planOnly: false, startedAt: '2025-03-01T07:00:00.000Z' } as TurnRecord;

function taskRecord(state: Pick<TaskRecord, 'phase' | 'activity'>): TaskRecord {
  return { id: 'tsk_1', accountId: 'acc_1', spec: normalizeSpec({ prompt: 'Granite.' }), currentTurnId: 'turn_1', ...state } as TaskRecord;
}

/** A port over writes that record the calls they get. */
function portFor(task: TaskRecord) {
  const calls: { method: string; args: unknown[] }[] = [];
  const writes = {
    setTurnState: async (...args: unknown[]) => void calls.push({ method: 'setTurnState', args: args.slice(2) }),
    turnEvent: async (...args: unknown[]) => (calls.push({ method: 'turnEvent', args: args.slice(2) }), true),
  } as unknown as TurnWrites;
  const deps = { writes, queries: {} as TurnQueries, sources: {} as SourceSnapshots, uploads: {} as Uploads, config: {} as Config, logger: pino({ enabled: false }) };
  const port = new TaskTurnPort(deps, TURN, task, { signal: new AbortController().signal, steps: [], userMessages: ['Granite.'] });
  return { port, calls };
}

describe('TaskTurnPort state changes', () => {
  it('asks for a write only of a state that differs from the one it last set', async () => {
    const { port, calls } = portFor(taskRecord({ phase: 'plan', activity: 'planning' }));

    await port.setState({ phase: 'plan', activity: 'planning' });
    assert.deepEqual(calls, [], 'the state the turn was claimed in is not set again');

    await port.setState({ phase: 'execute', activity: 'thinking' });
    await port.setState({ phase: 'execute', activity: 'thinking' });
    await port.setState({ activity: 'thinking' });
    await port.setState({ phase: 'execute' });
    await port.setState({ activity: 'executing' });
    assert.deepEqual(calls, [
      { method: 'setTurnState', args: [{ phase: 'execute', activity: 'thinking' }] },
      { method: 'setTurnState', args: [{ activity: 'executing' }] },
    ]);
  });

  it('starts from the state of a resumed task', async () => {
    const { port, calls } = portFor(taskRecord({ phase: 'execute', activity: 'thinking' }));

    await port.setState({ phase: 'execute', activity: 'thinking' });
    assert.deepEqual(calls, []);
  });

  it('stores buffered text before a state change, and leaves it buffered when nothing changes', async () => {
    const { port, calls } = portFor(taskRecord({ phase: 'execute', activity: 'thinking' }));

    port.text('Looking ');
    port.text('it up.');
    await port.setState({ phase: 'execute', activity: 'thinking' });
    assert.deepEqual(calls, []);

    await port.setState({ activity: 'executing' });
    assert.deepEqual(calls, [
      { method: 'turnEvent', args: ['text', { text: 'Looking it up.' }] },
      { method: 'setTurnState', args: [{ activity: 'executing' }] },
    ]);
    port.close();
  });
});
