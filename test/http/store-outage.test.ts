import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startHarness } from '../kit/harness.js';
import { waitIdle as waitIdleOn } from '../kit/http.js';
import type { Repositories, StepsRepository } from '../../src/store/store.js';

test('when the store cannot be read, status routes answer 503 service_unavailable and unknown keys 503 auth_unavailable', async () => {
  const h = await startHarness({ model: false });
  try {
    const created = await h.request('POST', '/task', { body: { prompt: 'q' } });
    assert.equal(created.status, 200);
    const taskId = created.body.task_id;
    const fresh = await h.quarry.accounts.createAccount('never-used', 5);

    await h.quarry.store.close();

    for (const path of [`/task/${taskId}`, `/task/${taskId}/state`, `/task/${taskId}/stream`]) {
      const res = await h.request('GET', path);
      assert.equal(res.status, 503, path);
      assert.equal(res.body.error, 'service_unavailable');
      assert.equal(res.body.retryable, true);
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
      assert.equal(res.body.retry_after, Number(res.headers.get('retry-after')));
    }
    const start = await h.request('POST', '/task', { body: { prompt: 'q' } });
    assert.equal(start.status, 503);
    assert.equal(start.body.error, 'service_unavailable');

    const auth = await h.request('GET', '/task', { key: fresh.apiKey });
    assert.equal(auth.status, 503);
    assert.equal(auth.body.error, 'auth_unavailable');
    assert.equal(auth.body.retryable, true);
    assert.ok(Number(auth.headers.get('retry-after')) >= 1);
  } finally {
    await h.close().catch(() => {});
  }
});

test('a step whose commit went through but whose answer was lost is recognised when sent again: the turn ends done, charged once', async () => {
  const h = await startHarness();
  try {
    const { store } = h.quarry;
    const commit = store.transaction.bind(store);
    let lost = 0;
    // The connection drops right after COMMIT was sent: the step is stored, the turn hears an outage.
    store.transaction = async <T>(fn: (tx: Repositories) => Promise<T>): Promise<T> => {
      let stepStored = false;
      const result = await commit(async (tx) => {
        const steps: StepsRepository = {
          insert: async (...args) => (stepStored = await tx.steps.insert(...args)),
          get: (turnId, step) => tx.steps.get(turnId, step),
          list: (turnId) => tx.steps.list(turnId),
        };
        return fn(new Proxy(tx, { get: (target, name) => (name === 'steps' ? steps : Reflect.get(target, name)) }));
      });
      if (stepStored && lost++ === 0) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
      return result;
    };
    const account = await h.quarry.accounts.createAccount('lost-answer', 10);
    h.model!.script({ text: 'Rock of Ages is in Barre.' });

    const created = await h.request('POST', '/task', { body: { prompt: 'Where is Rock of Ages?' }, key: account.apiKey });
    assert.equal(created.status, 200, created.text);
    const taskId = created.body.task_id;
    await waitIdleOn((method, path, opts) => h.request(method, path, { ...opts, key: account.apiKey }), taskId, { timeoutMs: 10_000 });

    assert.equal(lost, 1, 'the answer of one step commit was lost');
    const events = (await h.request('GET', `/task/${taskId}/events?limit=100`, { key: account.apiKey })).body.events;
    const done = events.at(-1);
    assert.equal(done.type, 'done');
    assert.equal(done.outcome, 'completed');
    assert.ok(done.credits_used > 0);
    assert.equal(events.filter((e: { type: string }) => e.type === 'text').map((e: { text: string }) => e.text).join(''), 'Rock of Ages is in Barre.');
    const after = await h.quarry.store.accounts.get(account.account.id);
    assert.equal(10_000_000 - (after?.balanceMicros ?? 0), Math.round(done.credits_used * 1e6), 'the step was charged once');
  } finally {
    await h.close().catch(() => {});
  }
});

test('/readyz answers 503 service_unavailable while the store cannot be read', async () => {
  // Over a socket: only a listening server is ready.
  const h = await startHarness({ listen: true, model: false });
  try {
    const ready = await h.request('GET', '/readyz', { key: null });
    assert.equal(ready.status, 200, ready.text);
    assert.deepEqual(ready.body, { ok: true });

    await h.quarry.store.close();

    const res = await h.request('GET', '/readyz', { key: null });
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.error, 'service_unavailable');
    assert.equal(res.body.retryable, true);
    assert.equal(res.body.retry_after, Number(res.headers.get('retry-after')));
  } finally {
    await h.close().catch(() => {});
  }
});
