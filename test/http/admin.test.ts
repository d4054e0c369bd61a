/**
 * Accounts, keys and credits (decisions §7): every admin route, how the admin key guards them,
 * and that one account never sees another account's tasks. All over real HTTP.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_KEY, startHarness, type Harness, type TestResponse } from '../kit/harness.js';
import { createAccount, taskEvents, taskIds, uid, userText, waitIdleAs } from '../kit/task-api.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';

/**
 * `[hang]` in the task's prompt: the model never answers. `[tool]`: one update_spec call, then
 * "Done."; both replies report 1000 input and 500 output tokens. Anything else: "Done.".
 */
function responder(body: FakeRequestBody): FakeReply {
  const text = userText(body);
  if (text.includes('[hang]')) return { hang: true };
  if (text.includes('[tool]')) {
    const usage = { prompt_tokens: 1000, completion_tokens: 500 };
    const answeredTool = (body.messages ?? []).some((m) => m.role === 'tool');
    // The second call read 800 of its 1,000 input tokens from the provider's prompt cache.
    return answeredTool
      ? { text: 'Done.', usage: { ...usage, prompt_tokens_details: { cached_tokens: 800 } } }
      : { toolCalls: [{ name: 'update_spec', arguments: { name: 'renamed by the agent' } }], usage };
  }
  return { text: 'Done.' };
}

function expectError(res: TestResponse, status: number, code: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.equal(res.body?.error, code, res.text);
  assert.equal(typeof res.body.message, 'string');
  assert.equal(typeof res.body.retryable, 'boolean');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
  if (status === 401) assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="quarry"');
}

function isIsoDate(value: unknown): boolean {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value)) && /^\d{4}-\d\d-\d\dT/.test(value);
}

/** Every admin route, with placeholder ids (the guard answers before any id is looked up). */
function adminRoutes(accountId: string, keyId: string): [string, string, unknown?][] {
  return [
    ['POST', '/admin/accounts', { name: 'x', credits: 1 }],
    ['GET', `/admin/accounts/${accountId}`],
    ['POST', `/admin/accounts/${accountId}/credits`, { amount: 5 }],
    ['POST', `/admin/accounts/${accountId}/keys`, {}],
    ['GET', `/admin/accounts/${accountId}/keys`],
    ['DELETE', `/admin/accounts/${accountId}/keys/${keyId}`],
    ['GET', `/admin/accounts/${accountId}/usage`],
  ];
}

describe('admin routes', () => {
  let h: Harness;
  before(async () => {
    // Round prices so a turn's charge can be checked exactly.
    h = await startHarness({ env: { QUARRY_PRICE_INPUT: '1000', QUARRY_PRICE_CACHED_INPUT: '1000', QUARRY_PRICE_OUTPUT: '2000', QUARRY_PRICE_TOOL_CALL: '0.5' } });
    h.model!.setResponder(responder);
  });
  after(() => h.close());

  it('POST /admin/accounts creates an account whose key works at once', async () => {
    const name = `acme-${uid()}`;
    const res = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body: { name, credits: 25 } });
    assert.equal(res.status, 201, res.text);
    assert.equal(typeof res.body.account_id, 'string');
    assert.equal(res.body.name, name);
    assert.equal(res.body.balance, 25);
    assert.equal(typeof res.body.api_key, 'string');
    assert.ok(res.body.api_key.length >= 20, 'the key is too short to be a secret');
    assert.equal(typeof res.body.key_id, 'string');
    assert.notEqual(res.body.key_id, res.body.api_key);

    const list = await h.request('GET', '/task', { key: res.body.api_key });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body, [], 'a new account sees tasks');
    const create = await h.request('POST', '/task', { key: res.body.api_key, body: { prompt: 'first task of acme' } });
    assert.equal(create.status, 200, create.text);
    await waitIdleAs(h, create.body.task_id, res.body.api_key);
    const bearer = await h.request('GET', '/task', { key: null, headers: { authorization: `Bearer ${res.body.api_key}` } });
    assert.deepEqual(bearer.body.map((t: { task_id: string }) => t.task_id), [create.body.task_id]);
  });

  it('two accounts get different ids and keys', async () => {
    const a = await createAccount(h, 'twin', 1);
    const b = await createAccount(h, 'twin', 1);
    assert.notEqual(a.account_id, b.account_id);
    assert.notEqual(a.api_key, b.api_key);
    assert.notEqual(a.key_id, b.key_id);
  });

  it('the admin key works as Authorization: Bearer too', async () => {
    const res = await h.request('POST', '/admin/accounts', { key: null, headers: { authorization: `Bearer ${ADMIN_KEY}` }, body: { name: 'bearer', credits: 1 } });
    assert.equal(res.status, 201, res.text);
  });

  it('POST /admin/accounts validates its body', async () => {
    for (const [body, param] of [[{ credits: 1 }, 'name'], [{ name: 'x' }, 'credits'], [{ name: 'x', credits: -1 }, 'credits'], [{ name: 'x', credits: 'lots' }, 'credits'], [{ name: '', credits: 1 }, 'name']] as const) {
      const res = await h.request('POST', '/admin/accounts', { key: ADMIN_KEY, body });
      expectError(res, 422, 'invalid_request');
      assert.equal(res.body.param, param, res.text);
    }
  });

  it('GET /admin/accounts/{account_id} shows the account without its key', async () => {
    const created = await createAccount(h, `shown-${uid()}`, 7);
    const res = await h.request('GET', `/admin/accounts/${created.account_id}`, { key: ADMIN_KEY });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.account_id, created.account_id);
    assert.equal(res.body.name, created.name);
    assert.equal(res.body.balance, 7);
    assert.equal(res.body.credits_used, 0);
    assert.ok(isIsoDate(res.body.created_at), `created_at: ${res.body.created_at}`);
    assert.ok(!res.text.includes(created.api_key), 'the key is shown again');

    const missing = await h.request('GET', `/admin/accounts/acct_missing_${uid()}`, { key: ADMIN_KEY });
    assert.equal(missing.status, 404, missing.text);
  });

  it('POST /admin/accounts/{account_id}/credits adds, debits, and never goes below 0', async () => {
    const acct = await createAccount(h, `credits-${uid()}`, 3);
    const credit = (amount: unknown) => h.request('POST', `/admin/accounts/${acct.account_id}/credits`, { key: ADMIN_KEY, body: { amount } });

    let res = await credit(10);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { account_id: acct.account_id, balance: 13 });
    res = await credit(-4.5);
    assert.equal(res.body.balance, 8.5);
    res = await credit(-1000);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.balance, 0, 'the balance went below 0');
    const shown = await h.request('GET', `/admin/accounts/${acct.account_id}`, { key: ADMIN_KEY });
    assert.equal(shown.body.balance, 0);

    // At 0 no turn starts; after a top-up it does.
    const refused = await h.request('POST', '/task', { key: acct.api_key, body: { prompt: 'broke' } });
    expectError(refused, 402, 'out_of_credits');
    res = await credit(2);
    assert.equal(res.body.balance, 2, 'a debit below 0 was remembered as debt');
    const accepted = await h.request('POST', '/task', { key: acct.api_key, body: { prompt: 'funded' } });
    assert.equal(accepted.status, 200, accepted.text);
    await waitIdleAs(h, accepted.body.task_id, acct.api_key);

    const bad = await credit('ten');
    expectError(bad, 422, 'invalid_request');
    assert.equal(bad.body.param, 'amount');
    const missing = await h.request('POST', `/admin/accounts/acct_missing_${uid()}/credits`, { key: ADMIN_KEY, body: { amount: 1 } });
    assert.equal(missing.status, 404, missing.text);
  });

  it('keys: create, list, revoke; a revoked key is 401 at once', async () => {
    const acct = await createAccount(h, `keys-${uid()}`, 5);
    const made = await h.request('POST', `/admin/accounts/${acct.account_id}/keys`, { key: ADMIN_KEY, body: {} });
    assert.equal(made.status, 201, made.text);
    assert.equal(typeof made.body.key_id, 'string');
    assert.equal(typeof made.body.api_key, 'string');
    assert.notEqual(made.body.api_key, acct.api_key);
    assert.notEqual(made.body.key_id, acct.key_id);

    // Both keys act as the same account.
    const task = await h.request('POST', '/task', { key: made.body.api_key, body: { prompt: 'made with the second key' } });
    assert.equal(task.status, 200, task.text);
    await waitIdleAs(h, task.body.task_id, made.body.api_key);
    assert.deepEqual(await taskIds(h, acct.api_key), [task.body.task_id]);

    const listed = await h.request('GET', `/admin/accounts/${acct.account_id}/keys`, { key: ADMIN_KEY });
    assert.equal(listed.status, 200, listed.text);
    const ids = listed.body.keys.map((k: { key_id: string }) => k.key_id).sort();
    assert.deepEqual(ids, [acct.key_id, made.body.key_id].sort());
    for (const k of listed.body.keys) {
      assert.ok(isIsoDate(k.created_at), `created_at: ${k.created_at}`);
      assert.equal(k.revoked_at, null);
    }
    assert.ok(!listed.text.includes(acct.api_key) && !listed.text.includes(made.body.api_key), 'a key secret is listed');

    // The first key was just used (and may be cached): revoking it must still take effect at once.
    assert.equal((await h.request('GET', '/task', { key: acct.api_key })).status, 200);
    const revoked = await h.request('DELETE', `/admin/accounts/${acct.account_id}/keys/${acct.key_id}`, { key: ADMIN_KEY });
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal(revoked.body.key_id, acct.key_id);
    assert.ok(isIsoDate(revoked.body.revoked_at), `revoked_at: ${revoked.body.revoked_at}`);
    expectError(await h.request('GET', '/task', { key: acct.api_key }), 401, 'unauthorized');
    expectError(await h.request('GET', '/task', { key: null, headers: { authorization: `Bearer ${acct.api_key}` } }), 401, 'unauthorized');
    expectError(await h.request('GET', `/task/${task.body.task_id}`, { key: acct.api_key }), 401, 'unauthorized');

    // The other key is untouched.
    const stillOk = await h.request('GET', `/task/${task.body.task_id}`, { key: made.body.api_key });
    assert.equal(stillOk.status, 200, stillOk.text);

    const after = await h.request('GET', `/admin/accounts/${acct.account_id}/keys`, { key: ADMIN_KEY });
    const byId = new Map(after.body.keys.map((k: { key_id: string; revoked_at: string | null }) => [k.key_id, k.revoked_at]));
    assert.equal(byId.get(acct.key_id), revoked.body.revoked_at);
    assert.equal(byId.get(made.body.key_id), null);

    const unknownKey = await h.request('DELETE', `/admin/accounts/${acct.account_id}/keys/key_missing_${uid()}`, { key: ADMIN_KEY });
    assert.equal(unknownKey.status, 404, unknownKey.text);
    // A key of another account cannot be revoked through this one.
    const other = await createAccount(h, `keys-other-${uid()}`, 1);
    const crossed = await h.request('DELETE', `/admin/accounts/${acct.account_id}/keys/${other.key_id}`, { key: ADMIN_KEY });
    assert.equal(crossed.status, 404, crossed.text);
    assert.equal((await h.request('GET', '/task', { key: other.api_key })).status, 200, 'another account\'s key was revoked');
  });

  it('usage lists each turn with its credits, tokens and tool calls', async () => {
    const acct = await createAccount(h, `usage-${uid()}`, 10);
    const create = await h.request('POST', '/task', { key: acct.api_key, body: { prompt: '[tool] rename yourself' } });
    assert.equal(create.status, 200, create.text);
    const taskId = create.body.task_id;
    await waitIdleAs(h, taskId, acct.api_key);

    const usage = await h.request('GET', `/admin/accounts/${acct.account_id}/usage`, { key: ADMIN_KEY });
    assert.equal(usage.status, 200, usage.text);
    assert.equal(usage.body.turns.length, 1, usage.text);
    const turn = usage.body.turns[0];
    assert.equal(turn.task_id, taskId);
    assert.equal(typeof turn.turn_id, 'string');
    // Two model calls of 1000 + 500 tokens and one tool call at 1 / 2 / 0.5 credits (cached input priced as input here).
    assert.equal(turn.tokens_in, 2000);
    assert.equal(turn.tokens_in_cached, 800);
    assert.equal(turn.tokens_out, 1000);
    assert.equal(turn.tool_calls, 1);
    assert.equal(turn.compactions, 0);
    assert.equal(turn.credits, 4.5);
    const done = (await taskEvents(h, taskId, acct.api_key)).filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => [e.tokens_in, e.tokens_in_cached, e.tokens_out, e.compactions, e.credits_used]), [[2000, 800, 1000, 0, 4.5]], 'the done event carries the turn\'s usage');
    assert.deepEqual([turn.rows_written, turn.verified_rows, turn.unverified_rows], [0, 0, 0], 'the turn wrote no rows');

    const account = await h.request('GET', `/admin/accounts/${acct.account_id}`, { key: ADMIN_KEY });
    assert.equal(account.body.credits_used, 4.5);
    assert.equal(account.body.balance, 5.5);
    const detail = await h.request('GET', `/task/${taskId}`, { key: acct.api_key });
    assert.equal(detail.body.credits_used, 4.5);

    // A second turn is a second entry; another account's turns never appear.
    const more = await h.request('POST', `/task/${taskId}/continue`, { key: acct.api_key, body: { message: 'once more' } });
    assert.equal(more.status, 200, more.text);
    await waitIdleAs(h, taskId, acct.api_key);
    const again = await h.request('GET', `/admin/accounts/${acct.account_id}/usage`, { key: ADMIN_KEY });
    assert.equal(again.body.turns.length, 2, again.text);
    const turnIds = new Set(again.body.turns.map((t: { turn_id: string }) => t.turn_id));
    assert.equal(turnIds.size, 2);
    for (const t of again.body.turns) assert.equal(t.task_id, taskId);

    const stranger = await createAccount(h, `usage-none-${uid()}`, 1);
    const none = await h.request('GET', `/admin/accounts/${stranger.account_id}/usage`, { key: ADMIN_KEY });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.body.turns, []);
    const missing = await h.request('GET', `/admin/accounts/acct_missing_${uid()}/usage`, { key: ADMIN_KEY });
    assert.equal(missing.status, 404, missing.text);
  });

  it('every admin route refuses an API key, a wrong key and no key with 401', async () => {
    const acct = await createAccount(h, `guarded-${uid()}`, 1);
    for (const [method, path, body] of adminRoutes(acct.account_id, acct.key_id)) {
      const opts = body === undefined ? {} : { body };
      expectError(await h.request(method, path, { ...opts, key: h.key }), 401, 'unauthorized');
      expectError(await h.request(method, path, { ...opts, key: acct.api_key }), 401, 'unauthorized');
      expectError(await h.request(method, path, { ...opts, key: null, headers: { authorization: `Bearer ${acct.api_key}` } }), 401, 'unauthorized');
      expectError(await h.request(method, path, { ...opts, key: `${ADMIN_KEY}-wrong` }), 401, 'unauthorized');
      expectError(await h.request(method, path, { ...opts, key: null }), 401, 'unauthorized');
    }
    // None of those refused requests did anything.
    const shown = await h.request('GET', `/admin/accounts/${acct.account_id}`, { key: ADMIN_KEY });
    assert.equal(shown.body.balance, 1);
    const keys = await h.request('GET', `/admin/accounts/${acct.account_id}/keys`, { key: ADMIN_KEY });
    assert.deepEqual(keys.body.keys.map((k: { key_id: string; revoked_at: null }) => [k.key_id, k.revoked_at]), [[acct.key_id, null]]);
  });

  describe('one account never sees another\'s task', () => {
    it('GET, output, continue, execute, stop, patch, delete and stream are 404 task_not_found; lists leave it out', async () => {
      const owner = await createAccount(h, `owner-${uid()}`, 10);
      const intruder = await createAccount(h, `intruder-${uid()}`, 10);
      const create = await h.request('POST', '/task/start', {
        key: owner.api_key,
        body: { task: { prompt: '[hang] private research', outputs: [{ id: 'notes', kind: 'report' }] } },
      });
      assert.equal(create.status, 200, create.text);
      const id = create.body.task_id;
      try {
        const attempts: [string, string, unknown?][] = [
          ['GET', `/task/${id}`], ['GET', `/task/${id}?wait=1`], ['GET', `/task/${id}/state`], ['GET', `/task/${id}/output`],
          ['GET', `/task/${id}/output?output=notes`], ['GET', `/task/${id}/outputs`], ['GET', `/task/${id}/outputs/notes`],
          ['GET', `/task/${id}/events`], ['GET', `/task/${id}/stream`],
          ['POST', `/task/${id}/continue`, { message: 'let me in' }], ['POST', `/task/${id}/execute`, {}],
          ['POST', `/task/${id}/stop`, {}], ['POST', `/task/${id}/stop`, { clear_queue: true }],
          ['PATCH', `/task/${id}`, { name: 'hijacked', pinned: true }], ['DELETE', `/task/${id}`],
        ];
        for (const [method, path, body] of attempts) {
          const res = await h.request(method, path, { key: intruder.api_key, ...(body === undefined ? {} : { body }) });
          expectError(res, 404, 'task_not_found');
          assert.ok(!res.text.includes('private research'), `${method} ${path} leaks the task`);
        }
        const viaPrompt = await h.request('POST', '/task', { key: intruder.api_key, body: { prompt: 'let me in', task_id: id } });
        expectError(viaPrompt, 404, 'task_not_found');
        assert.equal(viaPrompt.body.task_created, false);
        assert.ok(!(await taskIds(h, intruder.api_key)).includes(id), 'the task is in another account\'s list');

        // Nothing the intruder sent reached the task: still running, nothing queued, not renamed or deleted.
        const state = await h.request('GET', `/task/${id}/state`, { key: owner.api_key });
        assert.equal(state.status, 200, state.text);
        assert.equal(state.body.active, true, 'another account stopped the task');
        assert.equal(state.body.queued_messages, 0, 'another account queued a message');
        const detail = await h.request('GET', `/task/${id}`, { key: owner.api_key });
        assert.equal(detail.body.name, null);
        assert.equal(detail.body.pinned, false);
        assert.notEqual(detail.body.status, 'deleted');
        assert.ok(!detail.text.includes('let me in'), 'another account\'s message reached the task');
        assert.ok((await taskIds(h, owner.api_key)).includes(id));
      } finally {
        const stop = await h.request('POST', `/task/${id}/stop`, { key: owner.api_key, body: {} });
        assert.equal(stop.status, 200, stop.text);
      }
      await waitIdleAs(h, id, owner.api_key);
    });

    it('each account lists only its own tasks', async () => {
      const a = await createAccount(h, `lists-a-${uid()}`, 10);
      const b = await createAccount(h, `lists-b-${uid()}`, 10);
      const ta = await h.request('POST', '/task', { key: a.api_key, body: { prompt: 'of a' } });
      const tb = await h.request('POST', '/task', { key: b.api_key, body: { prompt: 'of b' } });
      assert.equal(ta.status, 200, ta.text);
      assert.equal(tb.status, 200, tb.text);
      await waitIdleAs(h, ta.body.task_id, a.api_key);
      await waitIdleAs(h, tb.body.task_id, b.api_key);
      assert.deepEqual(await taskIds(h, a.api_key), [ta.body.task_id]);
      assert.deepEqual(await taskIds(h, b.api_key), [tb.body.task_id]);
      assert.ok(!(await taskIds(h, h.key)).some((t) => t === ta.body.task_id || t === tb.body.task_id));
    });
  });
});

describe('admin routes without QUARRY_ADMIN_KEY', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ model: false, env: { QUARRY_ADMIN_KEY: '' } });
  });
  after(() => h.close());

  it('every admin route answers 404 not_found, whatever key is sent', async () => {
    for (const [method, path, body] of adminRoutes(`acct_${uid()}`, `key_${uid()}`)) {
      const opts = body === undefined ? {} : { body };
      expectError(await h.request(method, path, { ...opts, key: ADMIN_KEY }), 404, 'not_found');
      expectError(await h.request(method, path, { ...opts, key: h.key }), 404, 'not_found');
      expectError(await h.request(method, path, { ...opts, key: null }), 404, 'not_found');
      expectError(await h.request(method, path, { ...opts, key: null, headers: { authorization: 'Bearer ' } }), 404, 'not_found');
    }
  });

  it('the task routes still work with the starter key', async () => {
    const res = await h.request('GET', '/task');
    assert.equal(res.status, 200, res.text);
  });
});
