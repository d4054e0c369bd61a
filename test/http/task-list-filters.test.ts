/**
 * GET /task filters (decisions §20): `q` in the name or prompt (case-insensitive, its `%` and `_`
 * literal), `state`, the last turn's `outcome`, `created_after` and `created_before`; they combine,
 * page in the list's order with X-Next-Cursor and a Link that keeps them, apply to a group's runs,
 * and a bad value is a 422 naming its parameter.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, waitIdle, type Harness, type TestResponse } from '../kit/harness.js';
import { fakeModel, userText } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const OUTPUTS = [{ id: 'rows', kind: 'table', columns: [{ name: 'company', type: 'string' }] }];

function ids(res: TestResponse): string[] {
  assert.equal(res.status, 200, res.text);
  return res.body.map((t: Json) => t.task_id);
}

describe('GET /task filters', () => {
  let h: Harness;
  const task: Record<string, Json> = {};

  before(async () => {
    h = await startHarness();
    // The prompt says how its turn ends: FAIL fails, HOLD runs until stopped (or for good).
    fakeModel(h).setResponder((body) => {
      const text = userText(body);
      if (text.includes('FAIL')) return { status: 400, errorMessage: 'refused' };
      if (text.includes('HOLD')) return { hang: true };
      return { text: 'Done.' };
    });
    const start = async (key: string, name: string, prompt: string): Promise<void> => {
      const res = await h.request('POST', '/task/start', { body: { task: { name, prompt, outputs: OUTPUTS } } });
      assert.equal(res.status, 200, res.text);
      task[key] = res.body;
    };
    await start('completed', 'Battery makers of Europe', 'List the cell makers.');
    await waitIdle(h, task.completed.task_id);
    await start('failed', 'Solar farms', 'Find solar farms. FAIL');
    await waitIdle(h, task.failed.task_id);
    await start('stopped', 'Wind parks', 'Find wind parks with 100%_literal capacity. HOLD');
    await fakeModel(h).waitForRequests(3);
    assert.equal((await h.request('POST', `/task/${task.stopped.task_id}/stop`, { body: {} })).status, 200);
    await start('running', 'Hydro dams', 'Find BATTERY storage at dams. HOLD');
    await fakeModel(h).waitForRequests(4);
  });

  it('q finds the text in the name or the prompt, in any case; % and _ are literal', async () => {
    assert.deepEqual(ids(await h.request('GET', '/task?q=battery')).sort(), [task.completed.task_id, task.running.task_id].sort());
    assert.deepEqual(ids(await h.request('GET', '/task?q=SOLAR%20FARMS')), [task.failed.task_id]);
    assert.deepEqual(ids(await h.request('GET', `/task?q=${encodeURIComponent('100%_lit')}`)), [task.stopped.task_id]);
    assert.deepEqual(ids(await h.request('GET', `/task?q=${encodeURIComponent('0%c')}`)), []);
    assert.deepEqual(ids(await h.request('GET', '/task?q=nowhere')), []);
  });

  it('state: running while a turn runs, idle otherwise', async () => {
    assert.deepEqual(ids(await h.request('GET', '/task?state=running')), [task.running.task_id]);
    assert.deepEqual(ids(await h.request('GET', '/task?state=idle')).sort(), [task.completed.task_id, task.failed.task_id, task.stopped.task_id].sort());
  });

  it('outcome is the last ended turn\'s; a task whose first turn runs has none', async () => {
    assert.deepEqual(ids(await h.request('GET', '/task?outcome=completed')), [task.completed.task_id]);
    assert.deepEqual(ids(await h.request('GET', '/task?outcome=failed')), [task.failed.task_id]);
    const stopped = await h.request('GET', '/task?outcome=stopped');
    assert.deepEqual(ids(stopped), [task.stopped.task_id]);
    assert.equal(stopped.body[0].last_turn.outcome, 'stopped');
  });

  it('created_after and created_before bound the creation time, exclusive, in any ISO 8601 offset', async () => {
    const after = task.failed.created_at;
    assert.deepEqual(ids(await h.request('GET', `/task?created_after=${after}`)).sort(), [task.stopped.task_id, task.running.task_id].sort());
    assert.deepEqual(ids(await h.request('GET', `/task?created_before=${task.failed.created_at}`)), [task.completed.task_id]);
    const asOffset = new Date(Date.parse(task.stopped.created_at) + 3_600_001).toISOString().replace('Z', '+01:00');
    assert.deepEqual(ids(await h.request('GET', `/task?created_after=${after}&created_before=${encodeURIComponent(asOffset)}`)), [task.stopped.task_id]);
  });

  it('filters combine, and page in list order with a cursor and a Link that keeps them', async () => {
    assert.deepEqual(ids(await h.request('GET', '/task?state=idle&q=find')).sort(), [task.failed.task_id, task.stopped.task_id].sort());
    assert.deepEqual(ids(await h.request('GET', '/task?state=idle&q=find&outcome=failed')), [task.failed.task_id]);
    assert.deepEqual(ids(await h.request('GET', '/task?state=running&outcome=failed')), []);

    const all = ids(await h.request('GET', '/task?state=idle'));
    const first = await h.request('GET', '/task?state=idle&limit=2');
    assert.deepEqual(ids(first), all.slice(0, 2));
    const cursor = first.headers.get('x-next-cursor');
    assert.ok(cursor);
    const link = first.headers.get('link') ?? '';
    const url = new URL(/^<([^>]+)>; rel="next"$/.exec(link)?.[1] ?? 'http://invalid');
    assert.equal(url.searchParams.get('state'), 'idle');
    assert.equal(url.searchParams.get('cursor'), cursor);
    const second = await h.request('GET', url.pathname + url.search);
    assert.deepEqual(ids(second), all.slice(2));
    assert.equal(second.headers.get('x-next-cursor'), null);
  });

  it('a pinned task comes first within a filter', async () => {
    const pin = await h.request('PATCH', `/task/${task.failed.task_id}`, { body: { pinned: true } });
    assert.equal(pin.status, 200, pin.text);
    try {
      assert.equal(ids(await h.request('GET', '/task?state=idle'))[0], task.failed.task_id);
    } finally {
      await h.request('PATCH', `/task/${task.failed.task_id}`, { body: { pinned: false } });
    }
  });

  it('a bad value is a 422 naming its parameter', async () => {
    for (const [query, param] of [
      ['state=busy', 'state'], ['outcome=refused', 'outcome'], ['created_after=yesterday', 'created_after'],
      ['created_before=2025-13-45T00:00:00Z', 'created_before'], ['q=', 'q'],
    ]) {
      const res = await h.request('GET', `/task?${query}`);
      assert.equal(res.status, 422, `${query}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_request', res.text);
      assert.equal(res.body.param, param, `${query}: ${res.text}`);
    }
  });

  it('stop the held task', async () => {
    assert.equal((await h.request('POST', `/task/${task.running.task_id}/stop`, { body: {} })).status, 200);
    await h.close();
  });
});
