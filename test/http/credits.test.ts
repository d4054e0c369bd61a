/**
 * Credits over HTTP (interface §3, §5, §7; decisions §4, §7, §14): 402 out_of_credits before a
 * turn, credits running out mid-turn, charges that add up to the price table on the task and in
 * the admin usage route, the per-turn limits max_credits_per_turn and max_steps, and credits
 * that are exact decimals (integers of micro-credits), so a balance that reads 0 is 0.
 *
 * Prices are round numbers, so a test can say what a turn costs:
 * 1 credit per 1,000 input tokens, 2 per 1,000 output tokens, 0.5 per tool call.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { fromMicros, MICROS_PER_CREDIT, pricesInMicros, stepCostMicros, toMicros } from '../../src/domain/credits.js';
import { loadConfig } from '../../src/config.js';
import { ADMIN_KEY, waitIdle, type Harness, type HarnessOptions } from '../kit/harness.js';
import { createAccount as createNamedAccount, fakeModel, startTestHarness, taskEvents, waitIdleAs } from '../kit/task-api.js';
import type { FakeReply } from '../kit/fake-openai-server.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const PLATFORM_URL = 'https://billing.example.test';
const PRICES = {
  QUARRY_PRICE_INPUT: '1000', QUARRY_PRICE_CACHED_INPUT: '1000',
  QUARRY_PRICE_OUTPUT: '2000',
  QUARRY_PRICE_TOOL_CALL: '0.5',
  QUARRY_PLATFORM_URL: PLATFORM_URL,
};

async function setup(t: TestContext, opts: HarnessOptions = {}): Promise<Harness> {
  return startTestHarness(t, { ...opts, env: { ...PRICES, ...opts.env } });
}

interface Account {
  id: string;
  key: string;
}

async function createAccount(h: Harness, credits: number): Promise<Account> {
  const created = await createNamedAccount(h, `acct-${credits}`, credits);
  assert.equal(created.balance, credits);
  return { id: created.account_id, key: created.api_key };
}

async function adminAccount(h: Harness, account: Account): Promise<Json> {
  const res = await h.request('GET', `/admin/accounts/${account.id}`, { key: ADMIN_KEY });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function adminUsage(h: Harness, account: Account): Promise<Json[]> {
  const res = await h.request('GET', `/admin/accounts/${account.id}/usage`, { key: ADMIN_KEY });
  assert.equal(res.status, 200, res.text);
  return res.body.turns;
}

async function addCredits(h: Harness, account: Account, amount: number): Promise<number> {
  const res = await h.request('POST', `/admin/accounts/${account.id}/credits`, { body: { amount }, key: ADMIN_KEY });
  assert.equal(res.status, 200, res.text);
  return res.body.balance;
}

/** The caller's HTTP client bound to an account's key. */
function as(h: Harness, account: Account) {
  return (method: string, path: string, body?: unknown) => h.request(method, path, { key: account.key, ...(body === undefined ? {} : { body }) });
}

function assertError(res: { status: number; body: Json; text: string }, status: number, error: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, error, res.text);
  assert.equal(typeof res.body.message, 'string');
  assert.equal(typeof res.body.request_id, 'string');
}

function assertOutOfCredits(res: { status: number; body: Json; text: string }): void {
  assertError(res, 402, 'out_of_credits');
  assert.equal(res.body.retryable, false);
  assert.equal(res.body.resolve, `${PLATFORM_URL}/credits`);
}

/**
 * The end of a failed turn: an `error` event (with `code` when given; the code of a limit is not
 * part of the contract), then `done` failed.
 */
function assertFailedWith(evs: Json[], code: string | null, messagePattern?: RegExp): { error: Json; done: Json } {
  const errorAt = evs.findIndex((e) => e.type === 'error');
  assert.ok(errorAt >= 0, `an error event: ${JSON.stringify(evs.map((e) => e.type))}`);
  const error = evs[errorAt];
  if (code) assert.equal(error.error, code, JSON.stringify(error));
  else assert.ok(typeof error.error === 'string' && error.error.length > 0, JSON.stringify(error));
  assert.equal(typeof error.message, 'string');
  assert.equal(typeof error.retryable, 'boolean');
  if (messagePattern) assert.match(error.message, messagePattern);
  const done = evs[evs.length - 1];
  assert.equal(done.type, 'done');
  assert.equal(done.outcome, 'failed');
  assert.equal(done.turn_id, error.turn_id);
  assert.ok(errorAt < evs.length - 1, 'done comes after the error');
  return { error, done };
}

const PROMPT = 'Find every company making Li-ion cells in the EU.';
const SPEC = {
  name: 'EU battery makers',
  prompt: PROMPT,
  outputs: [{ id: 'makers', kind: 'table', columns: [{ name: 'company', type: 'string', required: true }] }],
};

/** A model step that calls one harmless tool. */
function toolStep(name: string, usage: { prompt_tokens: number; completion_tokens: number }): FakeReply {
  return { toolCalls: [{ name: 'update_spec', arguments: { name } }], usage };
}

describe('credits', () => {
  it('402 out_of_credits before a turn: continue, execute and messages are refused, the task stays plan and does not start when credits arrive', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 10);
    const call = as(h, account);
    const created = await call('POST', '/task/start', { task: SPEC });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id;
    await waitIdleAs(h, id, account.key);
    const lastEvent = (await call('GET', `/task/${id}/state`)).body.last_event_id;

    assert.equal(await addCredits(h, account, -1000), 0, 'the balance floors at 0');
    assert.equal((await adminAccount(h, account)).balance, 0);

    const refusals: [string, string, Json][] = [
      ['POST', `/task/${id}/continue`, { message: 'Add Norway.' }],
      ['POST', `/task/${id}/continue`, { message: 'Add Norway.', wait: true }],
      ['POST', `/task/${id}/execute`, { instruction: 'Refresh.' }],
      ['POST', `/task/${id}/execute`, {}],
      ['POST', '/task', { prompt: 'Add Sweden.', task_id: id }],
    ];
    for (const [method, path, body] of refusals) {
      const res = await call(method, path, body);
      assertOutOfCredits(res);
      assert.equal(res.body.task_id, id, `${path}: task_id`);
    }
    const s = (await call('GET', `/task/${id}/state`)).body;
    assert.equal(s.status, 'plan');
    assert.equal(s.activity, 'idle');
    assert.equal(s.active, false);
    assert.equal(s.queued_messages, 0);
    assert.equal(s.last_event_id, lastEvent, 'a refused turn records nothing');

    // A create without credits stores nothing.
    const refusedCreate = await call('POST', '/task', { prompt: PROMPT });
    assertOutOfCredits(refusedCreate);
    assert.equal(refusedCreate.body.task_created, false);
    const refusedSpec = await call('POST', '/task/start', { task: SPEC, task_id: 'never-created' });
    assertOutOfCredits(refusedSpec);
    assert.equal(refusedSpec.body.task_created, false);
    assertError(await call('GET', '/task/never-created'), 404, 'task_not_found');
    assert.deepEqual((await call('GET', '/task')).body.map((x: Json) => x.task_id), [id]);
    assert.equal(fakeModel(h).requests.length, 1, 'only the first turn reached the model');

    // Credits arrive: the refused task does not resume by itself. A new task runs to its end,
    // by which time the runner has looked for work at least once.
    assert.equal(await addCredits(h, account, 5), 5);
    const later = await call('POST', '/task/start', { task: SPEC });
    assert.equal(later.status, 200, later.text);
    await waitIdleAs(h, later.body.task_id, account.key);
    const after = (await call('GET', `/task/${id}/state`)).body;
    assert.equal(after.active, false);
    assert.equal(after.status, 'plan');
    assert.equal(after.last_event_id, lastEvent);
    assert.equal(fakeModel(h).requests.length, 2, 'only the new task reached the model');

    // And now that there are credits, a message runs.
    const ok = await call('POST', `/task/${id}/continue`, { message: 'Add Norway.' });
    assert.equal(ok.status, 200, ok.text);
    await waitIdleAs(h, id, account.key);
  });

  it('credits_used on the task, the done event and the admin account and usage routes add up to the price table', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 100);
    const call = as(h, account);
    fakeModel(h).script(
      toolStep('Priced', { prompt_tokens: 1000, completion_tokens: 250 }), // 1 + 0.5
      { text: 'Done.', usage: { prompt_tokens: 2000, completion_tokens: 500 } }, // 2 + 1
    );
    // Turn 1: 1.5 + 0.5 (one tool call) + 3 = 5 credits.
    const created = await call('POST', '/task/start', { task: SPEC });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.credits_used, 0);
    const id = created.body.task_id;
    await waitIdleAs(h, id, account.key);

    let task = (await call('GET', `/task/${id}`)).body;
    assert.equal(task.credits_used, 5);
    let done = (await taskEvents(h, id, account.key)).filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => [e.outcome, e.credits_used]), [['completed', 5]]);
    let acct = await adminAccount(h, account);
    assert.equal(acct.balance, 95);
    assert.equal(acct.credits_used, 5);
    let usage = await adminUsage(h, account);
    assert.equal(usage.length, 1);
    assert.equal(usage[0].task_id, id);
    assert.equal(usage[0].turn_id, done[0].turn_id);
    assert.equal(usage[0].credits, 5);
    assert.equal(usage[0].tokens_in, 3000);
    assert.equal(usage[0].tokens_out, 750);
    assert.equal(usage[0].tool_calls, 1);

    // Turn 2: 0.5 + 1 = 1.5 credits; the task's total is the sum of its turns.
    fakeModel(h).script({ text: 'Refreshed.', usage: { prompt_tokens: 500, completion_tokens: 500 } });
    assert.equal((await call('POST', `/task/${id}/execute`, {})).status, 200);
    await waitIdleAs(h, id, account.key);
    task = (await call('GET', `/task/${id}`)).body;
    assert.equal(task.credits_used, 6.5);
    done = (await taskEvents(h, id, account.key)).filter((e) => e.type === 'done');
    assert.deepEqual(done.map((e) => e.credits_used), [5, 1.5]);
    acct = await adminAccount(h, account);
    assert.equal(acct.balance, 93.5);
    assert.equal(acct.credits_used, 6.5);
    usage = await adminUsage(h, account);
    assert.equal(usage.length, 2);
    const second = usage.find((u) => u.turn_id === done[1].turn_id);
    assert.ok(second, 'the second turn is in the usage');
    assert.deepEqual([second.credits, second.tokens_in, second.tokens_out, second.tool_calls], [1.5, 500, 500, 0]);
    assert.equal(usage.reduce((n, u) => n + u.credits, 0), 6.5);

    // Another account (the starter key) sees none of this account's tasks.
    const list = await h.request('GET', '/task');
    assert.deepEqual(list.body, [], 'the other account sees none of these tasks');
  });

  it('credits running out mid-turn end the turn with an error event out_of_credits, then done failed', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 5);
    const call = as(h, account);
    fakeModel(h).script(
      toolStep('first', { prompt_tokens: 1000, completion_tokens: 500 }), // 2, then 0.5 for the call: 2.5 left
      toolStep('second', { prompt_tokens: 1000, completion_tokens: 500 }), // 2, then 0.5 for the call: 0 left
      toolStep('third', { prompt_tokens: 1000, completion_tokens: 500 }),
      { text: 'Done.', usage: { prompt_tokens: 1000, completion_tokens: 500 } },
    );
    const created = await call('POST', '/task/start', { task: SPEC });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id;
    await waitIdleAs(h, id, account.key);

    assert.equal(fakeModel(h).requests.length, 2, 'no model call after the balance reached zero');
    const evs = await taskEvents(h, id, account.key);
    const { error, done } = assertFailedWith(evs, 'out_of_credits');
    assert.equal(error.retryable, false);
    assert.equal(done.credits_used, 5);
    const task = (await call('GET', `/task/${id}`)).body;
    assert.equal(task.status, 'plan');
    assert.equal(task.activity, 'idle');
    assert.equal(task.credits_used, 5);
    const acct = await adminAccount(h, account);
    assert.equal(acct.balance, 0);
    assert.equal(acct.credits_used, 5);

    assertOutOfCredits(await call('POST', `/task/${id}/continue`, { message: 'Go on.' }));
  });

  it('a tiny balance (0.001) runs out at the first model step', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 0.001);
    const call = as(h, account);
    fakeModel(h).script(
      toolStep('first', { prompt_tokens: 50_000, completion_tokens: 10_000 }),
      toolStep('second', { prompt_tokens: 50_000, completion_tokens: 10_000 }),
      { text: 'Done.', usage: { prompt_tokens: 50_000, completion_tokens: 10_000 } },
    );
    const created = await call('POST', '/task', { prompt: PROMPT });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id;
    await waitIdleAs(h, id, account.key);
    assert.equal(fakeModel(h).requests.length, 1);
    assertFailedWith(await taskEvents(h, id, account.key), 'out_of_credits');
    assert.equal((await adminAccount(h, account)).balance, 0);
    const task = (await call('GET', `/task/${id}`)).body;
    assert.equal(task.status, 'plan');
    assert.equal(task.activity, 'idle');
  });

  it('a message queued before the credits ran out does not start a turn without credits', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 2);
    const call = as(h, account);
    let release!: (reply: FakeReply) => void;
    const held = new Promise<FakeReply>((r) => (release = r));
    fakeModel(h).setResponder((_body, index) => (index === 0 ? held : { text: 'Done.', usage: { prompt_tokens: 1000, completion_tokens: 500 } }));
    const created = await call('POST', '/task/start', { task: SPEC });
    const id = created.body.task_id;
    await fakeModel(h).waitForRequests(1);
    const queued = await call('POST', `/task/${id}/continue`, { message: 'Queued while credits last.' });
    assert.equal(queued.status, 202, queued.text);

    release(toolStep('costly', { prompt_tokens: 2000, completion_tokens: 1000 })); // 4 credits > 2
    await waitIdleAs(h, id, account.key);
    assert.equal((await adminAccount(h, account)).balance, 0);
    const sent = fakeModel(h).requests.slice(1).filter((r) => (r.body.messages ?? []).some((m) => m.content === 'Queued while credits last.'));
    assert.equal(sent.length, 0, 'the model was called for the queued message although the account had no credits left');
    const s = (await call('GET', `/task/${id}/state`)).body;
    assert.equal(s.status, 'plan');
    assert.equal(s.active, false);
  });
});

describe('exact credits', () => {
  it('amounts with float noise add up exactly: 0.1 then 0.2 credits read 0.3, and taking 0.3 leaves 0', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 0);
    assert.equal(await addCredits(h, account, 0.1), 0.1);
    assert.equal(await addCredits(h, account, 0.2), 0.3);
    assert.equal((await adminAccount(h, account)).balance, 0.3);
    // 0.1 + 0.2 as a client computes it: the float noise past 6 decimals is not credit.
    assert.equal(await addCredits(h, account, 0.1 + 0.2), 0.6);
    assert.equal(await addCredits(h, account, -0.1 - 0.2), 0.3);
    assert.equal(await addCredits(h, account, -0.3), 0);
    assertOutOfCredits(await as(h, account)('POST', '/task', { prompt: PROMPT }));

    const noisy = await createNamedAccount(h, 'noisy', 0.1 + 0.2);
    assert.equal(noisy.balance, 0.3);
    assert.equal((await adminAccount(h, { id: noisy.account_id, key: noisy.api_key })).balance, 0.3);
  });

  it('amounts are rounded to 6 decimals, half away from zero; amounts too large to hold exactly are 422', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 1);
    assert.equal(await addCredits(h, account, 0.0000005), 1.000001);
    assert.equal(await addCredits(h, account, 0.00000049), 1.000001);
    assert.equal(await addCredits(h, account, -0.0000005), 1);
    const tooLarge = await h.request('POST', `/admin/accounts/${account.id}/credits`, { body: { amount: 1e10 }, key: ADMIN_KEY });
    assertError(tooLarge, 422, 'invalid_request');
    assert.equal(tooLarge.body.param, 'amount');
    assert.equal((await adminAccount(h, account)).balance, 1, 'a refused amount changes nothing');
  });

  it('an account whose balance a turn took to exactly 0 starts no turn: 402 on the next create', async (t) => {
    const h = await setup(t);
    // 0.1 + 0.2 credits given separately, and a turn that costs exactly 0.3 (300 input tokens):
    // in binary floating point 0.1 + 0.2 - 0.3 is 5.6e-17, a balance that reads 0 yet is above it.
    const account = await createAccount(h, 0);
    await addCredits(h, account, 0.1);
    await addCredits(h, account, 0.2);
    const call = as(h, account);
    fakeModel(h).script({ text: 'Done.', usage: { prompt_tokens: 300, completion_tokens: 0 } });
    const created = await call('POST', '/task', { prompt: PROMPT });
    assert.equal(created.status, 200, created.text);
    await waitIdleAs(h, created.body.task_id, account.key);
    const acct = await adminAccount(h, account);
    assert.equal(acct.balance, 0);
    assert.equal(acct.credits_used, 0.3);
    assert.equal((await call('GET', `/task/${created.body.task_id}`)).body.credits_used, 0.3);

    const next = await call('POST', '/task', { prompt: PROMPT });
    assertOutOfCredits(next);
    assert.equal(next.body.task_created, false);
    assertOutOfCredits(await call('POST', `/task/${created.body.task_id}/continue`, { message: 'Go on.' }));
    assert.equal(fakeModel(h).requests.length, 1, 'no turn ran on a balance of 0');
  });

  it('an account debited to exactly 0 by the admin starts no turn', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 1);
    assert.equal(await addCredits(h, account, -0.7), 0.3);
    assert.equal(await addCredits(h, account, -0.1), 0.2);
    assert.equal(await addCredits(h, account, -0.2), 0);
    assertOutOfCredits(await as(h, account)('POST', '/task', { prompt: PROMPT }));
  });
});

describe('micro-credits', () => {
  it('toMicros reads the decimal a number is written as and rounds it to 6 places, half away from zero', () => {
    assert.equal(MICROS_PER_CREDIT, 1_000_000);
    assert.equal(toMicros(0.1 + 0.2), 300_000);
    assert.equal(toMicros(0.3), 300_000);
    assert.equal(toMicros(100), 100_000_000);
    assert.equal(toMicros(0.000001), 1);
    assert.equal(toMicros(1.0000005), 1_000_001, 'half rounds up, where 1.0000005 * 1e6 is 1000000.4999…');
    assert.equal(toMicros(-1.0000005), -1_000_001, 'and away from zero below it');
    assert.equal(toMicros(0.00000049), 0);
    assert.equal(toMicros(5e-7), 1);
    assert.equal(toMicros(1e-7), 0);
    assert.ok(Object.is(toMicros(-1e-7), 0), 'no negative zero');
    assert.equal(toMicros(123456.789), 123_456_789_000);
    assert.equal(toMicros(9007199254.74099), 9_007_199_254_740_990, 'amounts up to 2^53 micro-credits are exact');
  });

  it('toMicros refuses what no exact amount can be', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e10, -1e10, 1e21]) assert.throws(() => toMicros(bad), RangeError, String(bad));
  });

  it('fromMicros shows what the integer holds', () => {
    assert.equal(fromMicros(300_000), 0.3);
    assert.equal(fromMicros(1), 0.000001);
    assert.equal(fromMicros(0), 0);
    assert.equal(JSON.stringify(fromMicros(123_456_789_123)), '123456.789123');
    for (const micros of [1, 7, 299_999, 300_001, 123_456_789, 10_000_000_000_000]) assert.equal(toMicros(fromMicros(micros)), micros);
  });

  it('a step costs whole micro-credits: tokens per million, per class, rounded once per step, tool calls each', () => {
    const prices = pricesInMicros({ inputPerMillion: 10, cachedInputPerMillion: 1, outputPerMillion: 30, toolCall: 0.01 });
    const step = { tokensIn: 1234, tokensInCached: 0, tokensOut: 567, toolCalls: 2 };
    assert.equal(stepCostMicros(prices, step), 12_340 + 17_010 + 20_000);
    // 1,000 of the 1,234 input tokens read from the cache: 234 at 10 credits per million, 1,000 at 1.
    assert.equal(stepCostMicros(prices, { ...step, tokensInCached: 1000 }), 2_340 + 1_000 + 17_010 + 20_000);
    const onePerMillion = { inputPerMillion: 1, cachedInputPerMillion: 0, outputPerMillion: 0, toolCall: 0 };
    assert.equal(stepCostMicros(onePerMillion, { tokensIn: 499_999, tokensInCached: 0, tokensOut: 0, toolCalls: 0 }), 0);
    assert.equal(stepCostMicros(onePerMillion, { tokensIn: 500_000, tokensInCached: 0, tokensOut: 0, toolCalls: 0 }), 1);
    assert.equal(stepCostMicros(prices, { tokensIn: 0, tokensInCached: 0, tokensOut: 0, toolCalls: 0 }), 0);
  });

  it('prices tokens per million by class; cached input defaults to a tenth of input', () => {
    assert.deepEqual(loadConfig({}).prices, { inputPerMillion: 10, cachedInputPerMillion: 1, outputPerMillion: 30, toolCall: 0.01 });
    assert.deepEqual(loadConfig({ QUARRY_PRICE_INPUT: '3', QUARRY_PRICE_OUTPUT: '15' }).prices, { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15, toolCall: 0.01 });
    assert.equal(loadConfig({ QUARRY_PRICE_INPUT: '3', QUARRY_PRICE_CACHED_INPUT: '0.5' }).prices.cachedInputPerMillion, 0.5);
  });

  it('refuses to start with the per-1,000 price names, naming the variable to set and its value', () => {
    assert.throws(() => loadConfig({ QUARRY_PRICE_INPUT_PER_1K: '0.003' }), /QUARRY_PRICE_INPUT_PER_1K is no longer read.*QUARRY_PRICE_INPUT=3\b/);
    assert.throws(() => loadConfig({ QUARRY_PRICE_OUTPUT_PER_1K: '0.015' }), /QUARRY_PRICE_OUTPUT_PER_1K is no longer read.*QUARRY_PRICE_OUTPUT=15\b/);
  });
});

describe('turn limits', () => {
  it('max_credits_per_turn ends the turn with an error event, then done failed', async (t) => {
    const h = await setup(t);
    const account = await createAccount(h, 100);
    const call = as(h, account);
    fakeModel(h).setResponder(() => toolStep('again', { prompt_tokens: 1000, completion_tokens: 1000 })); // 3 per model step
    const created = await call('POST', '/task/start', { task: { ...SPEC, limits: { max_credits_per_turn: 2 } } });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id;
    await waitIdleAs(h, id, account.key);

    const { done } = assertFailedWith(await taskEvents(h, id, account.key), null, /max_credits_per_turn/);
    assert.equal(fakeModel(h).requests.length, 1, 'no model call after the turn went over its limit');
    assert.ok(done.credits_used >= 2 && done.credits_used <= 3.5, `credits_used ${done.credits_used}`);
    const task = (await call('GET', `/task/${id}`)).body;
    assert.equal(task.status, 'plan');
    assert.equal(task.activity, 'idle');
    assert.equal((await adminAccount(h, account)).balance, 100 - done.credits_used);
  });

  it('max_steps ends the turn with an error event, then done failed', async (t) => {
    const h = await setup(t);
    fakeModel(h).setResponder(() => toolStep('again', { prompt_tokens: 10, completion_tokens: 10 }));
    const created = await h.request('POST', '/task/start', { body: { task: { ...SPEC, limits: { max_steps: 3 } } } });
    assert.equal(created.status, 200, created.text);
    const id = created.body.task_id;
    await waitIdle(h, id);

    assertFailedWith(await taskEvents(h, id), null, /max_steps/);
    const calls = fakeModel(h).requests.length;
    assert.ok(calls >= 1 && calls <= 3, `the model was called ${calls} times with max_steps 3`);
    const task = (await h.request('GET', `/task/${id}`)).body;
    assert.equal(task.status, 'plan');
    assert.equal(task.activity, 'idle');
  });
});
