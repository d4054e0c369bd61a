/**
 * Fair scheduling of waiting turns (decisions §18): a worker with four slots, every model call
 * held until the test releases it, so the order in which waiting turns reach the model is the
 * order in which they were claimed. Each release ends one turn and frees one slot; the next
 * model call to arrive is the turn the worker picked. A single task created behind a 40-run group
 * is picked at the first slot that frees; two accounts take turns; within an account, a single
 * task and two groups take turns; an account with two groups gets no more turns than an account
 * with one.
 */
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../kit/harness.js';
import { createAccount, fakeModel, uid, userText } from '../kit/task-api.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';

const SLOTS = 4;

const groupSpec = (name: string) => ({
  name,
  prompt: `Work on each input of ${name}.`,
  input_columns: [{ name: 'item', type: 'string', required: true }],
  outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'note', type: 'string' }] }],
});

/** One model call waiting for the test: whose turn made it, and how to answer it. */
interface HeldCall {
  line: string;
  answer: () => void;
}

describe('fair scheduling of waiting turns', () => {
  let h: Harness;
  /** Calls in order of arrival; answered ones stay, with `answered` set. */
  let calls: (HeldCall & { answered: boolean })[] = [];
  let arrived: (() => void) | undefined;

  /** Which line (a group's name, or a single task's prompt tag) a model call belongs to: its prompt names it. */
  function lineOf(body: FakeRequestBody): string {
    const m = /\[line (\S+)\]/.exec(userText(body));
    return m ? m[1]! : 'unknown';
  }

  before(async () => {
    h = await startHarness({ env: { QUARRY_MAX_CONCURRENT_TURNS: String(SLOTS), QUARRY_RATE_LIMIT_PER_MIN: '1000000' } });
    fakeModel(h).setResponder((body) => new Promise<FakeReply>((resolve) => {
      calls.push({ line: lineOf(body), answered: false, answer: () => resolve({ text: 'Done.' }) });
      arrived?.();
    }));
  });
  after(() => h?.close());

  /** The groups a test made, stopped after it whatever its outcome. */
  let groups: { id: string; key?: string }[] = [];

  beforeEach(() => {
    calls = [];
    groups = [];
  });

  /** Stops the test's groups and lets every held call end, so the next test starts on an idle worker. */
  afterEach(async () => {
    for (const g of groups) assert.equal((await h.request('POST', `/group/${g.id}/stop`, g.key ? { key: g.key } : {})).status, 200);
    for (const c of calls) if (!c.answered) c.answer();
  });

  /** Resolves once `n` model calls have arrived in all. */
  async function callsArrived(n: number): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (calls.length < n) {
      assert.ok(Date.now() < deadline, `${n} model calls arrived within 20 s (got ${calls.length}: ${calls.map((c) => c.line).join(', ')})`);
      await new Promise<void>((resolve) => {
        arrived = resolve;
        setTimeout(resolve, 100);
      });
    }
  }

  /** Answers the oldest held call (its turn ends, freeing one slot) and returns the line of the turn the worker picked next. */
  async function endOneTurn(): Promise<string> {
    const held = calls.find((c) => !c.answered);
    assert.ok(held, 'a call is held');
    const n = calls.length;
    held.answered = true;
    held.answer();
    await callsArrived(n + 1);
    return calls[n]!.line;
  }

  async function createGroup(name: string, inputs: number, key?: string): Promise<string> {
    const res = await h.request('POST', '/group', {
      ...(key ? { key } : {}),
      body: { name, task: { ...groupSpec(name), prompt: `[line ${name}] Work on each input.` }, inputs: Array.from({ length: inputs }, (_, i) => ({ item: `${name} ${i}` })), max_parallel: inputs },
    });
    assert.equal(res.status, 200, res.text);
    groups.push({ id: res.body.group_id, ...(key ? { key } : {}) });
    return res.body.group_id;
  }

  async function createTask(line: string, key?: string): Promise<string> {
    const res = await h.request('POST', '/task', { ...(key ? { key } : {}), body: { prompt: `[line ${line}] A single question.` } });
    assert.equal(res.status, 200, res.text);
    return res.body.task_id;
  }

  it('picks a single task created behind a 40-run group when the first turn ends', async () => {
    const big = `big-${uid()}`;
    await createGroup(big, 40);
    await callsArrived(SLOTS);
    assert.deepEqual(calls.map((c) => c.line), Array(SLOTS).fill(big), 'the group\'s runs fill the worker');
    const single = `single-${uid()}`;
    await createTask(single);
    assert.equal(await endOneTurn(), single, 'the single task reached the model when one of the group\'s turns ended');
  });

  it('takes turns between two accounts', async () => {
    const a = await createAccount(h, `a ${uid()}`, 1000);
    const b = await createAccount(h, `b ${uid()}`, 1000);
    const ga = `ga-${uid()}`;
    const gb = `gb-${uid()}`;
    await createGroup(ga, 40, a.api_key);
    await callsArrived(SLOTS);
    await createGroup(gb, 10, b.api_key);
    const picked: string[] = [];
    for (let i = 0; i < 6; i++) picked.push(await endOneTurn());
    assert.deepEqual(picked, [gb, ga, gb, ga, gb, ga], 'the second account\'s first turn comes first, then the accounts alternate');
  });

  it('takes turns, within an account, between a single task and two groups', async () => {
    const g1 = `g1-${uid()}`;
    const g2 = `g2-${uid()}`;
    const single = `single-${uid()}`;
    await createGroup(g1, 40);
    await callsArrived(SLOTS);
    await createGroup(g2, 40);
    await createTask(single);
    const picked: string[] = [];
    for (let i = 0; i < 6; i++) picked.push(await endOneTurn());
    assert.deepEqual(picked, [g2, single, g1, g2, g1, g2], 'each line\'s first waiting turn before any line\'s second, then the groups alternate');
  });

  it('takes turns between accounts first, then between an account\'s groups', async () => {
    const a = await createAccount(h, `a ${uid()}`, 1000);
    const b = await createAccount(h, `b ${uid()}`, 1000);
    const a1 = `a1-${uid()}`;
    const a2 = `a2-${uid()}`;
    const b1 = `b1-${uid()}`;
    await createGroup(a1, 40, a.api_key);
    await callsArrived(SLOTS);
    await createGroup(a2, 40, a.api_key);
    await createGroup(b1, 40, b.api_key);
    const picked: string[] = [];
    for (let i = 0; i < 18; i++) picked.push(await endOneTurn());
    const ofB = picked.filter((line) => line === b1).length;
    assert.ok(Math.abs(ofB - picked.length / 2) <= 1, `the account with one group got half the turns, within one round (${ofB} of ${picked.length}: ${picked.join(', ')})`);
    const ofA = picked.filter((line) => line !== b1);
    assert.ok(ofA.every((line, i) => i === 0 || line !== ofA[i - 1]), `the other account's two groups alternate (${ofA.join(', ')})`);
  });
});
