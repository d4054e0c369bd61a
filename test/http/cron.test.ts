/**
 * Cron mode over HTTP (decisions §6, interface §3): a scheduled task runs its first turn at once
 * and an execute turn at every tick, refuses messages with 409 task_in_cron_mode, records ticks
 * that find a turn still running, and enters or leaves cron mode through PATCH.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitIdle, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, getTask, startTestHarness, taskEvents, taskState } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

function assertError(res: { status: number; body: Json; text: string }, status: number, error: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body?.error, error, res.text);
  assert.equal(typeof res.body.message, 'string');
  assert.equal(typeof res.body.request_id, 'string');
}

const EVERY_SECOND = '* * * * * *';
/** Waits for what a tick does: ticks come a second apart, so six seconds, polled every 25 ms. */
const TICK_WAIT = { timeoutMs: 6000, pollMs: 25 };
const PROMPT = 'Track Li-ion plant announcements in the EU.';
const OUTPUT = { id: 'plants', kind: 'table', columns: [{ name: 'company', type: 'string', required: true }] };

function spec(schedule?: Json): Json {
  return { name: 'Plant tracker', prompt: PROMPT, outputs: [OUTPUT], ...(schedule === undefined ? {} : { schedule }) };
}

async function createCron(h: Harness, schedule: Json = { cron: EVERY_SECOND }): Promise<Json> {
  const res = await h.request('POST', '/task/start', { body: { task: spec(schedule) } });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Every message route, each of which a task in cron mode refuses. */
async function assertRefusesMessages(h: Harness, taskId: string, code: string): Promise<void> {
  const attempts: [string, string, Json][] = [
    ['POST', `/task/${taskId}/continue`, { message: 'Add Poland.' }],
    ['POST', `/task/${taskId}/execute`, { instruction: 'Refresh.' }],
    ['POST', `/task/${taskId}/execute`, {}],
    ['POST', '/task', { prompt: 'Add Spain.', task_id: taskId }],
    ['POST', '/task/start', { prompt: 'Add Italy.', task_id: taskId }],
  ];
  for (const [method, path, body] of attempts) {
    const res = await h.request(method, path, { body });
    assertError(res, 409, code);
    assert.equal(res.body.retryable, code === 'task_executing', `${path}: retryable`);
    assert.equal(res.body.task_id, taskId, `${path}: task_id`);
  }
}

function assertCron(task: Json, expression: string, timezone: string): void {
  assert.ok(task.cron, `the task carries cron: ${JSON.stringify(task)}`);
  assert.equal(task.cron.expression, expression);
  assert.equal(task.cron.timezone, timezone);
  assert.equal(typeof task.cron.next_run_at, 'string');
  assert.ok(!Number.isNaN(Date.parse(task.cron.next_run_at)), `next_run_at is a date: ${task.cron.next_run_at}`);
}

describe('cron mode', () => {
  it('a create with an every-second schedule runs the first turn at once, then an execute turn on every tick', async (t) => {
    const h = await startTestHarness(t);
    const before = Date.now();
    const task = await createCron(h);
    assert.equal(task.status, 'execute', 'the first turn starts at once');
    assertCron(task, EVERY_SECOND, 'UTC');
    const next = Date.parse(task.cron.next_run_at);
    assert.ok(next > before - 1000 && next <= Date.now() + 2000, `next_run_at ${task.cron.next_run_at} is within a second or two`);

    await fakeModel(h).waitForRequests(3, 10_000);
    const evs = await taskEvents(h, task.task_id);
    const created = evs.find((e) => e.type === 'task' && e.reason === 'created');
    const started = evs.filter((e) => e.type === 'task' && e.reason === 'turn_started');
    assert.ok(started.length >= 3, `at least three turns ran: ${started.length}`);
    assert.equal(started[0].turn_id, created.turn_id, 'the first turn is the create\'s own');
    assert.equal(new Set(started.map((e) => e.turn_id)).size, started.length, 'each tick runs a new turn');
    const done = evs.filter((e) => e.type === 'done');
    assert.ok(done.length >= 2);
    for (const e of done) assert.equal(e.outcome, 'completed');
    // Tick turns run the spec (execute): the model sees only the prompt, no message.
    for (const req of fakeModel(h).requests) {
      const users = (req.body.messages ?? []).filter((m) => m.role === 'user').map((m) => m.content);
      assert.ok(users.includes(PROMPT));
    }

    const got = await getTask(h, task.task_id);
    assertCron(got, EVERY_SECOND, 'UTC');
    assert.deepEqual(got.spec.schedule, { cron: EVERY_SECOND, timezone: 'UTC' });
  });

  it('continue, execute and prompt messages are 409 task_in_cron_mode, which wins over task_executing; ticks during a turn are recorded as skipped; stop keeps the schedule', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).setResponder(() => ({ hang: true }));
    const task = await createCron(h);
    await fakeModel(h).waitForRequests(1);
    const running = await taskState(h, task.task_id);
    assert.equal(running.active, true);
    const turnId = running.turn.id;

    await assertRefusesMessages(h, task.task_id, 'task_in_cron_mode');
    assert.equal((await taskState(h, task.task_id)).queued_messages, 0, 'nothing was queued');

    const skipped = await until(
      'a cron_tick_skipped event',
      async () => (await taskEvents(h, task.task_id)).find((e) => e.type === 'task' && e.reason === 'cron_tick_skipped'),
      TICK_WAIT,
    );
    assert.equal(skipped.turn_id, turnId, 'the skipped tick names the turn still running');
    assert.equal((await taskState(h, task.task_id)).turn?.id, turnId, 'the running turn goes on');

    const stopped = await h.request('POST', `/task/${task.task_id}/stop`, { body: {} });
    assert.equal(stopped.status, 200, stopped.text);
    assertCron(stopped.body, EVERY_SECOND, 'UTC');
    await until('the model call to be aborted', () => fakeModel(h).pending() === 0 || fakeModel(h).requests.length > 1, TICK_WAIT);
    const outcomes = (await taskEvents(h, task.task_id)).filter((e) => e.type === 'done').map((e) => e.outcome);
    assert.equal(outcomes[0], 'stopped');

    // The schedule stays: the next tick starts another turn.
    await fakeModel(h).waitForRequests(2, 6000);
    assertCron(await getTask(h, task.task_id), EVERY_SECOND, 'UTC');
  });

  it('PATCH {schedule: null} leaves cron mode (messages are accepted again)', async (t) => {
    const h = await startTestHarness(t);
    fakeModel(h).setResponder(() => ({ hang: true }));
    const task = await createCron(h);
    await fakeModel(h).waitForRequests(1);

    const left = await h.request('PATCH', `/task/${task.task_id}`, { body: { schedule: null } });
    assert.equal(left.status, 200, left.text);
    assert.equal(left.body.cron, null);
    const got = await getTask(h, task.task_id);
    assert.equal(got.cron, null);
    assert.equal(got.spec.schedule, null);

    // The running turn is not affected; a message now queues behind it.
    const queued = await h.request('POST', `/task/${task.task_id}/continue`, { body: { message: 'Add Poland.' } });
    assert.equal(queued.status, 202, queued.text);
    assert.equal(queued.body.status, 'accepted');
    assertError(await h.request('POST', `/task/${task.task_id}/execute`, { body: {} }), 409, 'task_executing');

    const stopped = await h.request('POST', `/task/${task.task_id}/stop`, { body: { clear_queue: true } });
    assert.equal(stopped.status, 200, stopped.text);
    fakeModel(h).setResponder(null);
    const idle = await h.request('POST', `/task/${task.task_id}/execute`, { body: {} });
    assert.equal(idle.status, 200, idle.text);
    await waitIdle(h, task.task_id);
    const reasons = (await taskEvents(h, task.task_id)).filter((e) => e.type === 'task').map((e) => e.reason);
    assert.ok(reasons.includes('updated'));
  });

  it('PATCH with a schedule enters cron mode; the task carries cron {expression, timezone, next_run_at}; ticks then run', async (t) => {
    const h = await startTestHarness(t);
    const res = await h.request('POST', '/task/start', { body: { task: spec() } });
    assert.equal(res.status, 200, res.text);
    const id = res.body.task_id;
    assert.equal(res.body.cron, null);
    await waitIdle(h, id);

    const weekly = await h.request('PATCH', `/task/${id}`, { body: { schedule: { cron: '0 7 * * 1', timezone: 'Europe/Berlin' } } });
    assert.equal(weekly.status, 200, weekly.text);
    assertCron(weekly.body, '0 7 * * 1', 'Europe/Berlin');
    const next = new Date(weekly.body.cron.next_run_at);
    assert.ok(next.getTime() > Date.now() && next.getTime() <= Date.now() + 7 * 86_400_000 + 3_600_000, `next run ${next.toISOString()} is within a week`);
    const berlin = Object.fromEntries(
      new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
        .formatToParts(next)
        .map((p) => [p.type, p.value]),
    );
    assert.deepEqual([berlin.weekday, berlin.hour, berlin.minute], ['Mon', '07', '00'], `next run is Monday 07:00 in Berlin: ${next.toISOString()}`);
    assert.ok(weekly.body.poll_after_s >= 1 && weekly.body.poll_after_s <= 300, `poll_after_s ${weekly.body.poll_after_s}`);
    const got = await getTask(h, id);
    assertCron(got, '0 7 * * 1', 'Europe/Berlin');
    assert.deepEqual(got.spec.schedule, { cron: '0 7 * * 1', timezone: 'Europe/Berlin' });

    await assertRefusesMessages(h, id, 'task_in_cron_mode');
    assert.equal(fakeModel(h).requests.length, 1, 'no refused message reached the model');

    const fast = await h.request('PATCH', `/task/${id}`, { body: { schedule: { cron: EVERY_SECOND } } });
    assert.equal(fast.status, 200, fast.text);
    assertCron(fast.body, EVERY_SECOND, 'UTC');
    await fakeModel(h).waitForRequests(2, 6000);
    const started = (await taskEvents(h, id)).filter((e) => e.type === 'task' && e.reason === 'turn_started');
    assert.ok(started.length >= 2, 'a tick started a turn');

    const off = await h.request('PATCH', `/task/${id}`, { body: { schedule: null } });
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.cron, null);
    await waitIdle(h, id);
    const message = await h.request('POST', `/task/${id}/continue`, { body: { message: 'Add Poland.' } });
    assert.ok(message.status === 200 || message.status === 202, message.text);
  });

  it('a bad cron expression or timezone in PATCH is 422 naming schedule.cron / schedule.timezone, and changes nothing', async (t) => {
    const h = await startTestHarness(t);
    const res = await h.request('POST', '/task/start', { body: { task: spec() } });
    const id = res.body.task_id;
    await waitIdle(h, id);

    const cases: [Json, string][] = [
      [{ cron: 'every monday' }, 'schedule.cron'],
      [{ cron: '61 * * * *' }, 'schedule.cron'],
      [{ cron: '* * * *' }, 'schedule.cron'],
      [{ cron: '* * * * * * *' }, 'schedule.cron'],
      [{ cron: '0 7 * * 1', timezone: 'Mars/Olympus_Mons' }, 'schedule.timezone'],
    ];
    for (const [schedule, param] of cases) {
      const bad = await h.request('PATCH', `/task/${id}`, { body: { schedule } });
      assertError(bad, 422, 'invalid_request');
      assert.equal(bad.body.param, param, `${JSON.stringify(schedule)}: ${bad.text}`);
      assert.ok(Array.isArray(bad.body.detail) && bad.body.detail.length > 0, bad.text);
      for (const d of bad.body.detail) {
        assert.equal(typeof d.type, 'string');
        assert.equal(typeof d.msg, 'string');
        assert.ok(Array.isArray(d.loc));
      }
      assert.deepEqual(bad.body.detail[0].loc, ['body', ...param.split('.')]);
    }
    const got = await getTask(h, id);
    assert.equal(got.cron, null, 'no bad schedule was applied');
    assert.equal(got.spec.schedule, null);

    const badCreate = await h.request('POST', '/task/start', { body: { task: spec({ cron: '0 7 * * 1', timezone: 'Nowhere/Void' }) } });
    assertError(badCreate, 422, 'invalid_request');
    assert.equal(badCreate.body.param, 'task.schedule.timezone');
    const list = await h.request('GET', '/task');
    assert.equal(list.body.length, 1, 'the refused create stored nothing');
  });
});
