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
});
