/**
 * The Task body's `last_turn` (decisions §20): null before the first turn ends, then the last
 * ended turn with its outcome, times, credits and, when it failed, its error; the same in the
 * list, and kept by the next turn until that one ends.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitIdle } from '../kit/harness.js';
import { fakeModel, getTask, startTestHarness } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const SPEC = { name: 'Battery makers', prompt: 'Find battery makers.', outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', type: 'string' }] }] };

async function listed(h: Awaited<ReturnType<typeof startTestHarness>>, taskId: string): Promise<Json> {
  const res = await h.request('GET', '/task');
  assert.equal(res.status, 200, res.text);
  return res.body.find((t: Json) => t.task_id === taskId);
}

describe('last_turn', () => {
  it('is null while the first turn runs, then the completed turn; the list shows the same', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ hang: true });
    const res = await h.request('POST', '/task/start', { body: { task: SPEC } });
    assert.equal(res.status, 200, res.text);
    const id = res.body.task_id;
    assert.equal(res.body.last_turn, null);
    await fakeModel(h).waitForRequests(1);
    assert.equal((await getTask(h, id)).last_turn, null);
    await h.request('POST', `/task/${id}/stop`, { body: {} });

    fakeModel(h).setResponder(() => ({ text: 'Done.' }));
    const again = await h.request('POST', `/task/${id}/execute`, { body: {} });
    assert.equal(again.status, 200, again.text);
    const turnId = (await h.request('GET', `/task/${id}/state`)).body.turn?.id;
    await waitIdle(h, id);
    const task = await getTask(h, id);
    assert.equal(task.last_turn.outcome, 'completed');
    assert.equal(task.last_turn.kind, 'execute');
    if (turnId) assert.equal(task.last_turn.turn_id, turnId);
    assert.match(task.last_turn.turn_id, /^turn_/);
    assert.equal(task.last_turn.error, null);
    assert.equal(typeof task.last_turn.credits_used, 'number');
    assert.ok(Date.parse(task.last_turn.ended_at) >= Date.parse(task.last_turn.started_at));
    assert.deepEqual((await listed(h, id)).last_turn, task.last_turn);
  });

  it('of a failed turn carries its error; of a stopped turn, outcome stopped and no error', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script({ status: 400, errorMessage: 'the model refused this request' });
    const res = await h.request('POST', '/task/start', { body: { task: SPEC } });
    const id = res.body.task_id;
    await waitIdle(h, id);
    const failed = await getTask(h, id);
    assert.equal(failed.last_turn.outcome, 'failed');
    assert.equal(typeof failed.last_turn.error.error, 'string');
    assert.equal(typeof failed.last_turn.error.message, 'string');
    assert.deepEqual(Object.keys(failed.last_turn.error).sort(), ['error', 'message']);
    assert.deepEqual((await listed(h, id)).last_turn, failed.last_turn);

    fakeModel(h).script({ hang: true });
    const running = await h.request('POST', `/task/${id}/execute`, { body: {} });
    assert.equal(running.status, 200, running.text);
    // The failed turn stays the last one until the running one ends.
    assert.equal((await getTask(h, id)).last_turn.turn_id, failed.last_turn.turn_id);
    await fakeModel(h).waitForRequests(2);
    const stopped = await h.request('POST', `/task/${id}/stop`, { body: {} });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.last_turn.outcome, 'stopped');
    assert.equal(stopped.body.last_turn.error, null);
    assert.notEqual(stopped.body.last_turn.turn_id, failed.last_turn.turn_id);
    assert.deepEqual((await getTask(h, id)).last_turn, stopped.body.last_turn);
  });
});
