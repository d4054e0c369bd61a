/**
 * Idempotency-Key under concurrency (decisions §2, §14): the key is claimed inside the
 * transaction of the change it guards, so requests with one key that arrive together make one
 * change, and every one of them answers with that change's answer. Real HTTP, on SQLite, or on
 * PostgreSQL with QUARRY_TEST_STORE=postgres.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, waitIdle, type Harness, type TestResponse } from '../kit/harness.js';
import { createAccount, fakeModel, startTestHarness, taskEvents, taskIds, taskState, uid, waitIdleAs } from '../kit/task-api.js';
import type { FakeReply } from '../kit/fake-openai-server.js';
import { emptySpec } from '../../src/domain/spec.js';
import { idempotencyGuard, IdempotencyKeyClaimed } from '../../src/http/idempotency.js';
import { IdempotencyRecords } from '../../src/tasks/idempotency-records.js';

const TOGETHER = 20;
const PROMPT = 'Find every company making Li-ion cells in the EU.';

/** `count` copies of one request with one Idempotency-Key, all sent at once. */
function sendTogether(h: Harness, count: number, method: string, path: string, key: string, body: unknown, apiKey?: string): Promise<TestResponse[]> {
  return Promise.all(Array.from({ length: count }, () => h.request(method, path, { body, headers: { 'idempotency-key': key }, ...(apiKey ? { key: apiKey } : {}) })));
}

/** One request made the change; every other one replayed its answer, byte for byte. */
function assertOneChange(answers: TestResponse[], status: number): string {
  for (const res of answers) assert.equal(res.status, status, res.text);
  const fresh = answers.filter((res) => res.headers.get('idempotent-replayed') !== 'true');
  assert.equal(fresh.length, 1, `one answer made the change, the others are replayed: ${fresh.length} were not`);
  const taskId = fresh[0]!.body.task_id as string;
  for (const res of answers) assert.equal(res.text, fresh[0]!.text, 'a replay is the first answer');
  return taskId;
}

/** How many turns of the task started (each records a `task` event with reason turn_started). */
async function turnsRun(h: Harness, taskId: string): Promise<number> {
  return (await taskEvents(h, taskId)).filter((e) => e.type === 'task' && e.reason === 'turn_started').length;
}

describe('Idempotency-Key under concurrency', () => {
  it(`${TOGETHER} simultaneous creates with one key leave exactly one task, and all answer with it`, async (t) => {
    const h = await startTestHarness(t);
    const answers = await sendTogether(h, TOGETHER, 'POST', '/task', `create-${uid()}`, { prompt: PROMPT });
    const taskId = assertOneChange(answers, 200);
    assert.deepEqual(await taskIds(h), [taskId]);
    await waitIdle(h, taskId);
    assert.equal(await turnsRun(h, taskId), 1, 'one turn ran');
  });

  it(`${TOGETHER} simultaneous creates of a client-chosen task_id with one key all answer 200, none task_exists`, async (t) => {
    const h = await startTestHarness(t);
    const taskId = `mine-${uid()}`;
    const spec = { prompt: PROMPT, outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', type: 'string' }] }] };
    const answers = await sendTogether(h, TOGETHER, 'POST', '/task/start', `start-${uid()}`, { task_id: taskId, task: spec });
    assert.equal(assertOneChange(answers, 200), taskId);
    assert.deepEqual(await taskIds(h), [taskId]);
    await waitIdle(h, taskId);
  });

  it(`${TOGETHER} simultaneous continues with one key queue one message behind a running turn (202)`, async (t) => {
    const h = await startTestHarness(t);
    let release!: (reply: FakeReply) => void;
    const held = new Promise<FakeReply>((resolve) => (release = resolve));
    fakeModel(h).setResponder((_body, index) => (index === 0 ? held : { text: 'Done.' }));
    const created = await h.request('POST', '/task', { body: { prompt: PROMPT } });
    assert.equal(created.status, 200, created.text);
    const taskId = created.body.task_id as string;
    await fakeModel(h).waitForRequests(1);

    const answers = await sendTogether(h, TOGETHER, 'POST', `/task/${taskId}/continue`, `message-${uid()}`, { message: 'Add Norway.' });
    assert.equal(assertOneChange(answers, 202), taskId);
    assert.equal((await taskState(h, taskId)).queued_messages, 1, 'one message was queued');

    release({ text: 'Planned.' });
    await waitIdle(h, taskId);
    assert.equal(await turnsRun(h, taskId), 2, 'the first turn, then the one message');
  });

  it(`${TOGETHER} simultaneous continues with one key start one turn on an idle task (200)`, async (t) => {
    const h = await startTestHarness(t);
    const created = await h.request('POST', '/task', { body: { prompt: PROMPT } });
    const taskId = created.body.task_id as string;
    await waitIdle(h, taskId);

    const answers = await sendTogether(h, TOGETHER, 'POST', `/task/${taskId}/continue`, `message-${uid()}`, { message: 'Add Norway.' });
    assert.equal(assertOneChange(answers, 200), taskId);
    await waitIdle(h, taskId);
    assert.equal(await turnsRun(h, taskId), 2, 'the create, then one message');
    const state = await taskState(h, taskId);
    assert.equal(state.queued_messages, 0);
  });

  it('simultaneous requests with one key and two different bodies: one change, the other body is 422', async (t) => {
    const h = await startTestHarness(t);
    const key = `mixed-${uid()}`;
    const answers = await Promise.all(
      Array.from({ length: TOGETHER }, (_, i) => h.request('POST', '/task', { body: { prompt: i % 2 === 0 ? 'first body' : 'second body' }, headers: { 'idempotency-key': key } })),
    );
    const ok = answers.filter((res) => res.status === 200);
    const refused = answers.filter((res) => res.status === 422);
    assert.equal(ok.length + refused.length, TOGETHER, answers.map((res) => res.status).join(' '));
    assert.equal(ok.length, TOGETHER / 2, 'the requests with the body that made the change are answered with it');
    assertOneChange(ok, 200);
    for (const res of refused) assert.equal(res.body.param, 'Idempotency-Key', res.text);
    assert.equal((await taskIds(h)).length, 1);
  });

  it('a refused request leaves its key free: the same key goes through once the refusal is gone', async (t) => {
    const h = await startTestHarness(t);
    const account = await createAccount(h, `broke-${uid()}`, 0);
    const key = `retry-${uid()}`;
    const refused = await sendTogether(h, 3, 'POST', '/task', key, { prompt: PROMPT }, account.api_key);
    for (const res of refused) {
      assert.equal(res.status, 402, res.text);
      assert.equal(res.headers.get('idempotent-replayed'), null, 'a refusal is not remembered');
    }
    const credited = await h.request('POST', `/admin/accounts/${account.account_id}/credits`, { body: { amount: 5 }, key: ADMIN_KEY });
    assert.equal(credited.status, 200, credited.text);
    const answers = await sendTogether(h, TOGETHER, 'POST', '/task', key, { prompt: PROMPT }, account.api_key);
    const taskId = assertOneChange(answers, 200);
    assert.deepEqual(await taskIds(h, account.api_key), [taskId]);
    await waitIdleAs(h, taskId, account.api_key);
  });

  it('the key is claimed inside the change\'s transaction: of simultaneous changes under one key, one is made and the others change nothing', async (t) => {
    const h = await startTestHarness(t);
    const { tasks, accounts } = h.quarry;
    const accountId = (await accounts.createAccount(`claims-${uid()}`, 10)).account.id;
    const settle = async (changes: Promise<unknown>[]) => {
      const outcomes = await Promise.allSettled(changes);
      const made = outcomes.filter((o) => o.status === 'fulfilled');
      const lost = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
      assert.equal(made.length, 1, 'one change was made');
      for (const reason of lost) assert.ok(reason instanceof IdempotencyKeyClaimed, String(reason));
    };

    // Started in one turn of the event loop, the creates run side by side on PostgreSQL and in
    // one group commit on SQLite: either way only the database's unique key can tell them apart.
    const records = new IdempotencyRecords(h.quarry.store);
    const createKey = idempotencyGuard(records, accountId, { key: `create-${uid()}`, requestHash: 'create' });
    await settle(Array.from({ length: 5 }, () => tasks.create(accountId, { spec: emptySpec(PROMPT), kind: 'plan' }, createKey)));
    const listed = (await h.quarry.store.tasks.listPage(accountId, 10)).tasks;
    assert.equal(listed.length, 1);
    const taskId = listed[0]!.id;

    const messageKey = idempotencyGuard(records, accountId, { key: `message-${uid()}`, requestHash: 'message' });
    await settle(Array.from({ length: 5 }, () => tasks.message(accountId, taskId, 'Add Norway.', { guard: messageKey })));
    await waitIdleAs(h, taskId, (await accounts.createKey(accountId)).apiKey);
    const started = (await h.quarry.store.events.list(taskId, 0, 1000)).filter((e) => e.type === 'task' && JSON.parse(e.data).reason === 'turn_started');
    assert.equal(started.length, 2, 'the create\'s turn and one message');
  });
});
