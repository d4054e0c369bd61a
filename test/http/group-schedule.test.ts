/**
 * Scheduled groups over HTTP (decisions §19): `schedule` on POST /group, the Group body's `cron`,
 * an execute turn of every completed run at each tick (on the run's own task, so the merged
 * changes show what the tick changed), within max_parallel and max_credits (a budget per tick), and
 * 422 for a bad schedule.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, startTestHarness, userText } from '../kit/task-api.js';
import { readSse } from '../kit/sse-client.js';
import type { FakeReply } from '../kit/fake-openai-server.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const EVERY_SECOND = '* * * * * *';
/** Ticks come a second apart; a few of them, with the runs between. */
const TICK_WAIT = { timeoutMs: 20_000, pollMs: 100 };
/** As TICK_WAIT, polling less often where the runs take seconds (polls count against the key's rate limit). */
const SLOW_POLL = { timeoutMs: 30_000, pollMs: 250 };

const SPEC = {
  prompt: 'For each company, find its headquarters city.',
  input_columns: [{ name: 'company', type: 'string', required: true }],
  outputs: [{ id: 'facts', kind: 'table', key: ['name'], columns: [{ name: 'name', type: 'string', required: true }, { name: 'hq', type: 'string' }] }],
};

/** A model call the fake model answered: for which company's run, in its how-many-th turn. */
interface ModelCall { company: string; turn: number }

/**
 * Each turn of a run writes its company's row again, with the headquarters numbered by the turn:
 * `HQ 1`, then `HQ 2`… `usage`, if given, is what each model call of a run's n-th turn reports
 * (and so costs). Returns the calls answered, as they come.
 */
function writeNumberedRows(h: Harness, usage?: (turn: number) => FakeReply['usage']): ModelCall[] {
  const calls: ModelCall[] = [];
  const turns = new Map<string, number>();
  fakeModel(h).setResponder((body) => {
    const company = /"company":"([^"]+)"/.exec(userText(body))![1]!;
    const replying = body.messages?.at(-1)?.role === 'tool';
    if (!replying) turns.set(company, (turns.get(company) ?? 0) + 1);
    const turn = turns.get(company)!;
    calls.push({ company, turn });
    const cost = usage ? { usage: usage(turn) } : {};
    if (replying) return { text: 'Done.', ...cost };
    return { ...cost, toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ name: company, hq: `HQ ${turn}` }], sources: [{ url: 'https://example.com/g' }] } }] };
  });
  return calls;
}

async function createGroup(h: Harness, body: Json): Promise<Json> {
  const res = await h.request('POST', '/group', { body: { task: SPEC, ...body } });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function runs(h: Harness, groupId: string): Promise<Json[]> {
  const res = await h.request('GET', `/group/${groupId}/runs`);
  assert.equal(res.status, 200, res.text);
  return res.body.runs;
}

describe('scheduled groups', () => {
  it('at a tick every completed run runs an execute turn on its own task, and the merged changes show what the tick changed', async (t) => {
    const h = await startTestHarness(t);
    writeNumberedRows(h);
    const group = await createGroup(h, { inputs: [{ company: 'Acme' }, { company: 'Beta' }], schedule: { cron: EVERY_SECOND } });
    assert.deepEqual({ ...group.cron, next_run_at: undefined }, { expression: EVERY_SECOND, timezone: 'UTC', next_run_at: undefined });
    assert.ok(!Number.isNaN(Date.parse(group.cron.next_run_at)), `next_run_at is a date: ${group.cron.next_run_at}`);

    const changed = await until('both runs changed their row at a tick', async () => {
      const res = await h.request('GET', `/group/${group.group_id}/changes`);
      assert.equal(res.status, 200, res.text);
      const ticks = res.body.changes.filter((c: Json) => c.change === 'changed');
      return new Set(ticks.map((c: Json) => c.input.company)).size === 2 ? res.body.changes : undefined;
    }, TICK_WAIT);

    const taskOf = new Map((await runs(h, group.group_id)).map((r: Json) => [r.input.company, r.task_id]));
    for (const company of ['Acme', 'Beta']) {
      const mine = changed.filter((c: Json) => c.input.company === company);
      assert.equal(mine[0].change, 'added', `${company}: the first run added the row`);
      assert.deepEqual(mine[0].fields.hq, { before: null, after: 'HQ 1' });
      const tick = mine.find((c: Json) => c.change === 'changed');
      assert.deepEqual(tick.fields.hq, { before: 'HQ 1', after: 'HQ 2' }, `${company}: the tick's change`);
      assert.deepEqual(tick.key, { name: company });
      // The same task both times: the tick ran its execute turn again, no new run.
      assert.ok(mine.every((c: Json) => c.task_id === taskOf.get(company)), JSON.stringify(mine));
      assert.notEqual(tick.turn_id, mine[0].turn_id);
    }

    const got = await h.request('GET', `/group/${group.group_id}`);
    assert.equal(got.body.cron.expression, EVERY_SECOND);
    assert.ok(Date.parse(got.body.cron.next_run_at) > Date.parse(group.cron.next_run_at), 'the next tick moved on');
    assert.equal(got.body.counts.failed, 0);
  });

  it('max_credits is per tick: once a tick\'s runs reach it no run starts and no model call begins, and the next tick starts afresh', async (t) => {
    // A model call costs its prompt tokens at 1 credit a million and nothing else, so its reserve
    // (its estimated prompt, a few thousand tokens) is a few thousandths of a credit.
    const h = await startTestHarness(t, {
      listen: true,
      env: { QUARRY_PRICE_INPUT: '1', QUARRY_PRICE_CACHED_INPUT: '1', QUARRY_PRICE_OUTPUT: '0', QUARRY_PRICE_TOOL_CALL: '0' },
    });
    // Each turn makes two calls (and the answer's check, free): 0.4 credits each in an input's first run, 1 credit at a tick.
    const calls = writeNumberedRows(h, (turn) => ({ prompt_tokens: turn === 1 ? 400_000 : 1_000_000, completion_tokens: 0 }));
    const companies = ['Acme', 'Beta', 'Gamma', 'Delta', 'Epsilon'];
    // One run at a time, so the cap falls at a known call. A tick adds nothing while a run waits
    // for a slot, so the first runs end before the first tick, and each tick's runs before the next.
    const group = await createGroup(h, { inputs: companies.map((company) => ({ company })), max_parallel: 1, max_credits: 2.5, schedule: { cron: EVERY_SECOND } });

    const events = (await until('the first runs and two ticks are done', async () => {
      const read = (await readSse(h.url, `/group/${group.group_id}/stream`, { key: h.key }, TICK_WAIT.timeoutMs)).events.map((e) => e.json as Json);
      return read.filter((e) => e.type === 'done').length >= 3 ? read : undefined;
    }, SLOW_POLL))!;
    const stretches: Json[][] = [[]];
    for (const e of events) {
      stretches.at(-1)!.push(e);
      if (e.type === 'done') stretches.push([]);
    }
    const told = (stretch: Json[]) => stretch.map((e) => (e.type === 'run' ? `${companies[e.input]} ${e.status}` : e.type === 'group' ? e.reason : e.type));
    const [first, tick1, tick2] = stretches as [Json[], Json[], Json[]];

    // The first runs: three spend 2.4, Delta's first call brings it to 2.8, its second never begins, and Epsilon never starts.
    assert.deepEqual(told(first), ['created', 'Acme running', 'Acme completed', 'Beta running', 'Beta completed', 'Gamma running', 'Gamma completed', 'Delta running', 'Delta failed', 'budget_reached', 'done']);
    assert.equal(first.at(-1).group.credits_used, 2.8);

    // Tick 1 counts from nothing spent, though the first runs spent more than the cap. Acme
    // spends 2; Beta's first call begins (2 and its reserve are below 2.5) and brings it to 3; its
    // second call never begins (Beta fails), and Gamma never starts.
    assert.deepEqual(told(tick1), ['scheduled_tick', 'Acme running', 'Acme completed', 'Beta running', 'Beta failed', 'budget_reached', 'done']);
    assert.equal(tick1[0].group.credits_used, 0, 'a tick counts from 0');
    assert.deepEqual(tick1[0].group.counts, { pending: 3, running: 0, completed: 0, failed: 1, stopped: 1 });
    assert.equal(tick1.at(-1).group.credits_used, 3, 'one call (1 credit) above the cap of 2.5, for the one run under way');

    // Tick 2: the budget is fresh, so the completed run runs again and its 2 credits are all the
    // tick shows. Runs failed or stopped are left out (docs/groups.md).
    assert.deepEqual(told(tick2), ['scheduled_tick', 'Acme running', 'Acme completed', 'done']);
    assert.equal(tick2[0].group.credits_used, 0);
    assert.equal(tick2.at(-1).group.credits_used, 2);
    assert.deepEqual(tick2.at(-1).group.counts, { pending: 0, running: 0, completed: 1, failed: 2, stopped: 2 });

    // The model got exactly those calls: none once the cap was reached.
    const expected: [string, number][] = [
      ['Acme', 1], ['Acme', 1], ['Beta', 1], ['Beta', 1], ['Gamma', 1], ['Gamma', 1], ['Delta', 1],
      ['Acme', 2], ['Acme', 2], ['Beta', 2],
      ['Acme', 3], ['Acme', 3],
    ];
    assert.deepEqual(calls.filter((c) => c.turn <= 3), expected.map(([company, turn]) => ({ company, turn })));
    const beta = (await runs(h, group.group_id)).find((r: Json) => r.input.company === 'Beta');
    assert.equal(beta.status, 'failed');
    assert.equal(beta.error.error, 'limit_reached', JSON.stringify(beta.error));
  });

  it('a bad cron expression or timezone is 422 naming schedule.cron / schedule.timezone, and makes no group', async (t) => {
    const h = await startTestHarness(t);
    const cases: [Json, string][] = [
      [{ cron: 'every monday' }, 'schedule.cron'],
      [{ cron: '61 * * * *' }, 'schedule.cron'],
      [{ cron: '0 7 * * 1', timezone: 'Mars/Olympus_Mons' }, 'schedule.timezone'],
    ];
    for (const [schedule, param] of cases) {
      const bad = await h.request('POST', '/group', { body: { task: SPEC, inputs: [{ company: 'Acme' }], schedule } });
      assert.equal(bad.status, 422, bad.text);
      assert.equal(bad.body.error, 'invalid_request');
      assert.equal(bad.body.param, param, `${JSON.stringify(schedule)}: ${bad.text}`);
      assert.deepEqual(bad.body.detail[0].loc, ['body', ...param.split('.')]);
    }
    const list = await h.request('GET', '/group');
    assert.deepEqual(list.body, [], list.text);
    const plain = await createGroup(h, { inputs: [{ company: 'Acme' }] });
    assert.equal(plain.cron, null, 'an unscheduled group has no cron');
  });

  it('the runs of a tick stay within max_parallel: those beyond it wait', async (t) => {
    const h = await startTestHarness(t, { listen: true });
    writeNumberedRows(h);
    const companies = ['Acme', 'Beta', 'Gamma'];
    const group = await createGroup(h, { inputs: companies.map((company) => ({ company })), max_parallel: 1, schedule: { cron: EVERY_SECOND } });
    const tasks = (await until('every run has a task', async () => {
      const all = await runs(h, group.group_id);
      return all.every((r: Json) => r.task_id) ? all.map((r: Json) => r.task_id as string) : undefined;
    }, SLOW_POLL))!;
    await until('every run ran again at a tick', async () => {
      const res = await h.request('GET', `/group/${group.group_id}/changes`);
      return new Set(res.body.changes.filter((c: Json) => c.change === 'changed').map((c: Json) => c.task_id)).size === tasks.length;
    }, SLOW_POLL);

    // The group's stored events, read a stretch (up to a done) at a time: never more than one run at once.
    const events: Json[] = [];
    let last = 0;
    while (events.filter((e) => e.type === 'run' && e.status === 'running').length < 2 * companies.length) {
      const stretch = await readSse(h.url, `/group/${group.group_id}/stream`, { key: h.key, headers: last ? { 'last-event-id': String(last) } : {} }, TICK_WAIT.timeoutMs);
      const read = stretch.events.map((e) => e.json as Json);
      assert.ok(read.length > 0, 'the stream had more');
      events.push(...read);
      last = Number(stretch.events.at(-1)!.id);
    }
    let running = 0;
    for (const e of events) {
      if (e.type === 'run') running += e.status === 'running' ? 1 : -1;
      assert.ok(running <= 1, `at most max_parallel runs at once: ${JSON.stringify(e)}`);
      if (e.type === 'group') assert.ok(e.group.counts.running <= 1, JSON.stringify(e));
      if (e.type === 'run') assert.ok(tasks.includes(e.task_id), 'each tick runs the runs\' own tasks');
    }
    assert.ok(events.some((e) => e.type === 'group' && e.reason === 'scheduled_tick' && e.group.counts.pending > 0), 'a tick left runs waiting');
  });
});
