/**
 * GET /metrics (decisions §15.5): the series after a few real turns (completed, failed, stopped)
 * with their values, route templates rather than raw paths as labels, the gauges read at the
 * scrape, and who may scrape: the admin key, or anyone with QUARRY_METRICS_PUBLIC=1.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN_KEY, waitIdle, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, startTestHarness } from '../kit/task-api.js';
import { startWebhookReceiver } from '../kit/webhook-receiver.js';

/** The value of the sample `name` whose labels are exactly `labels`, or undefined when there is none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    const wanted = Object.entries(labels);
    if (wanted.length === Object.keys(got).length && wanted.every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

async function scrape(h: Harness): Promise<string> {
  const res = await h.request('GET', '/metrics', { key: ADMIN_KEY });
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text;
}

async function startTask(h: Harness, prompt: string): Promise<string> {
  const res = await h.request('POST', '/task', { body: { prompt } });
  assert.equal(res.status, 200, res.text);
  return res.body.task_id;
}

async function send(h: Harness, taskId: string, message: string): Promise<void> {
  const res = await h.request('POST', `/task/${taskId}/continue`, { body: { message } });
  assert.equal(res.status, 200, res.text);
}

test('after a completed, a failed and a stopped turn the series show them, labelled by route template', async (t) => {
  const h = await startTestHarness(t, { listen: true, env: { QUARRY_FETCH_ALLOW_PRIVATE: '1' } });
  const model = fakeModel(h);
  const receiver = await startWebhookReceiver();
  t.after(() => receiver.close());
  const hook = await h.request('POST', '/webhooks', { body: { url: `${receiver.url}/hook`, events: ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped'] } });
  assert.equal(hook.status, 201, hook.text);

  const before = await scrape(h);
  for (const outcome of ['completed', 'failed', 'stopped']) assert.equal(sample(before, 'quarry_turns_total', { outcome }), 0, `${outcome} starts at 0`);
  assert.equal(sample(before, 'quarry_model_tokens_total', { type: 'input' }), 0);
  assert.equal(sample(before, 'quarry_model_tokens_total', { type: 'cached_input' }), 0);
  assert.equal(sample(before, 'quarry_context_compactions_total'), 0);
  // Every route that streams has its series from the start, before its first stream.
  for (const route of ['/task/:task_id/stream', '/task/stream', '/task/start/stream', '/task/:task_id/continue/stream', '/task/:task_id/execute/stream', '/group/:group_id/stream', '/a2a']) {
    assert.equal(sample(before, 'quarry_streams_open', { route }), 0, `quarry_streams_open{route="${route}"} starts at 0`);
  }

  model.script({ text: 'Hello there.', usage: { prompt_tokens: 120, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 100 } } });
  const taskId = await startTask(h, 'Say hello.');
  await waitIdle(h, taskId);

  // A 400 is not retried: the turn fails with bad_gateway at once.
  model.script({ status: 400, errorMessage: 'The model refuses.' });
  await send(h, taskId, 'Fail this time.');
  await waitIdle(h, taskId);

  model.script({ hang: true });
  await send(h, taskId, 'Hang until stopped.');
  await model.waitForRequests(3);
  const follow = new AbortController();
  t.after(() => follow.abort());
  // From the task's last event: a replay from the start would end at the first turn's done.
  const { last_event_id } = (await h.request('GET', `/task/${taskId}/state`)).body;
  const stream = await fetch(`${h.url}/task/${taskId}/stream?after=${last_event_id}`, { headers: { 'X-API-Key': h.key }, signal: follow.signal });
  // Its headers have come: the server holds it open, waiting for the turn's events.
  assert.equal(stream.status, 200);

  const during = await scrape(h);
  assert.equal(sample(during, 'quarry_turns_running'), 1, 'the hanging turn runs');
  assert.equal(sample(during, 'quarry_turns_pending'), 0);
  assert.equal(sample(during, 'quarry_streams_open', { route: '/task/:task_id/stream' }), 1, 'the stream is open');

  const stopped = await h.request('POST', `/task/${taskId}/stop`, { body: {} });
  assert.equal(stopped.status, 200, stopped.text);
  await waitIdle(h, taskId);
  follow.abort();
  assert.equal((await h.request('GET', '/no/such/route')).status, 404);

  // Deliveries are counted once their attempt is recorded, a moment after the receiver has them.
  const after = await until('three delivered webhooks', async () => {
    const text = await scrape(h);
    return sample(text, 'quarry_webhook_deliveries_total', { status: 'delivered' }) === 3 ? text : '';
  });

  assert.equal(sample(after, 'quarry_turns_total', { outcome: 'completed' }), 1);
  assert.equal(sample(after, 'quarry_turns_total', { outcome: 'failed' }), 1);
  assert.equal(sample(after, 'quarry_turns_total', { outcome: 'stopped' }), 1);
  for (const outcome of ['completed', 'failed', 'stopped']) {
    assert.equal(sample(after, 'quarry_turn_duration_seconds_count', { outcome }), 1, `one ${outcome} turn timed`);
    assert.ok(sample(after, 'quarry_turn_duration_seconds_sum', { outcome })! > 0);
  }
  // Only the completed turn's model call reported usage.
  assert.equal(sample(after, 'quarry_model_tokens_total', { type: 'input' }), 120);
  assert.equal(sample(after, 'quarry_model_tokens_total', { type: 'cached_input' }), 100);
  assert.equal(sample(after, 'quarry_model_tokens_total', { type: 'output' }), 30);
  assert.equal(sample(after, 'quarry_turns_running'), 0);
  assert.equal(sample(after, 'quarry_turns_pending'), 0);
  assert.equal(sample(after, 'quarry_streams_open', { route: '/task/:task_id/stream' }), 0, 'the stream closed');
  assert.equal(sample(after, 'quarry_webhook_deliveries_total', { status: 'dead' }), 0);
  assert.equal(sample(after, 'quarry_store_errors_total', { component: 'http' }), 0);

  assert.equal(sample(after, 'quarry_http_requests_total', { method: 'POST', route: '/task', status: '200' }), 1);
  assert.equal(sample(after, 'quarry_http_requests_total', { method: 'POST', route: '/task/:task_id/continue', status: '200' }), 2);
  assert.equal(sample(after, 'quarry_http_requests_total', { method: 'POST', route: '/task/:task_id/stop', status: '200' }), 1);
  assert.equal(sample(after, 'quarry_http_requests_total', { method: 'POST', route: '/webhooks', status: '201' }), 1);
  assert.equal(sample(after, 'quarry_http_requests_total', { method: 'GET', route: '/task/:task_id/stream', status: '200' }), 1);
  assert.equal(sample(after, 'quarry_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
  assert.ok(sample(after, 'quarry_http_request_duration_seconds_count', { method: 'POST', route: '/task' })! >= 1);
  // A stream's life is no answer time.
  assert.equal(sample(after, 'quarry_http_request_duration_seconds_count', { method: 'GET', route: '/task/:task_id/stream' }), undefined);
  assert.ok(!after.includes(taskId), 'no label holds a raw path');
});

test('GET /metrics takes the admin key; QUARRY_METRICS_PUBLIC=1 opens it; without an admin key it is off', async (t) => {
  const h = await startTestHarness(t, { model: false });
  assert.equal((await h.request('GET', '/metrics', { key: null })).status, 401);
  const withApiKey = await h.request('GET', '/metrics');
  assert.equal(withApiKey.status, 401, 'an API key is not the admin key');
  assert.equal(withApiKey.body.error, 'unauthorized');
  assert.equal((await h.request('GET', '/metrics', { key: ADMIN_KEY })).status, 200);
  assert.equal((await h.request('POST', '/metrics', { key: ADMIN_KEY })).status, 405);

  const open = await startTestHarness(t, { model: false, env: { QUARRY_METRICS_PUBLIC: '1' } });
  const scraped = await open.request('GET', '/metrics', { key: null });
  assert.equal(scraped.status, 200, scraped.text);
  assert.match(scraped.text, /^# HELP quarry_http_requests_total /m);

  const off = await startTestHarness(t, { model: false, env: { QUARRY_ADMIN_KEY: '' } });
  assert.equal((await off.request('GET', '/metrics', { key: ADMIN_KEY })).status, 404);
});

test('a worker node serves /metrics too: it runs the turns', async (t) => {
  const h = await startTestHarness(t, { model: false, env: { QUARRY_ROLE: 'worker' } });
  const res = await h.request('GET', '/metrics', { key: ADMIN_KEY });
  assert.equal(res.status, 200, res.text);
  assert.equal(sample(res.text, 'quarry_turns_pending'), 0);
});
