/**
 * Webhook deliveries across crashes and across a cluster (decisions §15.3): real `quarry serve`
 * processes from the build, a fake model and a loopback receiver. A delivery committed with the
 * turn's end survives a kill -9 before it is sent; one whose sender died after the receiver
 * answered is sent again with the same webhook-id and body once its claim runs out; and on
 * PostgreSQL two workers claiming side by side send each delivery exactly once.
 *
 * The cases run side by side: the second one waits out a dead sender's claim (the attempt
 * timeout + CLAIM_MARGIN_MS), which the others fit into.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { startFakeOpenAI, type FakeOpenAI } from '../kit/fake-openai-server.js';
import { startLoopbackServer } from '../kit/loopback-server.js';
import { until, within } from '../kit/bounded-waits.js';
import { fetchJson } from '../kit/http.js';
import { dropSchemas, skipWithoutPostgres, TEST_DATABASE_URL } from '../kit/postgres.js';
import { CLAIM_MARGIN_MS } from '../../src/webhooks/dispatcher.js';
import { killAll, makeDataDir, removeDataDir, startServer, type ServerProcess } from '../kit/process.js';
import { startWebhookReceiver, type ReceivedWebhook } from '../kit/webhook-receiver.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const ADMIN_KEY = 'webhooks-delivery-admin-key';
/** A dead sender's claim lasts this + CLAIM_MARGIN_MS. */
const WEBHOOK_TIMEOUT_S = '0.5';

let model: FakeOpenAI;
const skipPostgres = await skipWithoutPostgres();

function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    QUARRY_MODEL_BASE_URL: model.url,
    QUARRY_MODEL: 'fake-model',
    QUARRY_ADMIN_KEY: ADMIN_KEY,
    // The receiver listens on loopback.
    QUARRY_FETCH_ALLOW_PRIVATE: '1',
    ...extra,
  };
}

async function call(s: ServerProcess, key: string, method: string, p: string, body?: unknown) {
  return fetchJson(method, s.url + p, { key, body });
}

/** A fresh account's key. */
async function newAccount(s: ServerProcess): Promise<string> {
  const res = await call(s, ADMIN_KEY, 'POST', '/admin/accounts', { name: 'webhooks-delivery', credits: 1000 });
  assert.equal(res.status, 201, res.text);
  return res.body.api_key;
}

async function newEndpoint(s: ServerProcess, key: string, url: string): Promise<{ webhook_id: string; secret: string }> {
  const res = await call(s, key, 'POST', '/webhooks', { url, events: ['task.turn_completed', 'task.turn_failed', 'task.turn_stopped'] });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function startTask(s: ServerProcess, key: string, prompt: string): Promise<string> {
  const res = await call(s, key, 'POST', '/task', { prompt });
  assert.equal(res.status, 200, res.text);
  return res.body.task_id;
}

/** Every delivery of the endpoint, page after page. */
async function deliveries(s: ServerProcess, key: string, webhookId: string): Promise<Json[]> {
  const all: Json[] = [];
  for (let cursor: string | null = ''; cursor !== null;) {
    const res = await call(s, key, 'GET', `/webhooks/${webhookId}/deliveries?limit=200${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.status, 200, res.text);
    all.push(...res.body.deliveries);
    cursor = res.headers.get('x-next-cursor');
  }
  return all;
}

/** The endpoint's deliveries once there are `count` and each is delivered. */
async function allDelivered(s: ServerProcess, key: string, webhookId: string, count: number, timeoutMs: number): Promise<Json[]> {
  let list: Json[] = [];
  await until(`${count} deliveries delivered`, async () => {
    list = await deliveries(s, key, webhookId);
    return list.length === count && list.every((d) => d.status === 'delivered');
  }, { timeoutMs, pollMs: 50 });
  return list;
}

/** The payload, once the reference library accepts the request's signature. */
function verified(secret: string, r: Pick<ReceivedWebhook, 'headers' | 'body'>): Json {
  return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
}

/** Waits for a process that is to SIGKILL itself at its crash point. */
async function crashed(s: ServerProcess): Promise<void> {
  const exit = await within(s.exited, 20_000, `${s.name} to reach its crash point`);
  assert.equal(exit.signal, 'SIGKILL', `${s.name} died at its crash point:\n${s.output()}`);
}

/**
 * The helper's receiver answers at once; this one answers 200 only after `delayMs`, so each
 * attempt keeps its claim open longer and claims of the two workers overlap more.
 */
async function startSlowReceiver(delayMs: number) {
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const server = await startLoopbackServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      setTimeout(() => res.writeHead(200).end(), delayMs);
    });
  });
  return { url: server.url, received, close: () => server.close() };
}

describe('webhook deliveries', { concurrency: true, timeout: 120_000 }, () => {
  before(async () => {
    model = await startFakeOpenAI();
  });

  after(async () => {
    await killAll();
    await model?.close();
  });

  it('SQLite: a delivery committed with the turn\'s end is sent after a kill -9 before its send', async () => {
    const receiver = await startWebhookReceiver();
    const dataDir = makeDataDir('quarry-webhooks-');
    const servers: ServerProcess[] = [];
    try {
      const first = await startServer({ dataDir, env: serverEnv(), crashAt: 'turn.finished' });
      servers.push(first);
      const key = await newAccount(first);
      const endpoint = await newEndpoint(first, key, `${receiver.url}/hook`);
      const taskId = await startTask(first, key, 'webhook after a crash');
      await crashed(first);
      // The crash point follows the commit synchronously: nothing could have been sent.
      assert.equal(receiver.received.length, 0);

      const second = await startServer({ dataDir, env: serverEnv() });
      servers.push(second);
      await receiver.waitFor(1, 15_000);
      const [delivery] = await allDelivered(second, key, endpoint.webhook_id, 1, 10_000);

      assert.equal(delivery.event, 'task.turn_completed');
      assert.equal(delivery.attempts, 1);
      assert.equal(delivery.last_status_code, 200);
      const sent = receiver.byId(delivery.delivery_id);
      assert.ok(sent.length >= 1, 'at least once');
      assert.equal(receiver.received.length, sent.length, 'every request carried the delivery\'s id as webhook-id');
      for (const r of sent) {
        assert.equal(r.path, '/hook');
        const payload = verified(endpoint.secret, r);
        assert.equal(payload.type, 'task.turn_completed');
        assert.equal(payload.data.task_id, taskId);
        assert.equal(payload.data.outcome, 'completed');
        assert.equal(payload.data.task.task_id, taskId);
      }
    } finally {
      await Promise.all(servers.map((s) => s.kill9()));
      await receiver.close();
      removeDataDir(dataDir);
    }
  });

  it('SQLite: a delivery whose sender died after the receiver answered is sent again with the same webhook-id and body', async () => {
    const receiver = await startWebhookReceiver();
    const dataDir = makeDataDir('quarry-webhooks-');
    const env = serverEnv({ QUARRY_WEBHOOK_TIMEOUT_S: WEBHOOK_TIMEOUT_S });
    const servers: ServerProcess[] = [];
    try {
      const first = await startServer({ dataDir, env, crashAt: 'webhook.sent' });
      servers.push(first);
      const key = await newAccount(first);
      const endpoint = await newEndpoint(first, key, receiver.url);
      const taskId = await startTask(first, key, 'webhook sent, then a crash');
      await crashed(first);
      assert.equal(receiver.received.length, 1, 'the receiver got the attempt the crash cut off');
      // From the attempt's arrival, not from when the crash was noticed (later on a busy machine).
      const firstAt = receiver.received[0]!.receivedAt;

      const second = await startServer({ dataDir, env });
      servers.push(second);
      // The dead sender's claim runs out first (timeout + CLAIM_MARGIN_MS).
      await receiver.waitFor(2, 20_000 + CLAIM_MARGIN_MS);
      const againAfterMs = receiver.received[1]!.receivedAt - firstAt;
      const [delivery] = await allDelivered(second, key, endpoint.webhook_id, 1, 10_000);

      assert.equal(delivery.attempts, 2);
      assert.equal(delivery.last_status_code, 200);
      const sent = receiver.byId(delivery.delivery_id);
      assert.equal(sent.length, 2, 'sent twice, both times with the delivery\'s id');
      assert.equal(receiver.received.length, 2);
      assert.equal(sent[1]!.body, sent[0]!.body, 'the same body');
      for (const r of sent) {
        const payload = verified(endpoint.secret, r);
        assert.equal(payload.type, 'task.turn_completed');
        assert.equal(payload.data.task_id, taskId);
      }
      // Not taken over while the dead sender's claim still held (it was made just before the first attempt).
      assert.ok(againAfterMs > CLAIM_MARGIN_MS, `sent again ${againAfterMs} ms after the first attempt`);
    } finally {
      await Promise.all(servers.map((s) => s.kill9()));
      await receiver.close();
      removeDataDir(dataDir);
    }
  });

  it('PostgreSQL: two workers claiming side by side send each delivery exactly once', { skip: skipPostgres }, async (t) => {
    const TASKS = 60;
    const receiver = await startSlowReceiver(100);
    const schema = `t_webhooks_${process.pid}_${Date.now()}`;
    const dataDir = makeDataDir('quarry-webhooks-pg-');
    const nodes: ServerProcess[] = [];
    const nodeEnv = (name: string, extra: Record<string, string> = {}) =>
      serverEnv({ QUARRY_DATABASE_URL: TEST_DATABASE_URL, QUARRY_DATABASE_SCHEMA: schema, QUARRY_WORKER_ID: name, ...extra });
    try {
      // The API node migrates the empty schema; the workers join it. Workers log each delivered attempt at debug.
      const api = await startServer({ name: 'api', role: 'api', dataDir, env: nodeEnv('api') });
      nodes.push(api);
      const workers = await Promise.all(['worker-1', 'worker-2'].map((name) =>
        startServer({ name, role: 'worker', dataDir, env: nodeEnv(name, { QUARRY_LOG_LEVEL: 'debug' }) })));
      nodes.push(...workers);

      const key = await newAccount(api);
      const endpoint = await newEndpoint(api, key, receiver.url);
      const taskIds = await Promise.all(Array.from({ length: TASKS }, (_, i) => startTask(api, key, `job ${i}`)));

      await allDelivered(api, key, endpoint.webhook_id, TASKS, 30_000);
      // Which worker sent what, and when, from their 'webhook delivered' log lines.
      const sentBy = () => workers.map((w) => w.lines.flatMap((line) => {
        const entry = line.startsWith('{') ? JSON.parse(line) as Json : undefined;
        return entry?.msg === 'webhook delivered' ? [{ id: entry.delivery_id as string, time: entry.time as number }] : [];
      }));
      // A second claim of a delivery is made before its first attempt is recorded, and sent at
      // once: before a delivery made after they were all recorded is claimed. That one delivered,
      // and every request the receiver got answered and logged, no second send is still to come.
      taskIds.push(await startTask(api, key, 'the last job'));
      const list = await allDelivered(api, key, endpoint.webhook_id, TASKS + 1, 30_000);
      await until('every request the receiver got logged as delivered by a worker', () => sentBy().flat().length >= receiver.received.length);

      assert.deepEqual(list.filter((d) => d.attempts !== 1).map((d) => [d.delivery_id, d.attempts]), [], 'one attempt each');
      const perId = new Map<string, number>();
      for (const r of receiver.received) {
        const id = String(r.headers['webhook-id']);
        perId.set(id, (perId.get(id) ?? 0) + 1);
      }
      assert.deepEqual([...perId].filter(([, n]) => n !== 1), [], 'every webhook-id reached the receiver once');
      assert.deepEqual([...perId.keys()].sort(), list.map((d) => d.delivery_id).sort(), 'the receiver got exactly the listed deliveries');
      const tasksSeen = receiver.received.map((r) => verified(endpoint.secret, r).data.task_id as string);
      assert.deepEqual(tasksSeen.sort(), [...taskIds].sort(), 'one delivery per turn');

      const [one, two] = sentBy() as [{ id: string; time: number }[], { id: string; time: number }[]];
      assert.deepEqual(one.filter((a) => two.some((b) => b.id === a.id)), [], 'no delivery sent by both workers');
      assert.equal(one.length + two.length, TASKS + 1);
      const t0 = Math.min(...[...one, ...two].map((s) => s.time));
      const span = (s: { time: number }[]) => (s.length ? `${s[0]!.time - t0}..${s.at(-1)!.time - t0} ms` : 'none');
      t.diagnostic(`sends: worker-1 ${one.length} (${span(one)}), worker-2 ${two.length} (${span(two)})`);
    } finally {
      await Promise.all(nodes.map((n) => n.kill9()));
      await receiver.close();
      await dropSchemas(schema);
      removeDataDir(dataDir);
    }
  });
});
