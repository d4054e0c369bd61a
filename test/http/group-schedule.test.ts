/**
 * Scheduled groups over HTTP (decisions §19): `schedule` on POST /group, the Group body's `cron`,
 * an execute turn of every completed run at each tick (on the run's own task, so the merged
 * changes show what the tick changed), within max_parallel, and 422 for a bad schedule.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, startTestHarness, userText } from '../kit/task-api.js';
import { readSse } from '../kit/sse-client.js';

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

/** Each turn of a run writes its company's row again, with the headquarters numbered by the turn: `HQ 1`, then `HQ 2`… */
function writeNumberedRows(h: Harness): void {
  const turns = new Map<string, number>();
  fakeModel(h).setResponder((body) => {
    if (body.messages?.at(-1)?.role === 'tool') return { text: 'Done.' };
    const company = /"company":"([^"]+)"/.exec(userText(body))![1]!;
    const n = (turns.get(company) ?? 0) + 1;
    turns.set(company, n);
    return { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ name: company, hq: `HQ ${n}` }], sources: [{ url: 'https://example.com/g' }] } }] };
  });
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
