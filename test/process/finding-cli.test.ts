/**
 * The CLI finds work (decisions §20) against a real `quarry serve`: `task ls` with filters,
 * `account`, `group runs` and `group retry --include stopped`; a bad filter value is the
 * server's 422 naming it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeOpenAI, type FakeOpenAI } from '../kit/fake-openai-server.js';
import { until } from '../kit/bounded-waits.js';
import { dropSchemas, testStoreEnv } from '../kit/postgres.js';
import { starterCli, startServer, tempDataDir, type ServerProcess } from '../kit/process.js';
import { userText } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const store = testStoreEnv('t_fcli');
let model: FakeOpenAI;
let server: ServerProcess;

before(async () => {
  model = await startFakeOpenAI();
  model.setResponder((body) => (userText(body).includes('FAIL') ? { status: 400, errorMessage: 'refused' } : userText(body).includes('HOLD') ? { hang: true } : { text: 'Done.' }));
  server = await startServer({
    dataDir: tempDataDir('quarry-finding-cli-data-'),
    waitForStarterKey: true,
    env: { QUARRY_MODEL_BASE_URL: model.url, QUARRY_MODEL: 'fake-model', ...store.env },
  });
});
after(async () => {
  await server?.kill9();
  await model?.close();
  if (store.schema) await dropSchemas(store.schema);
});

describe('quarry finds work', () => {
  const { quarry, api, idle } = starterCli(() => server);

  it('task ls --q --state --outcome --created-after, and account', async () => {
    const ok = (await api('POST', '/task', { prompt: 'Find solar farms.' })).body;
    const bad = (await api('POST', '/task', { prompt: 'Find wind parks. FAIL' })).body;
    await idle(ok.task_id);
    await idle(bad.task_id);
    const run = await quarry(['task', 'ls', '--q', 'WIND', '--state', 'idle', '--outcome', 'failed', '--created-after', new Date(Date.parse(bad.created_at) - 1).toISOString(), '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout).map((t: Json) => t.task_id), [bad.task_id]);
    const table = await quarry(['task', 'ls', '--outcome', 'completed']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(ok.task_id));
    assert.doesNotMatch(table.stdout, new RegExp(bad.task_id));

    const wrong = await quarry(['task', 'ls', '--outcome', 'broken']);
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /outcome/);

    const account = await quarry(['account', '--json']);
    assert.equal(account.code, 0, account.stderr);
    const body = JSON.parse(account.stdout);
    assert.deepEqual(Object.keys(body).sort(), ['account_id', 'balance', 'credits_used', 'name']);
    assert.match((await quarry(['account'])).stdout, /balance/);
  });

  it('group runs lists every run; group retry --include stopped runs the stopped one again', async () => {
    const spec = { name: 'Facts', prompt: 'Find each company\'s city.', input_columns: [{ name: 'company', type: 'string', required: true }], outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'hq', type: 'string' }] }] };
    const group = (await api('POST', '/group', { task: spec, inputs: [{ company: 'A' }, { company: 'HOLD B' }] })).body;
    await until('A done, B held', async () => (await api('GET', `/group/${group.group_id}`)).body.counts.completed === 1, { timeoutMs: 15_000 });
    await api('POST', `/group/${group.group_id}/stop`);
    const runs = await quarry(['group', 'runs', group.group_id, '--json']);
    assert.equal(runs.code, 0, runs.stderr);
    assert.deepEqual(JSON.parse(runs.stdout).map((r: Json) => [r.input_index, r.status]), [[0, 'completed'], [1, 'stopped']]);
    const table = await quarry(['group', 'runs', group.group_id, '--status', 'stopped']);
    assert.match(table.stdout, /stopped/);
    assert.doesNotMatch(table.stdout, /completed/);

    model.setResponder(() => ({ text: 'Done.' }));
    const retry = await quarry(['group', 'retry', group.group_id, '--include', 'stopped']);
    assert.equal(retry.code, 0, retry.stderr);
    await until('the stopped run completed', async () => (await api('GET', `/group/${group.group_id}`)).body.counts.completed === 2, { timeoutMs: 15_000 });
  });
});
