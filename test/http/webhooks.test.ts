/**
 * Webhooks over real HTTP (decisions §15.3): registering, reading, rotating and deleting
 * endpoints; the deliveries a turn's end sends, signed as Standard Webhooks and checked with the
 * reference `standardwebhooks` library; retries, timeouts, redirects, dead deliveries,
 * redelivery, the delivery log and its pages; and the private-address rule at create and at send.
 *
 * Each test acts as an account of its own (made through the admin routes): every turn's end
 * goes to every endpoint of its account, so tests sharing a server must not share an account.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import dns from 'node:dns';
import os from 'node:os';
import { Webhook } from 'standardwebhooks';
import { startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { createAccount, uid, userText, waitIdleAs } from '../kit/task-api.js';
import { startWebhookReceiver, type ReceivedWebhook, type ReceiverAnswer, type WebhookReceiver } from '../kit/webhook-receiver.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';
import { blockedReason } from '../../src/net/address-policy.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const ALL_TURN_EVENTS = ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped'];

/** Short waits so that retries happen within a test; the attempt limit lets a hanging receiver time out quickly. */
const FAST_ENV = { QUARRY_FETCH_ALLOW_PRIVATE: '1', QUARRY_WEBHOOK_RETRY_S: '0.2', QUARRY_WEBHOOK_TIMEOUT_S: '0.5' };

/** `[hang]` in the prompt: the model never answers; `[fail]`: it answers HTTP 400 (not retried); else "Done.". */
function responder(body: FakeRequestBody): FakeReply {
  const text = userText(body);
  if (text.includes('[hang]')) return { hang: true };
  if (text.includes('[fail]')) return { status: 400, errorMessage: 'the model refuses this request' };
  return { text: 'Done.' };
}

async function startWebhookHarness(env: Record<string, string>): Promise<Harness> {
  const h = await startHarness({ env });
  h.model!.setResponder(responder);
  return h;
}

/** A fresh account's key: its endpoints get only its own turns' deliveries. */
async function newKey(h: Harness): Promise<string> {
  return (await createAccount(h, `webhooks-${uid()}`, 100)).api_key;
}

function expectError(res: TestResponse, status: number, code: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.equal(res.body?.error, code, res.text);
}

function expect422(res: TestResponse, param: RegExp | string, what: string): void {
  assert.equal(res.status, 422, `${what}: expected 422, got ${res.status}: ${res.text}`);
  assert.equal(res.body?.error, 'invalid_request', `${what}: ${res.text}`);
  if (typeof param === 'string') assert.equal(res.body.param, param, `${what}: ${res.text}`);
  else assert.match(String(res.body.param), param, `${what}: ${res.text}`);
}

function isIso(value: unknown): boolean {
  return typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(Date.parse(value));
}

/** Registers an endpoint (201 expected); deletes it when the test ends, so no retries outlive it. */
async function register(t: TestContext, h: Harness, key: string, url: string, events: string[] = ALL_TURN_EVENTS, description?: string): Promise<Json> {
  const res = await h.request('POST', '/webhooks', { key, body: { url, events, ...(description === undefined ? {} : { description }) } });
  assert.equal(res.status, 201, res.text);
  t.after(() => h.request('DELETE', `/webhooks/${res.body.webhook_id}`, { key }));
  return res.body;
}

/** A receiver closed when the test ends (after the endpoints are deleted: t.after runs in reverse order). */
async function receiver(t: TestContext, answer?: (r: ReceivedWebhook) => ReceiverAnswer): Promise<WebhookReceiver> {
  const r = await startWebhookReceiver(answer);
  t.after(() => r.close());
  return r;
}

/** Starts a turn on a new task with `prompt` and waits until it has ended. */
async function runTurn(h: Harness, key: string, prompt = 'Find EU battery makers.'): Promise<string> {
  const res = await h.request('POST', '/task', { key, body: { prompt } });
  assert.equal(res.status, 200, res.text);
  await waitIdleAs(h, res.body.task_id, key);
  return res.body.task_id;
}

async function deliveries(h: Harness, key: string, webhookId: string, query = ''): Promise<TestResponse> {
  const res = await h.request('GET', `/webhooks/${webhookId}/deliveries${query}`, { key });
  assert.equal(res.status, 200, res.text);
  return res;
}

/** Polls the delivery log until its newest delivery satisfies `check`. */
async function untilDelivery(h: Harness, key: string, webhookId: string, what: string, check: (d: Json) => boolean, timeoutMs = 5000): Promise<Json> {
  let last: Json;
  try {
    return await until(what, async () => {
      last = (await deliveries(h, key, webhookId)).body.deliveries[0];
      return last && check(last) ? last : undefined;
    }, { timeoutMs, pollMs: 25 });
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last)}`);
  }
}

/** The three Standard Webhooks headers of a received request, as the library takes them. */
function signedHeaders(r: ReceivedWebhook): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const value = r.headers[name];
    assert.equal(typeof value, 'string', `the request carries one ${name} header`);
    out[name] = value as string;
  }
  return out;
}

/** Verifies with the reference library; it throws when no signature matches. */
function verify(secret: string, r: ReceivedWebhook): Json {
  return new Webhook(secret).verify(r.body, signedHeaders(r));
}

// ---- endpoints --------------------------------------------------------------------------------

describe('webhook endpoints', () => {
  let h: Harness;
  before(async () => {
    h = await startWebhookHarness(FAST_ENV);
  });
  after(() => h.close());

  it('POST /webhooks answers 201 with the secret once; GET never shows it; another account gets 404', async (t) => {
    const key = await newKey(h);
    const startedAt = Date.now();
    const created = await register(t, h, key, 'http://127.0.0.1:9/hooks/a', ['task.turn_completed', 'task.turn_failed']);
    assert.match(created.webhook_id, /^wh_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(created.url, 'http://127.0.0.1:9/hooks/a');
    assert.deepEqual(created.events, ['task.turn_completed', 'task.turn_failed']);
    assert.equal(created.description, null);
    assert.ok(isIso(created.created_at), created.created_at);
    assert.ok(Math.abs(Date.parse(created.created_at) - startedAt) < 60_000);
    assert.equal(created.previous_secret_expires_at, null);
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.doesNotThrow(() => new Webhook(created.secret), 'the reference library takes the secret');

    const described = await register(t, h, key, 'https://example.com/hook', ['group.finished'], 'billing');
    assert.equal(described.description, 'billing');
    assert.notEqual(described.secret, created.secret);

    const one = await h.request('GET', `/webhooks/${created.webhook_id}`, { key });
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.secret, undefined);
    assert.ok(!one.text.includes(created.secret));
    const { secret: _secret, ...view } = created;
    assert.deepEqual(one.body, view);

    const list = await h.request('GET', '/webhooks', { key });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.webhooks.map((w: Json) => w.webhook_id), [described.webhook_id, created.webhook_id], 'newest first');
    assert.ok(list.body.webhooks.every((w: Json) => w.secret === undefined));
    assert.ok(!list.text.includes(created.secret) && !list.text.includes(described.secret));

    // Another account sees none of it and can change none of it.
    const other = await newKey(h);
    assert.deepEqual((await h.request('GET', '/webhooks', { key: other })).body, { webhooks: [] });
    const id = created.webhook_id;
    expectError(await h.request('GET', `/webhooks/${id}`, { key: other }), 404, 'webhook_not_found');
    expectError(await h.request('POST', `/webhooks/${id}/rotate-secret`, { key: other, body: {} }), 404, 'webhook_not_found');
    expectError(await h.request('GET', `/webhooks/${id}/deliveries`, { key: other }), 404, 'webhook_not_found');
    expectError(await h.request('DELETE', `/webhooks/${id}`, { key: other }), 404, 'webhook_not_found');
    assert.equal((await h.request('GET', `/webhooks/${id}`, { key })).status, 200, 'still there for its own account');
    expectError(await h.request('GET', '/webhooks/wh_01ARZ3NDEKTSV4RRFFQ69G5FAV', { key }), 404, 'webhook_not_found');
  });

  it('refuses a bad body with 422 naming the field', async () => {
    const key = await newKey(h);
    const cases: [string, Json, RegExp | string][] = [
      ['an ftp: URL', { url: 'ftp://example.com/hook', events: ['task.turn_completed'] }, 'url'],
      ['not a URL', { url: 'not a url', events: ['task.turn_completed'] }, 'url'],
      ['a URL with user:pass@', { url: 'https://user:pass@example.com/hook', events: ['task.turn_completed'] }, 'url'],
      ['an empty url', { url: '', events: ['task.turn_completed'] }, 'url'],
      ['no url', { events: ['task.turn_completed'] }, 'url'],
      ['no events', { url: 'https://example.com/hook' }, 'events'],
      ['empty events', { url: 'https://example.com/hook', events: [] }, 'events'],
      ['an unknown event', { url: 'https://example.com/hook', events: ['task.created'] }, /^events(\[0\])?$/],
      ['a duplicate event', { url: 'https://example.com/hook', events: ['task.turn_failed', 'task.turn_failed'] }, 'events'],
    ];
    for (const [what, body, param] of cases) expect422(await h.request('POST', '/webhooks', { key, body }), param, what);
    assert.deepEqual((await h.request('GET', '/webhooks', { key })).body, { webhooks: [] }, 'nothing was registered');
    // The refusal of an unknown event names the ones there are.
    const unknown = await h.request('POST', '/webhooks', { key, body: { url: 'https://example.com/hook', events: ['task.created'] } });
    assert.match(unknown.body.message, /must be one of "task\.turn_completed", "task\.turn_failed", "task\.turn_stopped", "task\.changed", "group\.finished"/);
  });

  it('the 21st endpoint of an account is 409 webhook_limit_reached; deleting one makes room', async (t) => {
    const key = await newKey(h);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await register(t, h, key, `https://example.com/hook/${i}`)).webhook_id);
    expectError(await h.request('POST', '/webhooks', { key, body: { url: 'https://example.com/hook/20', events: ['task.turn_completed'] } }), 409, 'webhook_limit_reached');
    // The limit is per account.
    await register(t, h, await newKey(h), 'https://example.com/other');
    assert.equal((await h.request('DELETE', `/webhooks/${ids[0]}`, { key })).status, 200);
    await register(t, h, key, 'https://example.com/hook/20');
  });

  // Under PostgreSQL's READ COMMITTED, creates that count the endpoints side by side would all
  // see fewer than 20 unless something serializes them (the account's row lock does).
  it('the limit holds when creates arrive at once: 30 parallel creates make 20 endpoints and 10 answers 409', async (t) => {
    // A few accounts: one burst may by chance be served one at a time.
    for (let round = 0; round < 3; round++) {
      const key = await newKey(h);
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        h.request('POST', '/webhooks', { key, body: { url: `https://example.com/parallel/${i}`, events: ['task.turn_completed'] } })));
      const list = await h.request('GET', '/webhooks', { key });
      t.after(async () => {
        for (const w of list.body.webhooks) await h.request('DELETE', `/webhooks/${w.webhook_id}`, { key });
      });
      const statuses = answers.map((res) => res.status);
      assert.deepEqual(statuses.filter((s) => s !== 201 && s !== 409), [], 'only 201 and 409');
      assert.equal(list.body.webhooks.length, 20, `round ${round}: the account has at most 20 endpoints (${statuses.filter((s) => s === 201).length} creates answered 201)`);
      assert.equal(statuses.filter((s) => s === 409).length, 10);
    }
  });
});

// ---- private addresses ------------------------------------------------------------------------

describe('webhooks without QUARRY_FETCH_ALLOW_PRIVATE', () => {
  let h: Harness;
  before(async () => {
    h = await startWebhookHarness({ QUARRY_WEBHOOK_RETRY_S: '0.2', QUARRY_WEBHOOK_TIMEOUT_S: '0.5' });
  });
  after(() => h.close());

  it('refuses loopback and private address literals (and localhost) at create with 422 url', async () => {
    const key = await newKey(h);
    const urls = [
      'http://127.0.0.1:8080/hook', 'http://[::1]:8080/hook', 'http://localhost:8080/hook', 'http://LOCALHOST./hook',
      'http://127.1/hook', 'http://[::ffff:127.0.0.1]/hook', 'http://10.1.2.3/hook', 'http://169.254.169.254/latest', 'http://0.0.0.0/hook',
    ];
    for (const url of urls) expect422(await h.request('POST', '/webhooks', { key, body: { url, events: ['task.turn_completed'] } }), 'url', url);
    assert.deepEqual((await h.request('GET', '/webhooks', { key })).body, { webhooks: [] });
  });

  it('refuses at send a host name that resolves to a loopback or private address', async (t) => {
    const name = await privateName();
    if (!name) {
      t.skip('no host name here resolves to a non-public address');
      return;
    }
    const key = await newKey(h);
    const r = await receiver(t);
    const url = `http://${name}:${new URL(r.url).port}/hook`;
    // A name is not resolved at create (its address may change); it is checked at every attempt.
    const endpoint = await register(t, h, key, url);
    await runTurn(h, key);
    const d = await untilDelivery(h, key, endpoint.webhook_id, 'the refused attempt recorded', (x) => x.attempts >= 1 && x.last_error !== null);
    assert.equal(d.status, 'pending', 'a refusal is retried like any failure');
    assert.equal(d.last_status_code, null);
    assert.match(d.last_error, /loopback|private|public/i);
    assert.equal(r.received.length, 0, 'nothing reached the receiver');
  });
});

/** A name (not `localhost`) every address of which is loopback or private: the machine's own name, usually. */
async function privateName(): Promise<string | undefined> {
  for (const name of [os.hostname(), 'ip6-localhost']) {
    if (!name || /(^|\.)localhost\.?$/i.test(name)) continue;
    const found = await dns.promises.lookup(name, { all: true }).catch(() => []);
    if (found.length > 0 && found.every((a) => blockedReason(a.address) !== undefined)) return name;
  }
  return undefined;
}

// ---- deliveries -------------------------------------------------------------------------------

describe('webhook deliveries', () => {
  let h: Harness;
  before(async () => {
    h = await startWebhookHarness(FAST_ENV);
  });
  after(() => h.close());

  it('a completed turn sends one signed task.turn_completed; an endpoint for task.turn_failed only gets nothing', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const failedOnly = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    const other = await register(t, h, key, `${failedOnly.url}/hook`, ['task.turn_failed']);
    const taskId = await runTurn(h, key);

    const [got] = await r.waitFor(1);
    assert.ok(got);
    assert.equal(got.path, '/hook');
    assert.match(String(got.headers['content-type']), /^application\/json/);
    const id = got.headers['webhook-id'] as string;
    assert.match(id, /^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    const ts = Number(got.headers['webhook-timestamp']);
    assert.ok(Number.isInteger(ts) && Math.abs(ts - Date.now() / 1000) < 60, `webhook-timestamp ${got.headers['webhook-timestamp']} is unix seconds near now`);
    assert.match(got.headers['webhook-signature'] as string, /^v1,[A-Za-z0-9+/]+=*$/, 'one signature');
    const verified = verify(endpoint.secret, got);
    assert.throws(() => verify(other.secret, got), 'another secret does not verify');

    const body = JSON.parse(got.body);
    assert.deepEqual(verified, body);
    assert.deepEqual(Object.keys(body).sort(), ['data', 'timestamp', 'type']);
    assert.equal(body.type, 'task.turn_completed');
    assert.ok(isIso(body.timestamp), body.timestamp);
    const done = await doneEvent(h, key, taskId);
    assert.equal(body.timestamp, done.at, 'when the turn ended');
    assert.equal(body.data.task_id, taskId);
    assert.equal(body.data.turn_id, done.turn_id);
    assert.equal(body.data.outcome, 'completed');
    assert.equal(body.data.output_count, done.output_count);
    assert.equal(body.data.credits_used, done.credits_used);
    assert.equal(typeof body.data.credits_used, 'number');
    assert.equal(body.data.task.task_id, taskId);
    assert.equal(body.data.task.activity, 'idle');

    const log = await untilDelivery(h, key, endpoint.webhook_id, 'the delivery recorded as delivered', (d) => d.status === 'delivered');
    assert.equal(log.delivery_id, id, 'webhook-id is the delivery_id');
    assert.equal(log.event, 'task.turn_completed');
    assert.equal(log.attempts, 1);
    assert.equal(log.last_status_code, 200);
    assert.equal(log.last_error, null);
    assert.equal(log.next_attempt_at, null);
    assert.ok(isIso(log.created_at) && isIso(log.delivered_at));
    assert.equal(r.received.length, 1, 'exactly one request');

    // The filtered endpoint's delivery would have been queued with the other one, in the same transaction.
    assert.deepEqual((await deliveries(h, key, other.webhook_id)).body.deliveries, []);
    assert.equal(failedOnly.received.length, 0);
  });

  it('a failed turn sends task.turn_failed (and nothing to an endpoint for task.turn_completed only)', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const completedOnly = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`, ['task.turn_failed']);
    const other = await register(t, h, key, `${completedOnly.url}/hook`, ['task.turn_completed']);
    const taskId = await runTurn(h, key, 'Find EU battery makers. [fail]');

    const [got] = await r.waitFor(1);
    const body = verify(endpoint.secret, got!);
    assert.equal(body.type, 'task.turn_failed');
    assert.equal(body.data.outcome, 'failed');
    assert.equal(body.data.task_id, taskId);
    assert.equal(body.data.turn_id, (await doneEvent(h, key, taskId)).turn_id);
    assert.deepEqual((await deliveries(h, key, other.webhook_id)).body.deliveries, []);
    assert.equal(completedOnly.received.length, 0);
  });

  it('POST /task/{id}/stop on a running turn sends task.turn_stopped', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    const marker = uid();
    const started = await h.request('POST', '/task', { key, body: { prompt: `Find EU battery makers. [hang] ${marker}` } });
    assert.equal(started.status, 200, started.text);
    const taskId = started.body.task_id;
    // Stopped while the model call is held: the turn is running, not yet ended by itself.
    await until('the held model call', () => h.model!.requests.some((req) => userText(req.body).includes(marker)));
    const stopped = await h.request('POST', `/task/${taskId}/stop`, { key, body: {} });
    assert.equal(stopped.status, 200, stopped.text);

    const [got] = await r.waitFor(1);
    const body = verify(endpoint.secret, got!);
    assert.equal(body.type, 'task.turn_stopped');
    assert.equal(body.data.outcome, 'stopped');
    assert.equal(body.data.task_id, taskId);
    assert.equal(body.data.turn_id, (await doneEvent(h, key, taskId)).turn_id);
  });

  it('a task group whose last run ended sends one signed group.finished with the group', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`, ['group.finished']);
    const spec = { prompt: 'Per city.', input_columns: [{ name: 'city' }], outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'mayor' }] }] };
    const created = await h.request('POST', '/group', { key, body: { task: spec, inputs: [{ city: 'Oslo' }, { city: 'Lyon' }] } });
    assert.equal(created.status, 200, created.text);

    const [got] = await r.waitFor(1);
    const body = verify(endpoint.secret, got!);
    assert.equal(body.type, 'group.finished');
    assert.equal(body.data.group_id, created.body.group_id);
    assert.equal(body.data.group.status, 'finished');
    assert.deepEqual(body.data.group.counts, { pending: 0, running: 0, completed: 2, failed: 0, stopped: 0 });
    assert.equal(body.timestamp, body.data.group.finished_at);
    await untilDelivery(h, key, endpoint.webhook_id, 'the delivery recorded as delivered', (d) => d.status === 'delivered' && d.event === 'group.finished');
    assert.equal(r.received.length, 1, 'one group.finished, none for the runs\' turns');
  });

  it('500, 500, then 200: three attempts with one webhook-id and the same bytes, then delivered', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t, (req) => (req.index < 2 ? 500 : 200));
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    await runTurn(h, key);

    const got = await r.waitFor(3);
    const id = got[0]!.headers['webhook-id'] as string;
    assert.equal(r.byId(id).length, 3, 'every attempt carries the same webhook-id');
    assert.ok(got.every((x) => x.body === got[0]!.body), 'every attempt carries the same body bytes');
    for (const attempt of got) verify(endpoint.secret, attempt);

    const log = await untilDelivery(h, key, endpoint.webhook_id, 'the delivery recorded as delivered', (d) => d.status === 'delivered');
    assert.equal(log.delivery_id, id);
    assert.equal(log.attempts, 3);
    assert.equal(log.last_status_code, 200);
    assert.equal(log.last_error, null);
    assert.equal(log.next_attempt_at, null);
    assert.ok(isIso(log.delivered_at));
    assert.equal(r.received.length, 3, 'no attempt after the 200');
  });

  it('a delivery\'s detail: its payload and each attempt as it happened, with the first 2 KiB of each answer', async (t) => {
    const key = await newKey(h);
    const long = `${'x'.repeat(2047)}é and more`;
    const r = await receiver(t, (req) => (req.index === 0 ? { status: 500, body: long } : req.index === 1 ? { status: 418, body: 'short and stout' } : { status: 200, body: 'ok' }));
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    const taskId = await runTurn(h, key);
    const listed = await untilDelivery(h, key, endpoint.webhook_id, 'the delivery recorded as delivered', (d) => d.status === 'delivered');

    const res = await h.request('GET', `/webhooks/${endpoint.webhook_id}/deliveries/${listed.delivery_id}`, { key });
    assert.equal(res.status, 200, res.text);
    const { payload, attempts, ...fields } = res.body;
    const { attempts: count, ...listedFields } = listed;
    assert.equal(count, 3);
    assert.deepEqual(fields, listedFields);
    assert.deepEqual(payload, JSON.parse(r.received[0]!.body), 'the payload is the body every attempt sent');
    assert.equal(payload.data.task_id, taskId);
    assert.deepEqual(attempts.map((a: Json) => [a.status_code, a.error === null]), [[500, false], [418, false], [200, true]]);
    assert.match(attempts[0].error, /500/);
    // 2,048 bytes: the 2,047 x and the first byte of é, which text shows as U+FFFD.
    assert.equal(attempts[0].response_excerpt, `${'x'.repeat(2047)}\uFFFD`);
    assert.equal(attempts[1].response_excerpt, 'short and stout');
    assert.equal(attempts[2].response_excerpt, 'ok');
    for (const a of attempts) {
      assert.ok(isIso(a.at));
      assert.ok(Number.isInteger(a.duration_ms) && a.duration_ms >= 0);
    }
    assert.ok(Date.parse(attempts[0].at) < Date.parse(attempts[1].at) && Date.parse(attempts[1].at) < Date.parse(attempts[2].at));

    const refused = await startWebhookReceiver();
    await refused.close();
    const gone = await register(t, h, key, `${refused.url}/hook`);
    await runTurn(h, key);
    const pending = await untilDelivery(h, key, gone.webhook_id, 'a refused attempt recorded', (d) => d.last_error !== null);
    const detail = (await h.request('GET', `/webhooks/${gone.webhook_id}/deliveries/${pending.delivery_id}`, { key })).body;
    assert.equal(detail.attempts[0].status_code, null);
    assert.equal(detail.attempts[0].response_excerpt, null);
    assert.equal(typeof detail.attempts[0].error, 'string');

    expectError(await h.request('GET', `/webhooks/${endpoint.webhook_id}/deliveries/msg_01M8HSXKFZB9D383N7A4K0W42S`, { key }), 404, 'delivery_not_found');
    expectError(await h.request('GET', `/webhooks/${endpoint.webhook_id}/deliveries/${listed.delivery_id}`), 404, 'webhook_not_found');
  });

  it('a 503 with Retry-After: the next attempt waits what the receiver asked, not the 0.2 s of the schedule', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t, (req) => (req.index === 0 ? { status: 503, headers: { 'retry-after': '2' } } : 200));
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    await runTurn(h, key);

    const [first, second] = await r.waitFor(2, 10_000);
    assert.ok(second!.receivedAt - first!.receivedAt >= 2000, `the second attempt came ${second!.receivedAt - first!.receivedAt} ms after the first`);
    const log = await untilDelivery(h, key, endpoint.webhook_id, 'the delivery recorded as delivered', (d) => d.status === 'delivered');
    assert.equal(log.attempts, 2);
  });

  it('a receiver that never answers: the attempt times out and is retried with the same webhook-id', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t, () => 'hang');
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    await runTurn(h, key);

    const log = await untilDelivery(h, key, endpoint.webhook_id, 'a timed-out attempt recorded', (d) => d.last_error !== null);
    assert.equal(log.status, 'pending');
    assert.equal(log.last_status_code, null);
    assert.match(log.last_error, /within (500 ms|0\.5 s)/, 'names the time limit');
    assert.ok(isIso(log.next_attempt_at));
    const got = await r.waitFor(2);
    assert.equal(r.byId(got[0]!.headers['webhook-id'] as string).length, got.length, 'one webhook-id on every attempt');
    assert.equal(got[0]!.headers['webhook-id'], log.delivery_id);
  });

  it('20 deliveries in flight at once print no MaxListenersExceededWarning', async (t) => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    t.after(() => process.off('warning', onWarning));
    const key = await newKey(h);
    const r = await receiver(t, () => 'hang');
    for (let i = 0; i < 20; i++) await register(t, h, key, `${r.url}/hook/${i}`);
    await runTurn(h, key);

    // One process sends 16 at a time: all of them hang at the receiver together.
    await r.waitFor(16);
    // A warning is emitted on the tick after the listener that crossed the limit was added, long before the 16th request arrives.
    assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message), []);
  });

  it('a 302 answer is not followed and counts as a failed attempt', async (t) => {
    const key = await newKey(h);
    const target = await receiver(t);
    const r = await receiver(t, () => ({ status: 302, headers: { location: `${target.url}/moved` } }));
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    await runTurn(h, key);

    const log = await untilDelivery(h, key, endpoint.webhook_id, 'the redirected attempt recorded', (d) => d.last_status_code !== null);
    assert.equal(log.status, 'pending');
    assert.equal(log.last_status_code, 302);
    assert.match(log.last_error, /302/);
    assert.ok(r.received.length >= 1);
    assert.equal(target.received.length, 0, 'the Location target received nothing');
  });

  it('a refused connection counts as a failed attempt with no status code', async (t) => {
    const key = await newKey(h);
    // A port nothing listens on any more.
    const gone = await startWebhookReceiver();
    await gone.close();
    const endpoint = await register(t, h, key, `${gone.url}/hook`);
    await runTurn(h, key);

    const log = await untilDelivery(h, key, endpoint.webhook_id, 'the refused attempt recorded', (d) => d.last_error !== null);
    assert.equal(log.status, 'pending');
    assert.equal(log.last_status_code, null);
    assert.ok(isIso(log.next_attempt_at));
  });

  it('redeliver: 202 with the delivery pending, sent again with the same webhook-id; an unknown delivery is 404', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    await runTurn(h, key);
    const first = await untilDelivery(h, key, endpoint.webhook_id, 'the first delivery', (d) => d.status === 'delivered');
    await r.waitFor(1);

    const res = await h.request('POST', `/webhooks/${endpoint.webhook_id}/deliveries/${first.delivery_id}/redeliver`, { key, body: {} });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.delivery_id, first.delivery_id);
    assert.equal(res.body.status, 'pending');
    assert.equal(res.body.delivered_at, null);
    assert.ok(isIso(res.body.next_attempt_at));

    const got = await r.waitFor(2);
    assert.equal(got[1]!.headers['webhook-id'], first.delivery_id, 'the same webhook-id');
    assert.equal(got[1]!.body, got[0]!.body, 'the same body');
    verify(endpoint.secret, got[1]!);
    const again = await untilDelivery(h, key, endpoint.webhook_id, 'the redelivery recorded', (d) => d.status === 'delivered');
    assert.equal(again.delivery_id, first.delivery_id);
    assert.equal(again.attempts, 2);
    assert.equal((await deliveries(h, key, endpoint.webhook_id)).body.deliveries.length, 1, 'no new delivery');

    expectError(await h.request('POST', `/webhooks/${endpoint.webhook_id}/deliveries/msg_01ARZ3NDEKTSV4RRFFQ69G5FAV/redeliver`, { key, body: {} }), 404, 'delivery_not_found');
    // A delivery of another endpoint of the same account is not this endpoint's.
    const second = await register(t, h, key, 'https://example.com/elsewhere', ['group.finished']);
    expectError(await h.request('POST', `/webhooks/${second.webhook_id}/deliveries/${first.delivery_id}/redeliver`, { key, body: {} }), 404, 'delivery_not_found');
    // Nor another account's.
    expectError(await h.request('POST', `/webhooks/${endpoint.webhook_id}/deliveries/${first.delivery_id}/redeliver`, { key: await newKey(h), body: {} }), 404, 'webhook_not_found');
  });

  it('rotate-secret: a new secret, the old one signs for 24 h too, and both verify the next delivery', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    const res = await h.request('POST', `/webhooks/${endpoint.webhook_id}/rotate-secret`, { key, body: {} });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.webhook_id, endpoint.webhook_id);
    assert.match(res.body.secret, /^whsec_/);
    assert.notEqual(res.body.secret, endpoint.secret);
    const expires = Date.parse(res.body.previous_secret_expires_at);
    assert.ok(Math.abs(expires - (Date.now() + 24 * 3600_000)) < 60_000, `previous_secret_expires_at ${res.body.previous_secret_expires_at} is 24 h ahead`);
    const view = await h.request('GET', `/webhooks/${endpoint.webhook_id}`, { key });
    assert.equal(view.body.previous_secret_expires_at, res.body.previous_secret_expires_at);
    assert.equal(view.body.secret, undefined);

    await runTurn(h, key);
    const [got] = await r.waitFor(1);
    const signatures = (got!.headers['webhook-signature'] as string).split(' ');
    assert.equal(signatures.length, 2, 'two signatures, space-separated');
    assert.ok(signatures.every((s) => /^v1,[A-Za-z0-9+/]+=*$/.test(s)));
    verify(endpoint.secret, got!);
    verify(res.body.secret, got!);
    assert.throws(() => verify(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, got!), 'a third secret does not verify');

    // A second rotation: the secret it replaces signs alongside; the first one no longer does.
    const again = await h.request('POST', `/webhooks/${endpoint.webhook_id}/rotate-secret`, { key });
    assert.equal(again.status, 200, again.text);
    await runTurn(h, key);
    const [, next] = await r.waitFor(2);
    assert.equal((next!.headers['webhook-signature'] as string).split(' ').length, 2);
    verify(res.body.secret, next!);
    verify(again.body.secret, next!);
    assert.throws(() => verify(endpoint.secret, next!), 'the first secret is retired');
  });

  it('DELETE: 200 with the endpoint, then 404; nothing more is sent to it, a pending retry included', async (t) => {
    const key = await newKey(h);
    const deleted = await receiver(t, () => 500);
    // Refuses its first two attempts: its third comes two retry waits after the later turn.
    const kept = await receiver(t, (req) => (req.index < 2 ? 500 : 200));
    const endpoint = await register(t, h, key, `${deleted.url}/hook`);
    await runTurn(h, key);
    await deleted.waitFor(1);

    const res = await h.request('DELETE', `/webhooks/${endpoint.webhook_id}`, { key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.webhook_id, endpoint.webhook_id);
    assert.equal(res.body.url, endpoint.url);
    assert.equal(res.body.secret, undefined);
    expectError(await h.request('GET', `/webhooks/${endpoint.webhook_id}`, { key }), 404, 'webhook_not_found');
    expectError(await h.request('GET', `/webhooks/${endpoint.webhook_id}/deliveries`, { key }), 404, 'webhook_not_found');
    expectError(await h.request('DELETE', `/webhooks/${endpoint.webhook_id}`, { key }), 404, 'webhook_not_found');
    assert.deepEqual((await h.request('GET', '/webhooks', { key })).body, { webhooks: [] });
    const countAtDelete = deleted.received.length;

    // A later turn: the endpoint still registered gets it, the deleted one nothing (nor its retry).
    const keptEndpoint = await register(t, h, key, `${kept.url}/hook`);
    await runTurn(h, key);
    // The kept endpoint's delivery, retried twice, ends two retry waits (0.2 s each) after the
    // delete: a retry of the deleted endpoint, due earlier, would have come by then.
    const keptDelivery = await untilDelivery(h, key, keptEndpoint.webhook_id, 'the kept endpoint\'s delivery after two retries', (d) => d.status === 'delivered');
    assert.equal(keptDelivery.attempts, 3);
    assert.ok(deleted.received.length <= countAtDelete + 1, `at most the attempt already in flight at the delete (got ${deleted.received.length - countAtDelete} more)`);
    assert.equal(kept.received.length, 3);
  });

  it('the delivery log pages newest first with X-Next-Cursor and Link, without repeats', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t);
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    for (let i = 0; i < 5; i++) await runTurn(h, key);
    await r.waitFor(5);

    const all = (await deliveries(h, key, endpoint.webhook_id)).body.deliveries;
    assert.equal(all.length, 5);
    const sent = r.received.map((x) => x.headers['webhook-id']);
    assert.deepEqual(all.map((d: Json) => d.delivery_id), [...sent].reverse(), 'newest first: the reverse of the order sent');

    const seen: string[] = [];
    let query = '?limit=2';
    for (let page = 0; ; page++) {
      assert.ok(page < 5, 'the pages end');
      const res = await deliveries(h, key, endpoint.webhook_id, query);
      seen.push(...res.body.deliveries.map((d: Json) => d.delivery_id));
      const cursor = res.headers.get('x-next-cursor');
      const link = res.headers.get('link');
      if (seen.length === 5) {
        assert.equal(res.body.deliveries.length, 1);
        assert.equal(cursor, null, 'no cursor on the last page');
        assert.equal(link, null, 'no Link on the last page');
        break;
      }
      assert.equal(res.body.deliveries.length, 2);
      assert.ok(cursor, 'X-Next-Cursor while more remain');
      assert.ok(link, 'Link while more remain');
      const next = /^<([^>]+)>; rel="next"$/.exec(link);
      assert.ok(next, link);
      const url = new URL(next[1]!);
      assert.equal(url.pathname, `/webhooks/${endpoint.webhook_id}/deliveries`);
      assert.equal(url.searchParams.get('cursor'), cursor);
      assert.equal(url.searchParams.get('limit'), '2');
      query = url.search;
    }
    assert.deepEqual(seen, all.map((d: Json) => d.delivery_id), 'the pages together are the whole log, in order, once each');
    for (const limit of ['0', '201', 'x']) expect422(await h.request('GET', `/webhooks/${endpoint.webhook_id}/deliveries?limit=${limit}`, { key }), 'limit', `limit=${limit}`);
    // A cursor is a delivery id this server issued: anything else would start a page anywhere.
    for (const cursor of ['zzz', 'msg_1', endpoint.webhook_id]) {
      expect422(await h.request('GET', `/webhooks/${endpoint.webhook_id}/deliveries?cursor=${encodeURIComponent(cursor)}`, { key }), 'cursor', `cursor=${cursor}`);
    }
  });
});

// ---- giving up --------------------------------------------------------------------------------

describe('webhook deliveries that give up', () => {
  let h: Harness;
  before(async () => {
    h = await startWebhookHarness({ ...FAST_ENV, QUARRY_WEBHOOK_GIVE_UP_S: '1' });
  });
  after(() => h.close());

  it('a receiver always answering 500 ends dead after the give-up time; a redelivery then revives it', async (t) => {
    const key = await newKey(h);
    const r = await receiver(t, () => 500);
    const endpoint = await register(t, h, key, `${r.url}/hook`);
    await runTurn(h, key);

    const dead = await untilDelivery(h, key, endpoint.webhook_id, 'the delivery to be dead', (d) => d.status === 'dead', 8000);
    assert.equal(dead.next_attempt_at, null);
    assert.equal(dead.last_status_code, 500);
    assert.match(dead.last_error, /500/);
    assert.equal(dead.delivered_at, null);
    assert.ok(dead.attempts >= 2, `retried before giving up (attempts ${dead.attempts})`);
    assert.equal(r.received.length, dead.attempts, 'one request per attempt');
    assert.equal(r.byId(dead.delivery_id).length, dead.attempts);
    r.answer = () => 200;
    const res = await h.request('POST', `/webhooks/${endpoint.webhook_id}/deliveries/${dead.delivery_id}/redeliver`, { key, body: {} });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.status, 'pending');
    const revived = await untilDelivery(h, key, endpoint.webhook_id, 'the redelivery delivered', (d) => d.status === 'delivered');
    // Nothing was sent while it was dead: the redelivery is the one request after the dead ones.
    assert.equal(r.received.length, dead.attempts + 1, 'nothing sent once dead');
    assert.equal(revived.last_status_code, 200);
    assert.equal(revived.last_error, null);
    assert.equal(r.received.at(-1)!.headers['webhook-id'], dead.delivery_id);
  });
});

/** The `done` event of the task's (one) turn, as its account reads it. */
async function doneEvent(h: Harness, key: string, taskId: string): Promise<Json> {
  const res = await h.request('GET', `/task/${taskId}/events?limit=1000`, { key });
  assert.equal(res.status, 200, res.text);
  const done = res.body.events.filter((e: Json) => e.type === 'done');
  assert.equal(done.length, 1, 'one turn ended');
  return done[0];
}
