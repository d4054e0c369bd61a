/**
 * The client package over a real socket (decisions §20): client.account(), the task list's
 * filters, a group's runs and a retry of its stopped runs, a webhook delivery's detail.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, userText } from '../kit/task-api.js';
import { startWebhookReceiver } from '../kit/webhook-receiver.js';
import { QuarryClient, type GroupRun, type Task } from '../../packages/client/src/index.js';

const SPEC = {
  name: 'Company facts',
  prompt: 'For each company, find its headquarters city.',
  input_columns: [{ name: 'company', type: 'string' as const, required: true }],
  outputs: [{ id: 'facts', kind: 'table' as const, columns: [{ name: 'hq', type: 'string' as const }] }],
};

describe('the client finds work', () => {
  let h: Harness;
  let client: QuarryClient;

  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_FETCH_ALLOW_PRIVATE: '1', QUARRY_WEBHOOK_RETRY_S: '0.2' } });
    fakeModel(h).setResponder((body) => (userText(body).includes('FAIL') ? { status: 400, errorMessage: 'refused' } : userText(body).includes('HOLD') ? { hang: true } : { text: 'Done.' }));
    const admin = new QuarryClient({ baseURL: h.url, adminKey: ADMIN_KEY });
    const { api_key } = await admin.admin.accounts.create({ name: 'finder', credits: 100 });
    client = new QuarryClient({ baseURL: h.url, apiKey: api_key, retryBaseDelayMs: 50 });
  });
  after(() => h.close());

  it('account() answers the key\'s account', async () => {
    const account = await client.account();
    assert.equal(account.name, 'finder');
    assert.equal(account.balance, 100);
    assert.equal(account.credits_used, 0);
  });

  it('tasks.list passes the filters, and last_turn comes typed', async () => {
    const ok = await client.tasks.create({ prompt: 'Find solar farms.' });
    const bad = await client.tasks.create({ prompt: 'Find wind parks. FAIL' });
    await until('both turns ended', async () => (await client.tasks.state(ok.task_id)).active === false && (await client.tasks.state(bad.task_id)).active === false, { timeoutMs: 10_000 });
    const failed: Task[] = [];
    for await (const task of client.tasks.list({ outcome: 'failed', state: 'idle', q: 'WIND', created_after: new Date(Date.parse(bad.created_at) - 1).toISOString() })) failed.push(task);
    assert.deepEqual(failed.map((t) => t.task_id), [bad.task_id]);
    assert.equal(failed[0]!.last_turn?.outcome, 'failed');
  });

  it('groups.runs pages every run; retry with include runs stopped ones again', async () => {
    const group = await client.groups.create({ task: SPEC, inputs: [{ company: 'A' }, { company: 'HOLD B' }, { company: 'C' }], max_parallel: 3 });
    await until('A and C done, B held', async () => {
      const g = await client.groups.get(group.group_id);
      return g.counts.completed === 2 && g.counts.running === 1;
    }, { timeoutMs: 10_000 });
    await client.groups.stop(group.group_id);
    const runs: GroupRun[] = [];
    for await (const run of client.groups.runs(group.group_id, { limit: 2 })) runs.push(run);
    assert.deepEqual(runs.map((r) => [r.input_index, r.status]), [[0, 'completed'], [1, 'stopped'], [2, 'completed']]);
    const stopped = await client.groups.runs(group.group_id, { status: 'stopped' });
    assert.deepEqual(stopped.data.map((r) => r.input_index), [1]);

    fakeModel(h).setResponder(() => ({ text: 'Done.' }));
    const retried = await client.groups.retry(group.group_id, { include: ['stopped'] });
    assert.equal(retried.status, 'running');
    await until('the retried run completed', async () => (await client.groups.get(group.group_id)).counts.completed === 3, { timeoutMs: 10_000 });
  });

  it('webhooks.delivery answers the payload and the attempts', async () => {
    const receiver = await startWebhookReceiver((r) => (r.index === 0 ? { status: 503, body: 'busy' } : 200));
    try {
      const hook = await client.webhooks.create({ url: `${receiver.url}/hook`, events: ['task.turn_completed'] });
      await client.tasks.create({ prompt: 'Find hydro dams.' });
      await receiver.waitFor(2);
      let deliveryId = '';
      await until('delivered', async () => {
        const [d] = (await client.webhooks.deliveries(hook.webhook_id)).data;
        deliveryId = d?.delivery_id ?? '';
        return d?.status === 'delivered';
      }, { timeoutMs: 10_000 });
      const detail = await client.webhooks.delivery(hook.webhook_id, deliveryId);
      assert.deepEqual(detail.attempts.map((a) => [a.status_code, a.response_excerpt]), [[503, 'busy'], [200, '']]);
      assert.equal(detail.payload.type, 'task.turn_completed');
      await client.webhooks.delete(hook.webhook_id);
    } finally {
      await receiver.close();
    }
  });
});
