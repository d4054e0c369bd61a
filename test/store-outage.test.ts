import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startHarness } from './helpers/harness.js';

test('when the store cannot be read, status routes answer 503 service_unavailable and unknown keys 503 auth_unavailable', async () => {
  const h = await startHarness({ inject: true, model: false });
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

test('/readyz answers 503 service_unavailable while the store cannot be read', async () => {
  // Over a socket: only a listening server is ready.
  const h = await startHarness({ model: false });
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
