/**
 * A group's max_credits is a hard cap (decisions §18): every model call of a run costs exactly one
 * credit (1,000 input tokens at 1,000 credits per million, tools free), a run takes five calls,
 * and three runs work at once under a cap of 10 credits. Runs are cut off mid-way once the cap is
 * reached: the group ends at most one call per running run above it, and no call begins after.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { createAccount, fakeModel, uid } from '../kit/task-api.js';
import type { FakeRequestBody } from '../kit/fake-openai-server.js';

const CALLS_PER_RUN = 5;
const PARALLEL = 3;
const CAP = 10;

const SPEC = {
  name: 'Budgeted',
  prompt: 'For each item, write one note.',
  input_columns: [{ name: 'item', type: 'string', required: true }],
  outputs: [{ id: 'notes', kind: 'table', columns: [{ name: 'note', type: 'string' }] }],
};

const step = (body: FakeRequestBody) => (body.messages ?? []).filter((m) => m.role === 'assistant').length;

describe('a group\'s max_credits as a hard cap', () => {
  let h: Harness;

  before(async () => {
    h = await startHarness({
      env: { QUARRY_PRICE_INPUT: '1000', QUARRY_PRICE_CACHED_INPUT: '1000', QUARRY_PRICE_OUTPUT: '0', QUARRY_PRICE_TOOL_CALL: '0', QUARRY_RATE_LIMIT_PER_MIN: '1000000' },
    });
    fakeModel(h).setResponder(async (body) => {
      // A little time per call, so the runs' calls overlap.
      await new Promise((r) => setTimeout(r, 5));
      const usage = { prompt_tokens: 1000, completion_tokens: 0 };
      return step(body) < CALLS_PER_RUN - 1
        ? { usage, toolCalls: [{ name: 'write_rows', arguments: { output: 'notes', rows: [{ note: `step ${step(body)}` }] } }] }
        : { usage, text: 'Done.' };
    });
  });
  after(() => h?.close());

  it('ends at most one model call per running run above the cap, and starts nothing after it', async (t) => {
    const account = await createAccount(h, `capped ${uid()}`, 1000);
    const calls = fakeModel(h).requests.length;
    const created = await h.request('POST', '/group', {
      key: account.api_key,
      body: { task: SPEC, inputs: Array.from({ length: 12 }, (_, i) => ({ item: `item ${i}` })), max_parallel: PARALLEL, max_credits: CAP },
    });
    assert.equal(created.status, 200, created.text);
    const group = await until('the group settles', async () => {
      const res = await h.request('GET', `/group/${created.body.group_id}`, { key: account.api_key });
      return res.body.counts.pending + res.body.counts.running === 0 ? res.body : undefined;
    }, { timeoutMs: 60_000, pollMs: 50 });
    const made = fakeModel(h).requests.length - calls;
    t.diagnostic(`counts ${JSON.stringify(group.counts)}, credits_used ${group.credits_used}, model calls ${made}`);
    assert.ok(group.credits_used <= CAP + PARALLEL, `credits_used ${group.credits_used} is at most one call (1 credit) per running run above the cap of ${CAP}`);
    assert.ok(made <= CAP + PARALLEL, `${made} model calls were made, each costing 1 credit`);
    assert.equal(group.credits_used, made, 'credits_used is what the calls cost');
    const usage = await h.request('GET', `/admin/accounts/${account.account_id}`, { key: 'admin-secret-for-tests' });
    assert.equal(usage.body.credits_used, group.credits_used, 'the account was charged what the group shows');
    assert.ok(group.counts.failed >= 1, 'runs under way when the cap was reached were cut off');
    assert.equal(group.counts.completed + group.counts.failed + group.counts.stopped, 12);
    assert.ok(group.counts.stopped >= 12 - Math.ceil(CAP / CALLS_PER_RUN) - PARALLEL, 'what was pending once the cap was reached never started');
  });
});
