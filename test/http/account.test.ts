/**
 * GET /account (decisions §20): any API key reads its own account, its balance and the credits
 * it has used, which a turn's charge moves; no key is 401.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, startTestHarness, uid, waitIdleAs } from '../kit/task-api.js';

describe('GET /account', () => {
  it('answers the key\'s own account; a turn\'s credits move balance and credits_used', async (t) => {
    const h = await startTestHarness(t);
    const name = `reader ${uid()}`;
    const account = await createAccount(h, name, 25);
    const before = await h.request('GET', '/account', { key: account.api_key });
    assert.equal(before.status, 200, before.text);
    assert.deepEqual(before.body, { account_id: account.account_id, name, balance: 25, credits_used: 0 });

    const task = await h.request('POST', '/task', { key: account.api_key, body: { prompt: 'Find battery makers.' } });
    assert.equal(task.status, 200, task.text);
    await waitIdleAs(h, task.body.task_id, account.api_key);
    const after = await h.request('GET', '/account', { key: account.api_key });
    assert.equal(after.status, 200, after.text);
    assert.ok(after.body.credits_used > 0, 'the turn was charged');
    assert.equal(Math.round((after.body.balance + after.body.credits_used) * 1e6), 25e6);

    const other = await h.request('GET', '/account');
    assert.equal(other.status, 200, other.text);
    assert.notEqual(other.body.account_id, account.account_id);
    assert.equal((await h.request('GET', '/account', { key: null })).status, 401);
  });
});
