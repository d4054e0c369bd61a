/**
 * The task life cycle over HTTP (interface §3, decisions §2, §4, §8, §13): creates, messages and
 * their queue, execute, stop, delete, patch, blocking waits, plan_only, the events a turn
 * records, tool errors sent back to the model, and a service with no model configured.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitIdle, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, getTask, startTestHarness, taskEvents, taskState } from '../kit/task-api.js';
import type { FakeReply, RecordedRequest } from '../kit/fake-openai-server.js';

// ---- helpers --------------------------------------------------------------------------------

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Holds the model requests whose index is in `held` until the test releases them; the others
 * answer "Done." at once. `release(i)` answers request i (default "Done.").
 */
function holdRequests(h: Harness, held: number[]): { release(index: number, reply?: FakeReply): void } {
  const gates = new Map(held.map((i) => [i, deferred<FakeReply>()]));
  fakeModel(h).setResponder((_body, index) => gates.get(index)?.promise ?? { text: 'Done.' });
  return { release: (index, reply = { text: 'Done.' }) => gates.get(index)!.resolve(reply) };
}

/** The user messages the model was sent in one request, in order. */
function userTexts(req: RecordedRequest | undefined): string[] {
  assert.ok(req, 'the model got this request');
  return (req.body.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
}

/**
 * The caller's messages and instructions the model was sent, in order: the user messages without
 * the task's prompt (whether the prompt is sent exactly once is checked on its own).
 */
function callerTexts(req: RecordedRequest | undefined): string[] {
  return userTexts(req).filter((text) => text !== PROMPT);
}

function toolMessages(req: RecordedRequest | undefined): { tool_call_id: string; content: string }[] {
  assert.ok(req, 'the model got this request');
  return (req.body.messages ?? []).filter((m) => m.role === 'tool') as { tool_call_id: string; content: string }[];
}

function assertError(res: { status: number; body: Json; text: string }, status: number, error: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, error, res.text);
  assert.equal(typeof res.body.message, 'string');
  assert.equal(typeof res.body.retryable, 'boolean');
  assert.equal(typeof res.body.request_id, 'string');
}

const PROMPT = 'Find every company making Li-ion cells in the EU.';
const MAKERS = {
  id: 'makers',
  kind: 'table',
  columns: [
    { name: 'company', type: 'string', required: true },
    { name: 'capacity_gwh', type: 'number' },
  ],
};
const SPEC = { name: 'EU battery makers', prompt: PROMPT, outputs: [MAKERS] };
const SOURCE = { url: 'https://example.com/makers', title: 'Makers list' };

async function createBySpec(h: Harness, body: Json = {}): Promise<Json> {
  const res = await h.request('POST', '/task/start', { body: { task: SPEC, ...body } });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

// ---- creates ----------------------------------------------------------------------------------

describe('create', () => {
  it('by prompt returns at once with status execute (wait in the body does not block), then plan/idle when the turn ends', async (t) => {
    const h = await startTestHarness(t);
    const gate = holdRequests(h, [0]);
    const res = await h.request('POST', '/task', { body: { prompt: PROMPT, wait: true } });
    assert.equal(res.status, 200, res.text);
    const task = res.body;
    assert.match(task.task_id, /^tsk_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(task.status, 'execute');
    assert.equal(task.phase, 'plan');
    assert.equal(task.activity, 'planning');
    assert.equal(task.status_url, `/task/${task.task_id}`);
    assert.equal(task.output_url, `/task/${task.task_id}/output`);
    assert.equal(task.stream_url, `/task/${task.task_id}/stream`);

    await fakeModel(h).waitForRequests(1);
    const running = await taskState(h, task.task_id);
    assert.equal(running.active, true);
    assert.equal(running.status, 'execute');
    assert.equal(running.turn?.kind, 'plan');
    assert.deepEqual(userTexts(fakeModel(h).requests[0]), [PROMPT]);

    gate.release(0);
    await waitIdle(h, task.task_id);
    const done = await getTask(h, task.task_id);
    assert.equal(done.status, 'plan');
    assert.equal(done.phase, 'plan');
    assert.equal(done.activity, 'idle');
    assert.equal((await taskState(h, task.task_id)).turn, null);
  });

  it('by spec returns at once with status execute (phase execute), then plan/idle when the turn ends', async (t) => {
    const h = await startTestHarness(t);
    const gate = holdRequests(h, [0]);
    const task = await createBySpec(h, { wait: 30 });
    assert.equal(task.status, 'execute');
    assert.equal(task.phase, 'execute');
    assert.equal(task.activity, 'executing');
    assert.equal(task.name, SPEC.name);
    assert.equal(task.output_count, 1);

    await fakeModel(h).waitForRequests(1);
    const running = await taskState(h, task.task_id);
    assert.equal(running.active, true);
    assert.equal(running.turn?.kind, 'execute');

    gate.release(0);
    await waitIdle(h, task.task_id);
    const done = await getTask(h, task.task_id);
    assert.equal(done.status, 'plan');
    assert.equal(done.activity, 'idle');
    assert.deepEqual(done.spec.outputs.map((o: Json) => o.id), ['makers']);
  });

  it('POST /task/start with a spec and an existing task_id is 409 task_exists; with a new task_id it creates under that id', async (t) => {
    const h = await startTestHarness(t);
    const created = await h.request('POST', '/task/start', { body: { task: SPEC, task_id: 'client-task-1' } });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.task_id, 'client-task-1');
    assert.equal(created.body.status, 'execute');
    await waitIdle(h, 'client-task-1');

    const again = await h.request('POST', '/task/start', { body: { task: { ...SPEC, name: 'Other' }, task_id: 'client-task-1' } });
    assertError(again, 409, 'task_exists');
    assert.equal(again.body.task_id, 'client-task-1');
    assert.equal(again.body.retryable, false);
    assert.equal((await getTask(h, 'client-task-1')).name, SPEC.name, 'the existing task is unchanged');
    assert.equal(fakeModel(h).requests.length, 1, 'no turn was started by the refused create');
  });
});

// ---- messages ---------------------------------------------------------------------------------

describe('messages while a turn runs', () => {
  it('continue answers 202 accepted with queued_messages; the messages run FIFO as user messages when turns end', async (t) => {
    const h = await startTestHarness(t);
    const gate = holdRequests(h, [0]);
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);

    const messages = ['first follow-up', 'second follow-up', 'third follow-up'];
    for (const [i, message] of messages.entries()) {
      const res = await h.request('POST', `/task/${task.task_id}/continue`, { body: { message } });
      assert.equal(res.status, 202, res.text);
      assert.equal(res.body.status, 'accepted');
      assert.equal(res.body.task_id, task.task_id);
      assert.equal(res.body.queued_messages, i + 1);
    }
    const queued = await taskState(h, task.task_id);
    assert.equal(queued.active, true);
    assert.equal(queued.queued_messages, 3);
    assert.equal(fakeModel(h).requests.length, 1, 'queued messages wait for the running turn');
    const reasons = (await taskEvents(h, task.task_id)).filter((e) => e.type === 'task').map((e) => e.reason);
    assert.equal(reasons.filter((r) => r === 'message_queued').length, 3);

    gate.release(0);
    await waitIdle(h, task.task_id);
    const reqs = fakeModel(h).requests;
    assert.equal(reqs.length, 4, 'one turn per queued message');
    assert.deepEqual(callerTexts(reqs[1]), [messages[0]]);
    assert.deepEqual(callerTexts(reqs[2]), [messages[0], messages[1]]);
    assert.deepEqual(callerTexts(reqs[3]), messages);
    const after = await taskState(h, task.task_id);
    assert.equal(after.queued_messages, 0);
    assert.equal(after.status, 'plan');
    const events = await taskEvents(h, task.task_id);
    const done = events.filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => e.outcome), ['completed', 'completed', 'completed', 'completed']);
    // The caller's words are in the history: where each was queued, and where its turn started.
    const said = (reason: string) => events.filter((e) => e.type === 'task' && e.reason === reason).map((e) => e.message);
    assert.deepEqual(said('message_queued'), messages);
    assert.deepEqual(said('turn_started'), [undefined, ...messages], 'the first turn ran the spec: no caller\'s words');
  });

  it('the 17th queued message is 409 task_executing (QUARRY_MAX_QUEUED_MESSAGES defaults to 16)', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    for (let i = 1; i <= 16; i++) {
      const res = await h.request('POST', `/task/${task.task_id}/continue`, { body: { message: `message ${i}` } });
      assert.equal(res.status, 202, `message ${i}: ${res.text}`);
      assert.equal(res.body.queued_messages, i);
    }
    const full = await h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'message 17' } });
    assertError(full, 409, 'task_executing');
    assert.equal(full.body.retryable, true);
    assert.equal(full.body.task_id, task.task_id);
    assert.equal((await taskState(h, task.task_id)).queued_messages, 16);
  });

  it('a lower QUARRY_MAX_QUEUED_MESSAGES is honoured', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MAX_QUEUED_MESSAGES: '2' } });
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    for (const message of ['a', 'b']) {
      assert.equal((await h.request('POST', `/task/${task.task_id}/continue`, { body: { message } })).status, 202);
    }
    assertError(await h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'c' } }), 409, 'task_executing');
    // A prompt sent with the task_id is a message and meets the same full queue.
    assertError(await h.request('POST', '/task', { body: { prompt: 'd', task_id: task.task_id } }), 409, 'task_executing');
  });

  it('execute while a turn runs is 409 task_executing and is never queued', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    const res = await h.request('POST', `/task/${task.task_id}/execute`, { body: { instruction: 'refresh' } });
    assertError(res, 409, 'task_executing');
    assert.equal(res.body.retryable, true);
    assert.equal(res.body.task_id, task.task_id);
    const s = await taskState(h, task.task_id);
    assert.equal(s.queued_messages, 0);
    assert.equal(s.active, true);

    // When the running turn ends, nothing runs after it.
    const stopped = await h.request('POST', `/task/${task.task_id}/stop`, { body: {} });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.status, 'plan');
    assert.equal((await taskState(h, task.task_id)).active, false);
    assert.equal(fakeModel(h).requests.length, 1);
  });

  it('POST /task with an existing task_id is a message (200 when idle, 202 while running); an unknown task_id is 404 with task_created false', async (t) => {
    const h = await startTestHarness(t);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    fakeModel(h).script({ hang: true });
    const first = await h.request('POST', '/task', { body: { prompt: 'Also add Norway.', task_id: task.task_id, wait: true } });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.task_id, task.task_id);
    assert.equal(first.body.status, 'execute');
    await fakeModel(h).waitForRequests(2);
    assert.deepEqual(callerTexts(fakeModel(h).requests[1]), ['Also add Norway.']);

    const queued = await h.request('POST', '/task', { body: { prompt: 'And Sweden.', task_id: task.task_id } });
    assert.equal(queued.status, 202, queued.text);
    assert.equal(queued.body.status, 'accepted');
    assert.equal(queued.body.queued_messages, 1);
    const viaStart = await h.request('POST', '/task/start', { body: { prompt: 'And Finland.', task_id: task.task_id } });
    assert.equal(viaStart.status, 202, viaStart.text);
    assert.equal(viaStart.body.queued_messages, 2);

    const stopped = await h.request('POST', `/task/${task.task_id}/stop`, { body: {} });
    assert.equal(stopped.status, 200);
    await waitIdle(h, task.task_id);
    assert.deepEqual(callerTexts(fakeModel(h).requests[3]), ['Also add Norway.', 'And Sweden.', 'And Finland.']);

    const unknown = await h.request('POST', '/task', { body: { prompt: 'hello', task_id: 'no-such-task' } });
    assertError(unknown, 404, 'task_not_found');
    assert.equal(unknown.body.task_created, false);
    assert.equal(unknown.body.task_id, 'no-such-task');
    assertError(await h.request('GET', '/task/no-such-task'), 404, 'task_not_found');
  });
});

describe('continue and execute on an idle task', () => {
  it('continue answers 200 at once and a turn runs with the message as a user message', async (t) => {
    const h = await startTestHarness(t);
    const gate = holdRequests(h, [1]);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    const res = await h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'Add capacity figures.' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'execute');
    assert.equal(res.body.queued_messages, 0);
    await fakeModel(h).waitForRequests(2);
    const running = await taskState(h, task.task_id);
    assert.equal(running.active, true);
    assert.equal(running.turn?.kind, 'continue');
    assert.deepEqual(callerTexts(fakeModel(h).requests[1]), ['Add capacity figures.']);
    gate.release(1);
    await waitIdle(h, task.task_id);
    assert.equal((await getTask(h, task.task_id)).status, 'plan');
  });

  it('execute answers 200 at once and runs the spec again, the instruction as a user message', async (t) => {
    const h = await startTestHarness(t);
    const gate = holdRequests(h, [1]);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    const res = await h.request('POST', `/task/${task.task_id}/execute`, { body: { instruction: 'Refresh the data.' } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'execute');
    await fakeModel(h).waitForRequests(2);
    assert.equal((await taskState(h, task.task_id)).turn?.kind, 'execute');
    assert.deepEqual(callerTexts(fakeModel(h).requests[1]), ['Refresh the data.']);
    gate.release(1);
    await waitIdle(h, task.task_id);

    const bare = await h.request('POST', `/task/${task.task_id}/execute`, { body: {} });
    assert.equal(bare.status, 200, bare.text);
    await waitIdle(h, task.task_id);
    assert.equal(fakeModel(h).requests.length, 3);
    const done = (await taskEvents(h, task.task_id)).filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => e.outcome), ['completed', 'completed', 'completed']);
  });
});

describe('what the model is sent', () => {
  it('the task prompt once, then each message and instruction, as user messages (decisions §13)', async (t) => {
    const h = await startTestHarness(t);
    const bySpec = await createBySpec(h);
    await waitIdle(h, bySpec.task_id);
    assert.equal((await h.request('POST', `/task/${bySpec.task_id}/continue`, { body: { message: 'Add Norway.' } })).status, 200);
    await waitIdle(h, bySpec.task_id);
    assert.equal((await h.request('POST', `/task/${bySpec.task_id}/execute`, { body: { instruction: 'Refresh.' } })).status, 200);
    await waitIdle(h, bySpec.task_id);

    const byPrompt = await h.request('POST', '/task', { body: { prompt: PROMPT } });
    await waitIdle(h, byPrompt.body.task_id);
    assert.equal((await h.request('POST', `/task/${byPrompt.body.task_id}/continue`, { body: { message: 'Add Sweden.' } })).status, 200);
    await waitIdle(h, byPrompt.body.task_id);

    const sent = fakeModel(h).requests.map(userTexts);
    assert.deepEqual(sent, [
      [PROMPT],
      [PROMPT, 'Add Norway.'],
      [PROMPT, 'Add Norway.', 'Refresh.'],
      [PROMPT],
      [PROMPT, 'Add Sweden.'],
    ]);
  });
});

// ---- stop ---------------------------------------------------------------------------------------

describe('stop', () => {
  it('abandons the running turn at once (the model call is aborted), keeps the rows written and returns to plan/idle', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script(
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows: [{ company: 'Northvolt' }, { company: 'ACC' }], sources: [SOURCE] } }] },
      { hang: true },
    );
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(2);
    await until('the hanging model call', () => fakeModel(h).pending() === 1);

    const res = await h.request('POST', `/task/${task.task_id}/stop`, { body: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'plan');
    assert.equal(res.body.phase, 'plan');
    assert.equal(res.body.activity, 'idle');
    await until('the model call to be aborted', () => fakeModel(h).pending() === 0, { timeoutMs: 3000 });

    const s = await taskState(h, task.task_id);
    assert.equal(s.active, false);
    assert.equal(s.turn, null);
    const output = await h.request('GET', `/task/${task.task_id}/output`);
    assert.equal(output.status, 200, output.text);
    assert.equal(output.body.total, 2);
    assert.deepEqual(output.body.rows.map((r: Json) => r.company), ['Northvolt', 'ACC']);
    const done = (await taskEvents(h, task.task_id)).filter((e) => e.type === 'done');
    assert.equal(done.length, 1);
    assert.equal(done[0].outcome, 'stopped');
    assert.equal(fakeModel(h).requests.length, 2);
  });

  it('then starts the next queued message', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    assert.equal((await h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'queued one' } })).status, 202);

    const res = await h.request('POST', `/task/${task.task_id}/stop`, { body: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'execute', 'the queued message has already started');
    assert.equal(res.body.queued_messages, 0);
    await waitIdle(h, task.task_id);
    assert.equal(fakeModel(h).requests.length, 2);
    assert.deepEqual(callerTexts(fakeModel(h).requests[1]), ['queued one']);
    const outcomes = (await taskEvents(h, task.task_id)).filter((e) => e.type === 'done').map((e) => e.outcome);
    assert.deepEqual(outcomes, ['stopped', 'completed']);
  });

  it('with {clear_queue: true} drops the queued messages', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    for (const message of ['dropped one', 'dropped two']) {
      assert.equal((await h.request('POST', `/task/${task.task_id}/continue`, { body: { message } })).status, 202);
    }
    const res = await h.request('POST', `/task/${task.task_id}/stop`, { body: { clear_queue: true } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'plan');
    assert.equal(res.body.activity, 'idle');
    assert.equal(res.body.queued_messages, 0);
    const s = await taskState(h, task.task_id);
    assert.equal(s.active, false);
    assert.equal(s.queued_messages, 0);

    // The dropped messages never reach the model, not even in a later turn's history.
    assert.equal((await h.request('POST', `/task/${task.task_id}/execute`, { body: { instruction: 'go' } })).status, 200);
    await waitIdle(h, task.task_id);
    assert.equal(fakeModel(h).requests.length, 2);
    assert.deepEqual(callerTexts(fakeModel(h).requests[1]), ['go']);
  });

  it('on an idle task is a 200 no-op', async (t) => {
    const h = await startTestHarness(t);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);
    const before = await taskState(h, task.task_id);
    const res = await h.request('POST', `/task/${task.task_id}/stop`, { body: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'plan');
    assert.equal(res.body.activity, 'idle');
    const after = await taskState(h, task.task_id);
    assert.equal(after.active, false);
    assert.equal(after.last_event_id, before.last_event_id, 'nothing was recorded');
    assert.equal(fakeModel(h).requests.length, 1);
  });

  it('takes no body (interface §4: request "none"), on a running and on an idle task', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    const running = await h.request('POST', `/task/${task.task_id}/stop`);
    assert.equal(running.status, 200, running.text);
    assert.equal(running.body.status, 'plan');
    assert.equal((await taskState(h, task.task_id)).active, false);
    const idle = await h.request('POST', `/task/${task.task_id}/stop`);
    assert.equal(idle.status, 200, idle.text);
    assert.equal(idle.body.status, 'plan');
  });
});

// ---- patch and delete -----------------------------------------------------------------------------

describe('patch and delete', () => {
  it('PATCH sets name and pinned; pinned tasks list first', async (t) => {
    const h = await startTestHarness(t);
    const a = await createBySpec(h);
    await waitIdle(h, a.task_id);
    const b = await createBySpec(h);
    await waitIdle(h, b.task_id);
    const listed = await h.request('GET', '/task');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.map((x: Json) => x.task_id), [b.task_id, a.task_id], 'most recently updated first');

    const res = await h.request('PATCH', `/task/${a.task_id}`, { body: { name: 'Renamed', pinned: true } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.name, 'Renamed');
    assert.equal(res.body.pinned, true);
    const got = await getTask(h, a.task_id);
    assert.equal(got.name, 'Renamed');
    assert.equal(got.pinned, true);
    assert.equal(got.status, 'plan');

    // Touch b so it is the most recently updated: a still lists first because it is pinned.
    assert.equal((await h.request('PATCH', `/task/${b.task_id}`, { body: { name: 'B' } })).status, 200);
    const relisted = await h.request('GET', '/task');
    assert.deepEqual(relisted.body.map((x: Json) => x.task_id), [a.task_id, b.task_id]);
    assert.equal(relisted.body[0].pinned, true);

    const unpinned = await h.request('PATCH', `/task/${a.task_id}`, { body: { pinned: false, name: null } });
    assert.equal(unpinned.status, 200, unpinned.text);
    assert.equal(unpinned.body.pinned, false);
    assert.equal(unpinned.body.name, null);
    const reasons = (await taskEvents(h, a.task_id)).filter((e) => e.type === 'task').map((e) => e.reason);
    assert.equal(reasons.filter((r) => r === 'updated').length, 2);
  });

  it('DELETE stops the running turn; the task is deleted in GET /task/{id}, 404 elsewhere and absent from the list', async (t) => {
    const h = await startTestHarness(t);
    // Both turns hang: which of the two model calls arrives first is not fixed.
    fakeModel(h).script({ hang: true }, { hang: true });
    const task = await createBySpec(h);
    const other = await createBySpec(h);
    await fakeModel(h).waitForRequests(2);
    const id = task.task_id;
    assert.equal((await h.request('POST', `/task/${id}/continue`, { body: { message: 'queued' } })).status, 202);

    const res = await h.request('DELETE', `/task/${id}`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.task_id, id);
    assert.equal(res.body.status, 'deleted');
    await until('the deleted task\'s model call to be aborted', () => fakeModel(h).pending() === 1, { timeoutMs: 3000 });

    const got = await getTask(h, id);
    assert.equal(got.status, 'deleted');
    const evs = got.events as Json[];
    assert.ok(evs.some((e) => e.type === 'done' && e.outcome === 'stopped'), 'its turn was stopped');
    assert.ok(evs.some((e) => e.type === 'task' && e.reason === 'deleted'));

    const refusals: [string, string, Json?][] = [
      ['GET', `/task/${id}/state`],
      ['GET', `/task/${id}/state?wait=1`],
      ['GET', `/task/${id}/output`],
      ['GET', `/task/${id}/outputs`],
      ['GET', `/task/${id}/outputs/makers`],
      ['GET', `/task/${id}/events`],
      ['GET', `/task/${id}/stream`],
      ['POST', `/task/${id}/continue`, { message: 'hello' }],
      ['POST', `/task/${id}/continue/stream`, { message: 'hello' }],
      ['POST', `/task/${id}/execute`, {}],
      ['POST', `/task/${id}/execute/stream`, {}],
      ['POST', `/task/${id}/stop`, {}],
      ['PATCH', `/task/${id}`, { name: 'x' }],
      ['DELETE', `/task/${id}`],
      ['POST', '/task', { prompt: 'hello', task_id: id }],
    ];
    for (const [method, path, body] of refusals) {
      const r = await h.request(method, path, body === undefined ? {} : { body });
      assert.equal(r.status, 404, `${method} ${path}: ${r.status} ${r.text}`);
      assert.equal(r.body?.error, 'task_not_found', `${method} ${path}: ${r.text}`);
    }

    const list = await h.request('GET', '/task');
    assert.deepEqual(list.body.map((x: Json) => x.task_id), [other.task_id]);
    // The queued message never ran and nothing else was sent to the model for the deleted task.
    assert.equal(fakeModel(h).requests.length, 2);
    assert.equal((await getTask(h, id)).status, 'deleted');
  });
});

// ---- blocking waits -----------------------------------------------------------------------------

describe('waits', () => {
  it('continue with wait: true blocks until the turn ends', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MAX_BLOCK_SECONDS: '30' } });
    const gate = holdRequests(h, [1]);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    let settled = false;
    const pending = h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'block please', wait: true } }).finally(() => (settled = true));
    await fakeModel(h).waitForRequests(2);
    await taskState(h, task.task_id); // one more round trip, so an early answer would have arrived
    assert.equal(settled, false, 'continue with wait: true answered while its turn still ran');
    gate.release(1);
    const res = await pending;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'plan');
    assert.equal(res.body.activity, 'idle');
  });

  it('continue with an integer wait blocks until the turn ends: it is not a timeout in seconds (interface §4.1, decisions §4)', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MAX_BLOCK_SECONDS: '30' } });
    const gate = holdRequests(h, [1]);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    let settled = false;
    const pending = h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'block for the turn', wait: 2 } }).finally(() => (settled = true));
    await fakeModel(h).waitForRequests(2);
    // The turn is held; let more than the integer's worth of seconds pass on the server's own clock.
    const poll = await h.request('GET', `/task/${task.task_id}/state?wait=4`);
    assert.equal(poll.body.active, true);
    const early = settled;
    gate.release(1);
    const res = await pending;
    assert.equal(early, false, 'continue with wait: 2 answered while its turn still ran');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'plan');
    assert.equal(res.body.activity, 'idle');
  });

  it('execute with wait: true blocks until the turn ends', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_MAX_BLOCK_SECONDS: '30' } });
    const gate = holdRequests(h, [1]);
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    const pending = h.request('POST', `/task/${task.task_id}/execute`, { body: { wait: true } });
    await fakeModel(h).waitForRequests(2);
    gate.release(1);
    const res = await pending;
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'plan');
    assert.equal(res.body.activity, 'idle');
  });

  it('GET /task/{id}?wait=N and /state?wait=N return when the turn ends', async (t) => {
    const h = await startTestHarness(t);
    const gate = holdRequests(h, [0]);
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);

    let settled = 0;
    const detail = h.request('GET', `/task/${task.task_id}?wait=30`).finally(() => settled++);
    const cheap = h.request('GET', `/task/${task.task_id}/state?wait=30`).finally(() => settled++);
    await h.request('GET', '/task'); // a round trip, so early answers would have arrived
    assert.equal(settled, 0, 'a long-poll answered while the turn still ran');
    gate.release(0);
    const [d, s] = await Promise.all([detail, cheap]);
    assert.equal(d.status, 200, d.text);
    assert.equal(d.body.status, 'plan');
    assert.equal(d.body.activity, 'idle');
    assert.ok(Array.isArray(d.body.events));
    assert.ok(d.body.events.some((e: Json) => e.type === 'done'));
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.active, false);
    assert.equal(s.body.status, 'plan');
  });

  it('GET /task/{id}?wait=1 and /state?wait=1 return after about a second when the turn goes on', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);

    let started = Date.now();
    const d = await h.request('GET', `/task/${task.task_id}?wait=1`);
    let took = Date.now() - started;
    assert.equal(d.status, 200, d.text);
    assert.equal(d.body.status, 'execute');
    assert.ok(took >= 900 && took < 5000, `GET ?wait=1 took ${took} ms`);

    started = Date.now();
    const s = await h.request('GET', `/task/${task.task_id}/state?wait=1`);
    took = Date.now() - started;
    assert.equal(s.status, 200, s.text);
    assert.equal(s.body.active, true);
    assert.ok(took >= 900 && took < 5000, `/state?wait=1 took ${took} ms`);
  });

  it('a long-poll whose client goes away stops waiting: nothing keeps listening to the task', async (t) => {
    const h = await startTestHarness(t, { listen: true });
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    const bus = h.quarry.bus;
    for (const path of [`/task/${task.task_id}/state?wait=60`, `/task/${task.task_id}?wait=60`]) {
      const gone = new AbortController();
      const poll = fetch(`${h.url}${path}`, { headers: { 'x-api-key': h.key }, signal: gone.signal }).catch(() => 'aborted');
      await until(`the long-poll of ${path} to listen`, () => bus.listenerCount(task.task_id) === 1);
      gone.abort();
      assert.equal(await poll, 'aborted');
      await until(`the long-poll of ${path} to stop listening`, () => bus.listenerCount(task.task_id) === 0, { timeoutMs: 3000 });
    }
  });

  it('a long-poll whose client goes away while it still reads the running turn never starts listening', async (t) => {
    const h = await startTestHarness(t, { listen: true });
    fakeModel(h).script({ hang: true });
    const task = await createBySpec(h);
    await fakeModel(h).waitForRequests(1);
    // The long-poll's read of the running turn is held until the client has gone (a slow database).
    const turns = h.quarry.store.turns;
    const getTurn = turns.get.bind(turns);
    const read = { started: false, release: () => {} };
    turns.get = async (id) => {
      read.started = true;
      await new Promise<void>((resolve) => (read.release = resolve));
      return getTurn(id);
    };
    const states = h.quarry.store.tasks;
    const getState = states.getState.bind(states);
    let stateReads = 0;
    states.getState = (id) => (stateReads++, getState(id));
    let closed = false;
    h.quarry.app.server.on('request', (request, response) => {
      if (request.url?.includes('/state?wait')) response.once('close', () => (closed = true));
    });

    const gone = new AbortController();
    const poll = fetch(`${h.url}/task/${task.task_id}/state?wait=60`, { headers: { 'x-api-key': h.key }, signal: gone.signal }).catch(() => 'aborted');
    await until('the long-poll to read the turn', () => read.started);
    gone.abort();
    assert.equal(await poll, 'aborted');
    await until('the server to see the client go', () => closed);
    turns.get = getTurn;
    read.release();
    // The poll ends (its closing state read) at once, rather than when its 60 s are up.
    await until('the abandoned long-poll to end', () => stateReads === 2, { timeoutMs: 3000 });
    assert.equal(h.quarry.bus.listenerCount(task.task_id), 0, 'the abandoned long-poll listens to the task');
  });
});

// ---- the agent's turn ---------------------------------------------------------------------------------

describe('turns', () => {
  it('plan_only: true ends the turn after planning; execute then runs the plan', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script(
      { toolCalls: [{ name: 'update_spec', arguments: { name: 'EU makers', outputs: [MAKERS] } }] },
      { text: 'Planned.' },
    );
    const res = await h.request('POST', '/task', { body: { prompt: PROMPT, plan_only: true } });
    assert.equal(res.status, 200, res.text);
    const id = res.body.task_id;
    await waitIdle(h, id);

    const planned = await getTask(h, id);
    assert.equal(planned.status, 'plan');
    assert.equal(planned.activity, 'idle');
    assert.deepEqual(planned.spec.outputs.map((o: Json) => o.id), ['makers']);
    assert.equal(planned.output_count, 1);
    assert.equal(planned.name, 'EU makers');
    const empty = await h.request('GET', `/task/${id}/output`);
    assert.equal(empty.body.total, 0, 'no rows after planning');
    assert.equal(fakeModel(h).requests.length, 2, 'the turn ended after planning');
    for (const req of fakeModel(h).requests) {
      assert.deepEqual((req.body.tools ?? []).map((x) => x.function.name), ['update_spec'], 'a planning-only turn offers only update_spec');
    }
    const outcomes = (await taskEvents(h, id)).filter((e) => e.type === 'done').map((e) => e.outcome);
    assert.deepEqual(outcomes, ['completed']);

    fakeModel(h).script(
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows: [{ company: 'Northvolt', capacity_gwh: 16 }], sources: [SOURCE] } }] },
      { text: 'Written.' },
    );
    const exec = await h.request('POST', `/task/${id}/execute`, { body: {} });
    assert.equal(exec.status, 200, exec.text);
    await waitIdle(h, id);
    const rows = await h.request('GET', `/task/${id}/output`);
    assert.equal(rows.body.total, 1);
    assert.equal(rows.body.rows[0].company, 'Northvolt');
    assert.ok((fakeModel(h).requests[2]?.body.tools ?? []).some((x) => x.function.name === 'write_rows'));
  });

  it('a turn that plans, writes sourced rows and ends records phase and activity events in order, then done completed', async (t) => {
    const h = await startTestHarness(t);
    const rows = [{ company: 'Northvolt', capacity_gwh: 16 }, { company: 'ACC', capacity_gwh: 13.4 }];
    fakeModel(h).script(
      { toolCalls: [{ name: 'update_spec', arguments: { name: 'EU makers', outputs: [MAKERS] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows, sources: [SOURCE] } }] },
      { text: 'All rows written.' },
    );
    const res = await h.request('POST', '/task', { body: { prompt: PROMPT } });
    assert.equal(res.status, 200, res.text);
    const id = res.body.task_id;
    await waitIdle(h, id);

    const evs = await taskEvents(h, id);
    assert.deepEqual(evs.map((e) => e.seq), evs.map((_e, i) => i + 1), 'gap-free sequence numbers');
    for (const e of evs) assert.equal(e.task_id, id);
    const labels = evs.filter((e) => e.type !== 'text').map((e) => {
      if (e.type === 'task') return `task:${e.reason}`;
      if (e.type === 'tool') return `tool:${e.name}:${e.state}`;
      if (e.type === 'done') return `done:${e.outcome}`;
      return e.type;
    });
    assert.deepEqual(labels, [
      'task:created',
      'task:turn_started',
      'tool:update_spec:started',
      'task:updated',
      'tool:update_spec:finished',
      'task:phase_changed',
      'tool:write_rows:started',
      'tool:write_rows:finished',
      'task:activity_changed',
      'task:turn_ended',
      'done:completed',
    ]);
    const byReason = (reason: string) => evs.find((e) => e.type === 'task' && e.reason === reason)!;
    assert.deepEqual(pick(byReason('created').task, ['status', 'phase', 'activity']), { status: 'execute', phase: 'plan', activity: 'planning' });
    assert.deepEqual(pick(byReason('phase_changed').task, ['status', 'phase', 'activity']), { status: 'execute', phase: 'execute', activity: 'executing' });
    assert.deepEqual(pick(byReason('activity_changed').task, ['status', 'phase', 'activity']), { status: 'execute', phase: 'execute', activity: 'thinking' });
    assert.deepEqual(pick(byReason('turn_ended').task, ['status', 'phase', 'activity']), { status: 'plan', phase: 'plan', activity: 'idle' });
    assert.equal(byReason('updated').task.output_count, 1);

    const writeStarted = evs.find((e) => e.type === 'tool' && e.name === 'write_rows' && e.state === 'started');
    assert.deepEqual(writeStarted.input, { output: 'makers', rows, sources: [SOURCE] });
    const writeFinished = evs.find((e) => e.type === 'tool' && e.name === 'write_rows' && e.state === 'finished');
    assert.equal(writeFinished.call_id, writeStarted.call_id);
    assert.equal(typeof writeFinished.duration_ms, 'number');
    assert.equal(evs.filter((e) => e.type === 'text').map((e) => e.text).join(''), 'All rows written.');
    const done = evs[evs.length - 1];
    assert.equal(done.type, 'done');
    assert.equal(done.outcome, 'completed');
    assert.equal(done.output_count, 1);
    const turnIds = new Set(evs.map((e) => e.turn_id));
    assert.equal(turnIds.size, 1, 'every event belongs to the one turn');

    const output = await h.request('GET', `/task/${id}/output`);
    assert.equal(output.body.total, 2);
    assert.deepEqual(output.body.output, { id: 'makers', kind: 'table', path: 'outputs/makers.csv' });
    assert.deepEqual(output.body.rows.map((r: Json) => [r._row, r.company, r.capacity_gwh]), [[1, 'Northvolt', 16], [2, 'ACC', 13.4]]);
    for (const row of output.body.rows) assert.equal(row._sources[0].url, SOURCE.url);
    const task = await getTask(h, id);
    assert.equal(task.active_output, 'makers');
  });

  it('invalid tool arguments go back to the model as tool errors and the turn continues', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script(
      { toolCalls: [{ name: 'write_rows', arguments: '{"output": "makers", "rows": [' }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'nope', rows: [{ company: 'X' }], sources: [SOURCE] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows: [{ capacity_gwh: 'lots' }], sources: [SOURCE] } }] },
      { toolCalls: [{ name: 'write_rows', arguments: { output: 'makers', rows: [{ company: 'Northvolt' }], sources: [SOURCE] } }] },
      { text: 'Done after fixing.' },
    );
    const task = await createBySpec(h);
    await waitIdle(h, task.task_id);

    const reqs = fakeModel(h).requests;
    assert.equal(reqs.length, 5, 'the turn went on after each tool error');
    const errorFor = (i: number) => {
      const results = toolMessages(reqs[i + 1]);
      const mine = results.find((m) => m.tool_call_id === `call_${i}_0`);
      assert.ok(mine, `request ${i + 1} carries the result of call_${i}_0`);
      return mine.content;
    };
    assert.match(errorFor(0), /error/i);
    assert.match(errorFor(1), /nope/);
    assert.match(errorFor(2), /company/);
    assert.doesNotMatch(errorFor(3), /^error/i);

    const evs = await taskEvents(h, task.task_id);
    const toolEnds = evs.filter((e) => e.type === 'tool' && e.state !== 'started').map((e) => e.state);
    assert.deepEqual(toolEnds, ['failed', 'failed', 'failed', 'finished']);
    assert.ok(!evs.some((e) => e.type === 'error'), 'no error event: the turn did not fail');
    assert.equal(evs[evs.length - 1].type, 'done');
    assert.equal(evs[evs.length - 1].outcome, 'completed');
    const output = await h.request('GET', `/task/${task.task_id}/output`);
    assert.equal(output.body.total, 1);
    assert.equal(output.body.rows[0].company, 'Northvolt');
  });

  it('with no model configured the turn ends with an error event saying what to set, then done failed', async (t) => {
    const h = await startTestHarness(t, { model: false });
    const res = await h.request('POST', '/task', { body: { prompt: PROMPT } });
    assert.equal(res.status, 200, res.text);
    const id = res.body.task_id;
    await waitIdle(h, id);

    const evs = await taskEvents(h, id);
    const errorAt = evs.findIndex((e) => e.type === 'error');
    assert.ok(errorAt >= 0, 'an error event was recorded');
    assert.match(evs[errorAt].message, /QUARRY_MODEL_BASE_URL/);
    assert.equal(typeof evs[errorAt].error, 'string');
    assert.equal(typeof evs[errorAt].retryable, 'boolean');
    const doneAt = evs.findIndex((e) => e.type === 'done');
    assert.ok(doneAt > errorAt, 'done comes after the error');
    assert.equal(evs[doneAt].outcome, 'failed');
    const task = await getTask(h, id);
    assert.equal(task.status, 'plan');
    assert.equal(task.phase, 'plan');
    assert.equal(task.activity, 'idle');
  });
});

function pick(obj: Json, keys: string[]): Json {
  return Object.fromEntries(keys.map((k) => [k, obj?.[k]]));
}
