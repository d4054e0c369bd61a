/**
 * QUARRY_MODEL_PROVIDER=demo: without any model, a turn still goes through every stage a user
 * can see — tool events, streamed text, typed rows with sources, a charge, done — and every
 * answer says it came from the demo. Real HTTP, no fake model server.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitIdle } from '../kit/harness.js';
import { waitIdle as waitIdleOn } from '../kit/http.js';
import { startTestHarness, taskEvents, taskState } from '../kit/task-api.js';
import { readSse } from '../kit/sse-client.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

describe('the demo model', () => {
  it('runs a whole turn: plans an output, writes rows with sources, streams its text, charges, ends done', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'Granite or marble? Granite, said the quarry.' } });
    assert.equal(created.status, 200, created.text);
    const taskId = created.body.task_id;

    const stream = await readSse(h.url, `/task/${taskId}/stream?after=0`, { key: h.key });
    const tools = stream.events.filter((e) => e.event === 'tool' && e.json.state === 'finished').map((e) => e.json.name);
    assert.deepEqual(tools, ['update_spec', 'write_rows']);
    const text = stream.events.filter((e) => e.event === 'text').map((e) => e.json.text).join('');
    assert.match(text, /demo model/);
    assert.match(text, /no real model was asked/);
    const done = stream.events.find((e) => e.event === 'done');
    assert.equal(done?.json.outcome, 'completed');

    const rows = await h.request('GET', `/task/${taskId}/outputs/demo_word_counts`);
    assert.equal(rows.status, 200, rows.text);
    const items = rows.body.rows;
    assert.deepEqual(items.slice(0, 2).map((r: any) => [r.word, r.count]), [['granite', 2], ['or', 1]]);
    assert.equal(typeof items[0].count, 'number', 'the count column is typed integer');
    assert.match(items[0]._sources[0].url, /^https:\/\/demo-model\.quarry\.invalid\//);
    assert.match(items[0]._sources[0].title, /demo model/);

    const state = await taskState(h, taskId);
    assert.equal(state.last_error, null);
    const task = (await h.request('GET', `/task/${taskId}`)).body;
    assert.ok(task.credits_used > 0, 'the demo turn is charged like any turn');
  });

  it('names the rows it wrote in its answer as the tool did: by _row, from 1', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'Granite, marble, slate, basalt, gneiss, schist, quartzite, sandstone, limestone, chalk and flint.' } });
    assert.equal(created.status, 200, created.text);
    const stream = await readSse(h.url, `/task/${created.body.task_id}/stream?after=0`, { key: h.key });
    const text = stream.events.filter((e) => e.event === 'text').map((e) => e.json.text).join('');

    assert.match(text, /Wrote 10 rows to demo_word_counts \(rows 1-10\)/);
    const named = [...text.matchAll(/- row (\d+), source 1/g)].map((m) => Number(m[1]));
    const rows = (await h.request('GET', `/task/${created.body.task_id}/outputs/demo_word_counts`)).body.rows;
    assert.deepEqual(named, rows.map((r: any) => r._row));
    assert.deepEqual(named, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('in a task group, writes one made-up row per input into the group\'s table, so the merged table fills', async (t) => {
    const h = await startTestHarness(t, { listen: true, model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const spec = {
      prompt: 'Find the headquarters of the company given.',
      input_columns: [{ name: 'company', required: true }],
      outputs: [{ id: 'hq', kind: 'table', columns: [{ name: 'city', required: true }, { name: 'employees', type: 'integer' }, { name: 'site', type: 'url' }] }],
    };
    const created = await h.request('POST', '/group', { body: { task: spec, inputs: [{ company: 'Northvolt' }, { company: 'Saft Groupe' }] } });
    assert.equal(created.status, 200, created.text);
    const stream = await readSse(h.url, `/group/${created.body.group_id}/stream`, { key: h.key });
    assert.equal(stream.events.at(-1)?.json.group.counts.completed, 2);
    const rows = (await h.request('GET', `/group/${created.body.group_id}/rows`)).body.rows;
    assert.deepEqual(rows.map((r: any) => [r._input, r.company, r.city, r.employees, r.site]), [
      [0, 'Northvolt', 'demo value for Northvolt', 1, 'https://demo-model.quarry.invalid/'],
      [1, 'Saft Groupe', 'demo value for Saft Groupe', 2, 'https://demo-model.quarry.invalid/'],
    ]);
    assert.match(rows[0]._sources[0].title, /demo model/);
  });

  it('a follow-up message gets its own turn that counts the new message', async (t) => {
    const h = await startTestHarness(t, { model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: 'one two two' } });
    await waitIdle(h, created.body.task_id);
    const more = await h.request('POST', `/task/${created.body.task_id}/continue`, { body: { message: 'three three three' } });
    assert.ok([200, 202].includes(more.status), more.text);
    await waitIdleOn(h.request, created.body.task_id, { queueEmpty: true });
    const rows = await h.request('GET', `/task/${created.body.task_id}/outputs/demo_word_counts`);
    const items = rows.body.rows;
    assert.deepEqual(items.map((r: any) => [r.word, r.count]), [['two', 2], ['one', 1], ['three', 3]]);
    const dones = (await taskEvents(h, created.body.task_id)).filter((e) => e.type === 'done');
    assert.deepEqual(dones.map((e) => e.outcome), ['completed', 'completed']);
  });

  it('a message without words gets no rows, and an answer that says what it is', async (t) => {
    const h = await startTestHarness(t, { model: false, env: { QUARRY_MODEL_PROVIDER: 'demo' } });
    const created = await h.request('POST', '/task', { body: { prompt: '?!' } });
    assert.equal(created.status, 200, created.text);
    await waitIdle(h, created.body.task_id);
    const events = await taskEvents(h, created.body.task_id);
    assert.deepEqual(events.filter((e) => e.type === 'tool' && e.state === 'finished').map((e) => e.name), ['update_spec']);
    assert.match(events.filter((e) => e.type === 'text').map((e) => e.text).join(''), /demo model.*\n.*update_spec: Spec updated/s);
    assert.equal(events.at(-1).outcome, 'completed');
  });
});
