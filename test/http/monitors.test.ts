/**
 * Monitors over HTTP (decisions §19): keyed table outputs updated in place, the changes each turn
 * records (added, changed, and unconfirmed on execute turns only), GET /task/{id}/changes with
 * its filters and cursor paging, the `done` event's counts, and the `task.changed` webhook.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { waitIdle, type Harness } from '../kit/harness.js';
import type { FakeReply } from '../kit/fake-openai-server.js';
import { fakeModel, startTestHarness, taskEvents, userText } from '../kit/task-api.js';
import { startWebhookReceiver, type ReceivedWebhook } from '../kit/webhook-receiver.js';
import { until } from '../kit/bounded-waits.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const PRICES = {
  id: 'prices',
  kind: 'table',
  key: ['sku'],
  columns: [{ name: 'sku', type: 'string', required: true }, { name: 'price', type: 'number' }, { name: 'note', type: 'string' }],
};
const src = (page: string) => [{ url: `https://example.com/${page}` }];
const storedSrc = (page: string) => src(page).map((s) => ({ ...s, verified: false, check: 'not_read' }));
/** The cells of a row whose sources were never read: each one checked against no quote. */
const UNREAD_SUPPORT = { sku: 'unchecked', price: 'unchecked' };

function write(rows: unknown[], sources = src('a')): FakeReply {
  return { toolCalls: [{ name: 'write_rows', arguments: { output: 'prices', rows, sources } }] };
}

/** One turn's replies: each write, then the final answer. */
function turn(...writes: FakeReply[]): FakeReply[] {
  return [...writes, { text: 'Done.' }];
}

async function create(h: Harness, spec: Json = {}): Promise<string> {
  const res = await h.request('POST', '/task/start', { body: { task: { name: 'Prices', prompt: 'Track the prices.', outputs: [PRICES], ...spec } } });
  assert.equal(res.status, 200, res.text);
  return res.body.task_id;
}

async function rows(h: Harness, taskId: string): Promise<Json[]> {
  const res = await h.request('GET', `/task/${taskId}/outputs/prices?limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.rows;
}

async function changes(h: Harness, taskId: string, query = ''): Promise<Json> {
  const res = await h.request('GET', `/task/${taskId}/changes${query}`);
  assert.equal(res.status, 200, res.text);
  return res;
}

async function lastDone(h: Harness, taskId: string): Promise<Json> {
  return (await taskEvents(h, taskId)).filter((e) => e.type === 'done').at(-1);
}

/** Sends a message (continue) or execute and waits until the turn has ended; returns its turn id. */
async function nextTurn(h: Harness, taskId: string, route: 'continue' | 'execute'): Promise<string> {
  const res = await h.request('POST', `/task/${taskId}/${route}`, { body: route === 'continue' ? { message: 'Check again.' } : {} });
  assert.equal(res.status, 200, res.text);
  await waitIdle(h, taskId);
  return (await lastDone(h, taskId)).turn_id;
}

/** Three turns: a create adds a, b, c; a message rewrites b unchanged, changes c and adds d; an execute writes a and d only. */
async function threeTurns(t: TestContext, h: Harness): Promise<{ taskId: string; turns: string[] }> {
  const model = fakeModel(h);
  model.script(
    ...turn(write([{ sku: 'a', price: 1 }, { sku: 'b', price: 2 }, { sku: 'c', price: 3, note: 'old' }])),
    ...turn(write([{ sku: 'b', price: 2 }, { sku: 'c', price: 4, note: 'old' }, { sku: 'd', price: 5 }])),
    ...turn(write([{ sku: 'a', price: 1, _sources: src('a') }, { sku: 'd', price: 6 }], src('b'))),
  );
  const taskId = await create(h);
  await waitIdle(h, taskId);
  const first = (await lastDone(h, taskId)).turn_id;
  const second = await nextTurn(h, taskId, 'continue');
  const third = await nextTurn(h, taskId, 'execute');
  t.diagnostic(`turns ${first} ${second} ${third}`);
  return { taskId, turns: [first, second, third] };
}

describe('keyed table outputs', () => {
  it('a key must name required columns of a table output: else 422 naming the field', async (t) => {
    const h = await startTestHarness(t);
    const cases: [Json, string][] = [
      [{ ...PRICES, key: ['price'] }, 'task.outputs[0].key[0]'],
      [{ ...PRICES, key: ['sku', 'nosuch'] }, 'task.outputs[0].key[1]'],
      [{ id: 'notes', kind: 'report', key: ['sku'] }, 'task.outputs[0].key'],
    ];
    for (const [output, param] of cases) {
      const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'x', outputs: [output] } } });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'invalid_request');
      assert.equal(res.body.param, param, res.text);
    }
  });

  it('a key already in the output updates its row in place (its _row stays); new keys are appended', async (t) => {
    const h = await startTestHarness(t);
    const { taskId } = await threeTurns(t, h);
    assert.deepEqual(await rows(h, taskId), [
      { _row: 1, sku: 'a', price: 1, note: null, _sources: storedSrc('a'), _support: UNREAD_SUPPORT },
      { _row: 2, sku: 'b', price: 2, note: null, _sources: storedSrc('a'), _support: UNREAD_SUPPORT },
      { _row: 3, sku: 'c', price: 4, note: 'old', _sources: storedSrc('a'), _support: { ...UNREAD_SUPPORT, note: 'unchecked' } },
      { _row: 4, sku: 'd', price: 6, note: null, _sources: storedSrc('b'), _support: UNREAD_SUPPORT },
    ]);
    const outputs = await h.request('GET', `/task/${taskId}/outputs`);
    assert.equal(outputs.body.outputs[0].row_count, 4);
  });

  it('two rows with one key in the same call are a tool error, and nothing of that call is written', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script(...turn(write([{ sku: 'a', price: 1 }, { sku: 'a', price: 2 }]), write([{ sku: 'z', price: 9 }])));
    const taskId = await create(h);
    await waitIdle(h, taskId);
    const tools = (await taskEvents(h, taskId)).filter((e) => e.type === 'tool' && e.name === 'write_rows' && e.state !== 'started');
    assert.equal(tools[0].state, 'failed', JSON.stringify(tools[0]));
    const toolMessage = fakeModel(h).requests[1]!.body.messages!.find((m: Json) => m.role === 'tool')!;
    assert.match(String(toolMessage.content), /row 2: repeats the key \["a"\] of row 1/);
    assert.deepEqual((await rows(h, taskId)).map((r) => r.sku), ['z']);
  });
});

describe('changes', () => {
  it('each turn records added and changed keys; only the execute turn records unconfirmed ones; done carries the counts', async (t) => {
    const h = await startTestHarness(t);
    const { taskId, turns } = await threeTurns(t, h);
    const done = (await taskEvents(h, taskId)).filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => e.changes), [
      { added: 3, changed: 0, unconfirmed: 0 },
      { added: 1, changed: 1, unconfirmed: 0 },
      { added: 0, changed: 1, unconfirmed: 2 },
    ]);
    const task = (await h.request('GET', `/task/${taskId}`)).body;
    assert.equal(task.last_turn.turn_id, done[2].turn_id);
    assert.deepEqual(task.last_turn.changes, { added: 0, changed: 1, unconfirmed: 2 }, "the Task body's last turn carries the counts of its done event");

    const all = (await changes(h, taskId)).body.changes;
    const brief = all.map((c: Json) => [turns.indexOf(c.turn_id), c.change, c.key.sku]);
    assert.deepEqual(brief, [
      [0, 'added', 'a'], [0, 'added', 'b'], [0, 'added', 'c'],
      [1, 'changed', 'c'], [1, 'added', 'd'],
      [2, 'changed', 'd'], [2, 'unconfirmed', 'b'], [2, 'unconfirmed', 'c'],
    ]);
    assert.deepEqual(all[0], {
      turn_id: turns[0], at: all[0].at, output: 'prices', key: { sku: 'a' }, change: 'added',
      fields: { sku: { before: null, after: 'a' }, price: { before: null, after: 1 } },
      sources: { before: null, after: storedSrc('a') },
    });
    assert.deepEqual(all[3].fields, { price: { before: 3, after: 4 } }, 'only the fields that changed');
    assert.deepEqual(all[5].fields, { price: { before: 5, after: 6 } });
    assert.deepEqual(all[5].sources, { before: storedSrc('a'), after: storedSrc('b') });
    assert.deepEqual(all[6], { turn_id: turns[2], at: all[6].at, output: 'prices', key: { sku: 'b' }, change: 'unconfirmed', fields: {}, sources: { before: null, after: null } });

    const since = (await changes(h, taskId, `?since=${turns[0]}`)).body.changes;
    assert.deepEqual(since.map((c: Json) => c.turn_id), [turns[1], turns[1], turns[2], turns[2], turns[2]]);
    const after = (await changes(h, taskId, `?after=${encodeURIComponent(all[4].at)}`)).body.changes;
    assert.deepEqual(after.map((c: Json) => c.turn_id), [turns[2], turns[2], turns[2]]);
  });

  it('pages with limit and cursor, X-Next-Cursor and Link keeping the filters', async (t) => {
    const h = await startTestHarness(t);
    const { taskId, turns } = await threeTurns(t, h);
    const all = (await changes(h, taskId)).body.changes;
    const walked: Json[] = [];
    let query = `?since=${turns[0]}&limit=2`;
    for (let pages = 0; pages < 10; pages++) {
      const page = await changes(h, taskId, query);
      walked.push(...page.body.changes);
      const cursor = page.headers.get('x-next-cursor');
      if (!cursor) break;
      assert.match(page.headers.get('link') ?? '', new RegExp(`/task/${taskId}/changes\\?since=${turns[0]}&limit=2&cursor=${cursor}>; rel="next"`));
      query = `?since=${turns[0]}&limit=2&cursor=${cursor}`;
    }
    assert.deepEqual(walked, all.slice(3));
    const bad = await h.request('GET', `/task/${taskId}/changes?cursor=nope`);
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.body.param, 'cursor');
    const unknown = await h.request('GET', '/task/no-such-task/changes');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'task_not_found');
  });

  it('a task without a keyed output has no changes and its done event no counts', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).script(...turn({ toolCalls: [{ name: 'write_rows', arguments: { output: 'prices', rows: [{ sku: 'a' }, { sku: 'a' }] } }] }));
    const taskId = await create(h, { outputs: [{ ...PRICES, key: undefined }] });
    await waitIdle(h, taskId);
    assert.equal((await rows(h, taskId)).length, 2, 'without a key, rows are appended');
    assert.equal((await lastDone(h, taskId)).changes, undefined);
    assert.equal((await h.request('GET', `/task/${taskId}`)).body.last_turn.changes, undefined);
    assert.deepEqual((await changes(h, taskId)).body.changes, []);
  });

  it('a cron tick is an execute turn: keys it did not write again are unconfirmed, and the rows stay', async (t) => {
    const h = await startTestHarness(t);
    const model = fakeModel(h);
    model.script(...turn(write([{ sku: 'a', price: 1 }, { sku: 'b', price: 2 }])));
    // Every tick after the first turn writes a only, with a new price.
    let tick = 0;
    const taskId = await create(h, { schedule: { cron: '* * * * * *' } });
    await model.waitForRequests(2);
    model.setResponder((body) => (body.messages?.some((m) => m.role === 'tool') ? { text: 'Done.' } : write([{ sku: 'a', price: 10 + ++tick }])));
    const done: Json = await until('a tick that changed a', async () => {
      const events = (await taskEvents(h, taskId)).filter((e) => e.type === 'done');
      return events.length >= 2 ? events : undefined;
    }, { timeoutMs: 10_000 });
    assert.deepEqual(done[0].changes, { added: 2, changed: 0, unconfirmed: 0 });
    assert.deepEqual(done[1].changes, { added: 0, changed: 1, unconfirmed: 1 });
    await h.request('PATCH', `/task/${taskId}`, { body: { schedule: null } });
    const ofTick = (await changes(h, taskId, `?since=${done[0].turn_id}`)).body.changes.filter((c: Json) => c.turn_id === done[1].turn_id);
    assert.deepEqual(ofTick.map((c: Json) => [c.change, c.key.sku]), [['changed', 'a'], ['unconfirmed', 'b']]);
    assert.ok((await rows(h, taskId)).some((r) => r.sku === 'b'), 'an unconfirmed row stays');
  });
});

describe('the task.changed webhook', () => {
  it('is sent after a turn with changes, signed, with the counts and the changes; not after a turn without any', async (t) => {
    const h = await startTestHarness(t, { env: { QUARRY_FETCH_ALLOW_PRIVATE: '1' } });
    const receiver = await startWebhookReceiver();
    t.after(() => receiver.close());
    const hook = await h.request('POST', '/webhooks', { body: { url: `${receiver.url}/hook`, events: ['task.changed'] } });
    assert.equal(hook.status, 201, hook.text);

    const { taskId, turns } = await threeTurns(t, h);
    // A fourth turn writes nothing new: no change, no webhook.
    fakeModel(h).script(...turn(write([{ sku: 'a', price: 1, _sources: src('a') }, { sku: 'd', price: 6 }], src('b'))));
    await nextTurn(h, taskId, 'continue');
    const received: ReceivedWebhook[] = await receiver.waitFor(3);
    const bodies = received.map((r) => {
      const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((n) => [n, String(r.headers[n])]));
      return new Webhook(hook.body.secret).verify(r.body, headers) as Json;
    });
    bodies.sort((a, b) => turns.indexOf(a.data.turn_id) - turns.indexOf(b.data.turn_id));
    assert.deepEqual(bodies.map((b) => [b.type, b.data.task_id, b.data.turn_id]), turns.map((id) => ['task.changed', taskId, id]));
    assert.deepEqual(bodies[2].data.changes, { added: 0, changed: 1, unconfirmed: 2 });
    assert.deepEqual(bodies[2].data.first_changes, (await changes(h, taskId, `?since=${turns[1]}`)).body.changes);
    const log = await h.request('GET', `/webhooks/${hook.body.webhook_id}/deliveries`);
    assert.equal(log.body.deliveries.length, 3, 'the turn without changes sent nothing');
  });
});

describe('a group\'s changes', () => {
  it('GET /group/{id}/changes merges the runs\' changes, each with its run\'s input', async (t) => {
    const h = await startTestHarness(t);
    // Each run writes one row keyed by its input's company.
    fakeModel(h).setResponder((body) => {
      if (body.messages?.some((m) => m.role === 'tool')) return { text: 'Done.' };
      const company = /"company":"([^"]+)"/.exec(userText(body))![1]!;
      return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ name: company, hq: `HQ of ${company}` }], sources: src('g') } }] };
    });
    const spec = {
      prompt: 'For each company, find its headquarters city.',
      input_columns: [{ name: 'company', type: 'string', required: true }],
      outputs: [{ id: 'facts', kind: 'table', key: ['name'], columns: [{ name: 'name', type: 'string', required: true }, { name: 'hq', type: 'string' }] }],
    };
    const created = await h.request('POST', '/group', { body: { task: spec, inputs: [{ company: 'Acme' }, { company: 'Beta' }] } });
    assert.equal(created.status, 200, created.text);
    const groupId = created.body.group_id;
    await until('the group finished', async () => (await h.request('GET', `/group/${groupId}`)).body.status === 'finished', { timeoutMs: 20_000 });

    const all = await h.request('GET', `/group/${groupId}/changes`);
    assert.equal(all.status, 200, all.text);
    const merged = [...all.body.changes].sort((a: Json, b: Json) => a._input - b._input);
    assert.deepEqual(merged.map((c: Json) => [c._input, c.input, c.change, c.key, c.fields.hq.after]), [
      [0, { company: 'Acme' }, 'added', { name: 'Acme' }, 'HQ of Acme'],
      [1, { company: 'Beta' }, 'added', { name: 'Beta' }, 'HQ of Beta'],
    ]);
    for (const c of merged) {
      const ofRun = (await changes(h, c.task_id)).body.changes;
      const { _input: _i, input: _in, task_id: _t, ...change } = c;
      assert.deepEqual(ofRun, [change], 'the run\'s own change, as its task lists it');
    }
    const first = await h.request('GET', `/group/${groupId}/changes?limit=1`);
    const cursor = first.headers.get('x-next-cursor');
    assert.ok(cursor, 'more remain after one');
    assert.match(first.headers.get('link') ?? '', new RegExp(`/group/${groupId}/changes\\?limit=1&cursor=${cursor}>; rel="next"`));
    const second = await h.request('GET', `/group/${groupId}/changes?limit=1&cursor=${cursor}`);
    assert.deepEqual([...first.body.changes, ...second.body.changes], all.body.changes);
    assert.equal(second.headers.get('x-next-cursor'), null);
    const unknown = await h.request('GET', '/group/grp_nope/changes');
    assert.equal(unknown.status, 404, unknown.text);
  });
});
