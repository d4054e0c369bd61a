/**
 * Finding a group's work (decisions §20): GET /group filtered by `q` and `status`; a group's
 * runs, rows or not, by status and in pages (GET /group/{id}/runs); retrying stopped runs as
 * well as failed ones.
 */
import { before, after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, userText } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const SPEC = {
  name: 'Company facts',
  prompt: 'For each company, find its headquarters city.',
  input_columns: [{ name: 'company', type: 'string', required: true }],
  outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'hq', type: 'string' }] }],
};

async function waitGroup(h: Harness, groupId: string, done: (g: Json) => boolean): Promise<Json> {
  let group: Json;
  await until(`group ${groupId}`, async () => {
    group = (await h.request('GET', `/group/${groupId}`)).body;
    return done(group);
  }, { timeoutMs: 30_000, pollMs: 50 });
  return group;
}

const settled = (g: Json) => g.counts.pending + g.counts.running === 0;

describe('finding a group\'s work', () => {
  let h: Harness;

  before(async () => {
    h = await startHarness();
    // A run's input says how it ends: Fail fails, Hold waits at the model until stopped.
    fakeModel(h).setResponder((body) => {
      const text = userText(body);
      if (text.includes('"Fail')) return { status: 400, errorMessage: 'this input breaks the model' };
      if (text.includes('"Hold')) return { hang: true };
      return { text: 'Done.' };
    });
  });
  after(() => h.close());

  it('GET /group takes q (in the name, any case) and status', async () => {
    const create = async (name: string, company: string) => {
      const res = await h.request('POST', '/group', { body: { name, task: SPEC, inputs: [{ company }] } });
      assert.equal(res.status, 200, res.text);
      return res.body.group_id as string;
    };
    const alpha = await create('Alpha companies', 'Quick A');
    const beta = await create('Beta COMPANIES', 'Hold B');
    const gamma = await create('Gamma firms', 'Quick C');
    await waitGroup(h, alpha, settled);
    await waitGroup(h, gamma, settled);
    assert.equal((await h.request('POST', `/group/${beta}/stop`)).status, 200);

    const ids = async (query: string) => {
      const res = await h.request('GET', `/group?${query}`);
      assert.equal(res.status, 200, res.text);
      return res.body.map((g: Json) => g.group_id);
    };
    assert.deepEqual(await ids('q=companies'), [beta, alpha]);
    assert.deepEqual(await ids('status=stopped'), [beta]);
    assert.deepEqual(await ids('q=companies&status=finished'), [alpha]);
    const page = await h.request('GET', '/group?q=companies&limit=1');
    assert.deepEqual(page.body.map((g: Json) => g.group_id), [beta]);
    assert.match(page.headers.get('link') ?? '', /[?&]q=companies&/);
    const rest = await h.request('GET', `/group?q=companies&limit=1&cursor=${page.headers.get('x-next-cursor')}`);
    assert.deepEqual(rest.body.map((g: Json) => g.group_id), [alpha]);
    for (const [query, param] of [['status=done', 'status'], ['q=', 'q']]) {
      const res = await h.request('GET', `/group?${query}`);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.param, param, res.text);
    }
  });

  it('GET /group/{id}/runs lists every run in input order, with its status, error and credits, by status and in pages', async () => {
    const created = await h.request('POST', '/group', {
      body: { task: SPEC, inputs: [{ company: 'Quick A' }, { company: 'Fail B' }, { company: 'Quick C' }, { company: 'Fail D' }, { company: 'Hold E' }, { company: 'Quick F' }], max_parallel: 1 },
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.group_id;
    // Max_parallel 1: E holds the only slot, F waits behind it.
    await waitGroup(h, id, (g) => g.counts.running === 1 && g.counts.completed + g.counts.failed === 4);
    const all = await h.request('GET', `/group/${id}/runs`);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.body.runs.map((r: Json) => [r.input_index, r.input.company, r.status]), [
      [0, 'Quick A', 'completed'], [1, 'Fail B', 'failed'], [2, 'Quick C', 'completed'], [3, 'Fail D', 'failed'], [4, 'Hold E', 'running'], [5, 'Quick F', 'pending'],
    ]);
    const [a, b, , , e, f] = all.body.runs;
    assert.match(a.task_id, /^tsk_/);
    assert.equal(a.error, null);
    assert.equal(typeof a.credits_used, 'number');
    assert.ok(Date.parse(a.updated_at) > 0);
    assert.equal(typeof b.error.error, 'string');
    assert.equal(typeof b.error.message, 'string');
    assert.match(e.task_id, /^tsk_/);
    assert.deepEqual([f.task_id, f.error, f.credits_used, f.updated_at], [null, null, 0, null]);

    const failed = await h.request('GET', `/group/${id}/runs?status=failed`);
    assert.deepEqual(failed.body.runs.map((r: Json) => r.input_index), [1, 3]);
    const pending = await h.request('GET', `/group/${id}/runs?status=pending`);
    assert.deepEqual(pending.body.runs.map((r: Json) => r.input_index), [5]);

    const pages: number[][] = [];
    let url = `/group/${id}/runs?limit=4`;
    for (;;) {
      const res = await h.request('GET', url);
      assert.equal(res.status, 200, res.text);
      pages.push(res.body.runs.map((r: Json) => r.input_index));
      const cursor = res.headers.get('x-next-cursor');
      if (cursor === null) break;
      assert.match(res.headers.get('link') ?? '', new RegExp(`/group/${id}/runs\\?limit=4&cursor=${cursor}>; rel="next"$`));
      url = `/group/${id}/runs?limit=4&cursor=${cursor}`;
    }
    assert.deepEqual(pages, [[0, 1, 2, 3], [4, 5]]);
    assert.equal((await h.request('POST', `/group/${id}/stop`)).status, 200);

    for (const [query, param] of [['status=done', 'status'], ['cursor=abc', 'cursor'], ['limit=0', 'limit']]) {
      const res = await h.request('GET', `/group/${id}/runs?${query}`);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.param, param, res.text);
    }
    const unknown = await h.request('GET', '/group/grp_01M8HSXKFZB9D383N7A4K0W42S/runs');
    assert.equal(unknown.status, 404, unknown.text);
  });

  it('retry runs failed runs by default, and stopped ones with include; max_credits lifts a reached cap', async () => {
    const created = await h.request('POST', '/group', {
      body: { task: SPEC, inputs: [{ company: 'Fail A' }, { company: 'Hold B' }, { company: 'Quick C' }], max_parallel: 3 },
    });
    const id = created.body.group_id;
    await waitGroup(h, id, (g) => g.counts.failed === 1 && g.counts.completed === 1 && g.counts.running === 1);
    const stopped = await h.request('POST', `/group/${id}/stop`);
    assert.deepEqual(stopped.body.counts, { pending: 0, running: 0, completed: 1, failed: 1, stopped: 1 });

    // From now on every run succeeds.
    fakeModel(h).setResponder(() => ({ text: 'Done.' }));
    try {
      const failedOnly = await h.request('POST', `/group/${id}/retry`, { body: {} });
      assert.equal(failedOnly.status, 200, failedOnly.text);
      let group = await waitGroup(h, id, settled);
      assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 2, failed: 0, stopped: 1 }, 'the stopped run stays stopped');

      const withStopped = await h.request('POST', `/group/${id}/retry`, { body: { include: ['failed', 'stopped'] } });
      assert.equal(withStopped.status, 200, withStopped.text);
      assert.equal(withStopped.body.status, 'running');
      group = await waitGroup(h, id, settled);
      assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 3, failed: 0, stopped: 0 });
      const runs = (await h.request('GET', `/group/${id}/runs`)).body.runs;
      assert.ok(runs.every((r: Json) => r.status === 'completed'));

      // A group whose cap stopped its pending runs (and failed the run it cut off): retrying them
      // under the same cap stops them again; a new cap lets them run.
      const capped = await h.request('POST', '/group', { body: { task: SPEC, inputs: Array.from({ length: 6 }, (_, i) => ({ company: `Cap ${i}` })), max_parallel: 1, max_credits: 0.000001 } });
      const cappedId = capped.body.group_id;
      group = await waitGroup(h, cappedId, settled);
      assert.ok(group.counts.stopped >= 1, JSON.stringify(group.counts));
      const again = await h.request('POST', `/group/${cappedId}/retry`, { body: { include: ['stopped'] } });
      assert.equal(again.status, 200, again.text);
      group = await waitGroup(h, cappedId, settled);
      assert.ok(group.counts.stopped >= 1, 'the cap is still reached');
      const lifted = await h.request('POST', `/group/${cappedId}/retry`, { body: { include: ['failed', 'stopped'], max_credits: null } });
      assert.equal(lifted.status, 200, lifted.text);
      assert.equal(lifted.body.max_credits, null);
      group = await waitGroup(h, cappedId, settled);
      assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 6, failed: 0, stopped: 0 });

      for (const body of [{ include: ['completed'] }, { include: [] }, { include: ['failed', 'failed'] }, { max_credits: 0 }]) {
        const res = await h.request('POST', `/group/${id}/retry`, { body });
        assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
        assert.match(String(res.body.param), /^(include|max_credits)/, res.text);
      }
    } finally {
      fakeModel(h).setResponder((body) => {
        const text = userText(body);
        if (text.includes('"Fail')) return { status: 400, errorMessage: 'this input breaks the model' };
        if (text.includes('"Hold')) return { hang: true };
        return { text: 'Done.' };
      });
    }
  });
});
