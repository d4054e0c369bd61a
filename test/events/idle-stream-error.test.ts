/**
 * A task whose last turn failed says why where a newcomer looks: `GET /task/{task_id}/stream`
 * of the idle task sends the failed turn's stored `error` event again before the snapshot, and
 * `/state` carries it as `last_error` (null while a turn runs and after a turn that did not fail).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitIdle } from '../kit/harness.js';
import { fakeModel, startTestHarness, taskEvents, taskState } from '../kit/task-api.js';
import { until } from '../kit/bounded-waits.js';
import { QuarryClient } from '../../packages/client/src/index.js';
import { readSse } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

describe('the error of an idle task\'s last turn', () => {
  it('without a model: /state has last_error, and the stream shows the stored error before the snapshot', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false });
    const created = await h.request('POST', '/task', { body: { prompt: 'EU battery plants.' } });
    assert.equal(created.status, 200, created.text);
    const taskId: string = created.body.task_id;
    await waitIdle(h, taskId);

    const stored = (await taskEvents(h, taskId)).find((e) => e.type === 'error');
    assert.equal(stored.error, 'service_unavailable');
    assert.match(stored.message, /QUARRY_MODEL_BASE_URL/);

    const state = await taskState(h, taskId);
    assert.equal(state.active, false);
    assert.deepEqual(state.last_error, { error: stored.error, message: stored.message, retryable: stored.retryable });

    // The walkthrough's `curl -N …/stream`: the error first, as stored (with its id), then the idle snapshot and done.
    const stream = await readSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    assert.deepEqual(stream.events.map((e) => e.event), ['error', 'task', 'done']);
    const [error, snapshot, done] = stream.events as [any, any, any];
    assert.equal(error.id, String(stored.seq));
    assert.deepEqual(error.json, stored);
    assert.equal(snapshot.id, undefined);
    assert.equal(snapshot.json.reason, 'snapshot');
    assert.equal(done.json.outcome, 'idle');
    assert.ok(stream.completed);

    // A client that resumes has had the error (or gets it in the replay): it is not sent again.
    const resumed = await readSse(h.url, `/task/${taskId}/stream?after=${state.last_event_id}`, { key: h.key });
    assert.deepEqual(resumed.events.map((e) => e.event), ['task', 'done']);
    const replayed = await readSse(h.url, `/task/${taskId}/stream?after=${stored.seq - 1}`, { key: h.key });
    assert.equal(replayed.events.filter((e) => e.event === 'error').length, 1);

    // The client yields it as an event (an unstored error would be a refusal), then ends on done idle.
    const client = new QuarryClient({ baseURL: h.url, apiKey: h.key, maxRetries: 0 });
    const seen: any[] = [];
    for await (const event of client.tasks.stream(taskId)) seen.push(event);
    assert.deepEqual(seen.map((e) => e.type), ['error', 'task', 'done']);
    assert.equal(seen[0].message, stored.message);
    assert.equal((await client.tasks.state(taskId)).last_error?.error, 'service_unavailable');
  });

  it('is null while a turn runs and after a turn that did not fail; the next failure replaces it', async (t) => {
    const h = await startTestHarness(t, { listen: true, retryDelaysMs: [] });
    const model = fakeModel(h);
    model.script({ status: 400, errorMessage: 'model "nope" not found' });
    const created = await h.request('POST', '/task', { body: { prompt: 'Granite quarries.' } });
    const taskId: string = created.body.task_id;
    await waitIdle(h, taskId);
    const failed = await taskState(h, taskId);
    assert.equal(failed.last_error.error, 'bad_gateway');
    assert.match(failed.last_error.message, /not found/);

    // A turn runs: nothing has failed yet.
    model.script({ hang: true });
    const sent = await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Try again.' } });
    assert.equal(sent.status, 200, sent.text);
    await until('the model is called', () => model.pending() > 0);
    const running = await taskState(h, taskId);
    assert.equal(running.active, true);
    assert.equal(running.last_error, null);
    const stopped = await h.request('POST', `/task/${taskId}/stop`, { body: {} });
    assert.equal(stopped.status, 200, stopped.text);
    await waitIdle(h, taskId);
    assert.equal((await taskState(h, taskId)).last_error, null, 'a stopped turn did not fail');

    model.script({ text: 'All good.' });
    await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Once more.' } });
    await waitIdle(h, taskId);
    assert.equal((await taskState(h, taskId)).last_error, null);
    const stream = await readSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    assert.deepEqual(stream.events.map((e) => e.event), ['task', 'done'], 'no error is sent for a task whose last turn completed');

    model.script({ status: 401, errorMessage: 'bad key' });
    await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'And again.' } });
    await waitIdle(h, taskId);
    const again = await taskState(h, taskId);
    assert.match(again.last_error.message, /bad key/);
    const errors = (await taskEvents(h, taskId)).filter((e) => e.type === 'error');
    const latest = await readSse(h.url, `/task/${taskId}/stream`, { key: h.key });
    assert.equal(latest.events[0]!.id, String(errors.at(-1).seq), 'the stream sends the last failure, not an earlier one');
  });
});
