/**
 * TaskTurnPort, the TurnPort the turn runner gives the agent: which of its calls reach the turn's
 * writes (each one a transaction), and what a withdrawn reply's `restart` carries. The writes here
 * only record what they are asked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { Config } from '../../src/config.js';
import type { StoredStep } from '../../src/agent/turn-port.js';
import type { TaskRecord, TurnRecord } from '../../src/domain/records.js';
import { normalizeSpec } from '../../src/domain/spec.js';
import type { TurnQueries } from '../../src/tasks/turn-queries.js';
import { LeaseLost, type TurnWrites } from '../../src/tasks/turn-writes.js';
import type { SourceSnapshots } from '../../src/outputs/source-snapshots.js';
import { TaskTurnPort } from '../../src/engine/task-turn-port.js';
import { within } from '../kit/bounded-waits.js';
import type { Uploads } from '../../src/uploads/uploads.js';

/** The fields of a claimed turn and its task that the port reads; the rest do not matter here. */
const TURN = { id: 'turn_1', taskId: 'tsk_1', accountId: 'acc_1', kind: 'plan', planOnly: false, replyTextStored: false, startedAt: '2025-03-01T07:00:00.000Z' } as TurnRecord;

function taskRecord(state: Pick<TaskRecord, 'phase' | 'activity'>): TaskRecord {
  return { id: 'tsk_1', accountId: 'acc_1', spec: normalizeSpec({ prompt: 'Granite.' }), currentTurnId: 'turn_1', ...state } as TaskRecord;
}

/** A port over writes that record the calls they get (of a turn taken up again: `turn` and `steps` as stored). */
function portFor(task: TaskRecord, resumed: { turn?: Partial<TurnRecord>; steps?: StoredStep[] } = {}) {
  const calls: { method: string; args: unknown[] }[] = [];
  const record = (method: string) => async (...args: unknown[]) => {
    calls.push({ method, args: args.slice(1) });
    return true;
  };
  const writes = {
    setTurnState: record('setTurnState'),
    replyText: record('replyText'),
    withdrawReplyText: record('withdrawReplyText'),
    toolEvent: record('toolEvent'),
    checkpointStep: async (...args: unknown[]) => {
      calls.push({ method: 'checkpointStep', args: [args[1], args[4]] });
      return { balance: 100, turnCredits: 1 };
    },
  } as unknown as TurnWrites;
  const deps = { writes, queries: {} as TurnQueries, sources: {} as SourceSnapshots, uploads: {} as Uploads, config: {} as Config, logger: pino({ enabled: false }) };
  const port = new TaskTurnPort(deps, { ...TURN, ...resumed.turn }, task, { signal: new AbortController().signal, steps: resumed.steps ?? [], userMessages: ['Granite.'] });
  return { port, calls };
}

const USAGE = { tokensIn: 10, tokensInCached: 0, tokensOut: 5, toolCalls: 0, compactions: 0 };
const answer = (text: string, phase: 'plan' | 'execute' = 'execute'): StoredStep => ({ type: 'model', text, toolCalls: [], phase });

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
      { method: 'replyText', args: ['Looking it up.', true] },
      { method: 'setTurnState', args: [{ activity: 'executing' }] },
    ]);
    port.close();
  });
});

describe('TaskTurnPort text of a reply asked for again', () => {
  const task = () => taskRecord({ phase: 'execute', activity: 'thinking' });

  it('marks the first stored text of a reply, clears the mark with its checkpoint, and withdraws nothing of a reply that stored none', async () => {
    const { port, calls } = portFor(task());

    port.text('Rock of ');
    await port.flushText();
    port.text('Ages.');
    await port.flushText();
    await port.checkpoint(1, answer('Rock of Ages.'), USAGE);
    await port.withdrawText();
    assert.deepEqual(calls, [
      { method: 'replyText', args: ['Rock of ', true] },
      { method: 'replyText', args: ['Ages.', false] },
      { method: 'checkpointStep', args: [1, { text: '', stored: true }] },
    ]);
  });

  it('withdraws a cut reply with the text of the answer before it that no tool event or phase change parted from it', async () => {
    const { port, calls } = portFor(task());

    port.text('No list.');
    await port.checkpoint(1, answer('No list.'), USAGE);
    port.text('Rock of');
    await port.flushText();
    await port.withdrawText();
    assert.deepEqual(calls.at(-1), { method: 'withdrawReplyText', args: ['No list.'] });

    await port.tool({ call_id: 'c1', name: 'web_search', state: 'started', input: {}, summary: null, duration_ms: null });
    port.text('Barre');
    await port.flushText();
    await port.withdrawText();
    assert.deepEqual(calls.at(-1), { method: 'withdrawReplyText', args: [''] }, 'a tool event starts a reply');
  });

  it('taken up again with reply text stored: withdraws it, keeping the text-only answers its steps end with in the last phase', async () => {
    const steps: StoredStep[] = [
      answer('A plan.', 'plan'),
      { type: 'nudge', content: 'Carry the plan out.' },
      { type: 'model', text: 'Searching.', toolCalls: [{ id: 'c1', name: 'web_search', arguments: '{}' }], phase: 'execute' },
      { type: 'tool', callId: 'c1', name: 'web_search', content: '[]' },
      answer('No list.'),
      { type: 'nudge', content: 'What the outputs lack.', check: true },
    ];
    const { port, calls } = portFor(task(), { turn: { replyTextStored: true }, steps });
    await port.withdrawText();
    assert.deepEqual(calls, [{ method: 'withdrawReplyText', args: ['No list.'] }]);

    const plain = portFor(task(), { steps });
    await plain.port.withdrawText();
    assert.deepEqual(plain.calls, [], 'nothing stored of a reply under way: nothing to withdraw');
  });

  it('taken up again in the first reply after the move to execute: keeps none of the plan answer (the move started a reply)', async () => {
    const steps: StoredStep[] = [answer('A plan.', 'plan'), { type: 'nudge', content: 'Carry the plan out.' }];
    const { port, calls } = portFor(task(), { turn: { replyTextStored: true }, steps });
    await port.withdrawText();
    assert.deepEqual(calls, [{ method: 'withdrawReplyText', args: [''] }]);
  });
});

describe('TaskTurnPort writes no call waits for', () => {
  const leaseLostWrites = { replyText: async () => { throw new LeaseLost('turn_1'); }, setWaiting: async () => { throw new LeaseLost('turn_1'); } } as unknown as TurnWrites;
  const portLosingLease = () => {
    let reported!: () => void;
    const lost = new Promise<void>((resolve) => (reported = resolve));
    const deps = { writes: leaseLostWrites, queries: {} as TurnQueries, sources: {} as SourceSnapshots, uploads: {} as Uploads, config: {} as Config, logger: pino({ enabled: false }) };
    const port = new TaskTurnPort(deps, TURN, taskRecord({ phase: 'execute', activity: 'thinking' }), {
      signal: new AbortController().signal, steps: [], userMessages: ['Granite.'], onLeaseLost: reported,
    });
    return { port, lost };
  };

  it('a timed text flush that finds the lease held by another worker ends the turn', async () => {
    const { port, lost } = portLosingLease();
    port.text('Granite quarries');
    await within(lost, 5000, 'the lost lease reported by the timed flush');
  });

  it('a waiting state write that finds the lease held by another worker ends the turn', async () => {
    const { port, lost } = portLosingLease();
    port.waitingOn('model_rate_limit');
    await within(lost, 5000, 'the lost lease reported by the waiting state write');
  });
});
