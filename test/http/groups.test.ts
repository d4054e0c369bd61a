/**
 * Task groups (decisions §15.2) over real HTTP with the fake model: a CSV upload of 300 inputs
 * run to one merged row each, with max_parallel measured at the model; duplicates by `_key`;
 * bad inputs refused with their index and column and nothing stored; a single task created
 * during a large group runs before the group's backlog; max_credits stopping the rest; stop and
 * retry; the group's stream, resumed with Last-Event-ID; runs hidden from GET /task.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, putUpload, uid, userText } from '../kit/task-api.js';
import { readSse } from '../kit/sse-client.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

const SPEC = {
  name: 'Company facts',
  prompt: 'For each company, find its headquarters city.',
  input_columns: [{ name: 'company', type: 'string', required: true }, { name: 'founded', type: 'integer' }],
  outputs: [{ id: 'facts', kind: 'table', columns: [{ name: 'hq', type: 'string' }, { name: 'note', type: 'string' }] }],
};

/** The input a run's turn was given, read back from the message the model got. */
function inputOf(body: FakeRequestBody): { index: number; values: Json } | null {
  const m = /Input (\d+):\n(\{.*\})/.exec(userText(body));
  return m ? { index: Number(m[1]), values: JSON.parse(m[2]!) } : null;
}

const step = (body: FakeRequestBody) => (body.messages ?? []).filter((m) => m.role === 'assistant').length;

/** Per test, what a run does: write one row naming its input (default), fail, or wait. */
type RunBehaviour = (input: { index: number; values: Json }, body: FakeRequestBody) => FakeReply | Promise<FakeReply>;
const writeOneRow: RunBehaviour = (input, body) =>
  step(body) === 0
    ? { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ hq: `HQ of ${input.values.company}`, note: null }] } }] }
    : { text: 'Done.' };

async function waitGroup(h: Harness, groupId: string, done: (g: Json) => boolean, timeoutMs = 60_000, key?: string): Promise<Json> {
  let group: Json;
  await until(`group ${groupId}`, async () => {
    const res = await h.request('GET', `/group/${groupId}`, key ? { key } : {});
    assert.equal(res.status, 200, res.text);
    group = res.body;
    return done(group);
  }, { timeoutMs, pollMs: 50 });
  return group;
}

const settled = (g: Json) => g.counts.pending + g.counts.running === 0;

async function uploadFile(h: Harness, filename: string, contentType: string, text: string): Promise<string> {
  const ticket = await h.request('POST', '/upload-url', { body: { filename, content_type: contentType, size_bytes: Buffer.byteLength(text) } });
  assert.equal(ticket.status, 200, ticket.text);
  const put = await putUpload(h, ticket.body, text);
  assert.equal(put.status, 201, put.text);
  return ticket.body.upload_id;
}

describe('task groups', () => {
  let h: Harness;
  let behaviour: RunBehaviour = writeOneRow;
  /** Model requests in flight, per group run's input (for max_parallel) and overall. */
  let inFlight = 0;
  let maxInFlight = 0;

  before(async () => {
    h = await startHarness({ listen: true, env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MAX_CONCURRENT_TURNS: '16', QUARRY_SSE_PING_MS: '200' } });
    fakeModel(h).setResponder(async (body) => {
      const input = inputOf(body);
      if (!input) return { text: 'A single task, done.' };
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        return await behaviour(input, body);
      } finally {
        inFlight--;
      }
    });
  });
  after(() => h?.close());

  it('runs 300 inputs of a CSV upload to one merged row each, at most max_parallel at once', async () => {
    behaviour = async (input, body) => {
      await new Promise((r) => setTimeout(r, 5));
      return writeOneRow(input, body);
    };
    maxInFlight = 0;
    const lines = ['company,founded', ...Array.from({ length: 300 }, (_, i) => `"Company ${i}, Inc.",${1900 + (i % 100)}`)];
    const uploadId = await uploadFile(h, 'companies.csv', 'text/csv', `${lines.join('\n')}\n`);
    const created = await h.request('POST', '/group', { body: { name: 'csv run', task: SPEC, input_upload_id: uploadId, max_parallel: 4 } });
    assert.equal(created.status, 200, created.text);
    assert.match(created.body.group_id, /^grp_/);
    assert.equal(created.body.inputs, 300);
    assert.equal(created.body.status, 'running');
    assert.equal(created.body.counts.running, 4, 'the first max_parallel runs started with the create');
    assert.deepEqual(created.body.spec.input_columns.map((c: Json) => c.name), ['company', 'founded']);

    const group = await waitGroup(h, created.body.group_id, settled, 120_000);
    assert.equal(group.status, 'finished');
    assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 300, failed: 0, stopped: 0 });
    assert.ok(group.finished_at);
    assert.ok(maxInFlight <= 4, `at most 4 runs called the model at once, saw ${maxInFlight}`);
    assert.ok(maxInFlight >= 2, `runs did overlap (saw ${maxInFlight})`);

    const page = await h.request('GET', `/group/${group.group_id}/rows?limit=1000`);
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.total, 300);
    assert.equal(page.body.rows.length, 300);
    page.body.rows.forEach((row: Json, i: number) => {
      assert.equal(row._input, i);
      assert.equal(row.company, `Company ${i}, Inc.`);
      assert.equal(row.founded, 1900 + (i % 100), 'CSV text is converted to the column type');
      assert.equal(row.hq, `HQ of Company ${i}, Inc.`, 'each run wrote its own input\'s row');
      assert.equal(row._run.status, 'completed');
      assert.match(row._run.task_id, /^tsk_/);
      assert.deepEqual(row._sources, []);
    });
    assert.equal(new Set(page.body.rows.map((r: Json) => r._run.task_id)).size, 300, 'one task per input');

    const second = await h.request('GET', `/group/${group.group_id}/rows?limit=10&offset=295`);
    assert.deepEqual(second.body.rows.map((r: Json) => r._input), [295, 296, 297, 298, 299]);

    const csv = await h.request('GET', `/group/${group.group_id}/rows?format=csv`);
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type')!, /text\/csv/);
    const csvLines = csv.text.trim().split('\r\n');
    assert.equal(csvLines[0], '_input,company,founded,hq,note,_sources,_task_id,_run_status');
    assert.equal(csvLines.length, 301);
    assert.match(csvLines[1]!, /^0,"Company 0, Inc.",1900,"HQ of Company 0, Inc.",,,tsk_\w+,completed$/);
    const jsonl = await h.request('GET', `/group/${group.group_id}/rows?format=jsonl`);
    assert.equal(jsonl.text.trim().split('\n').length, 300);

    // A run is an ordinary task: it carries its group and input, and is listed only with ?group_id=.
    const run = await h.request('GET', `/task/${page.body.rows[7]._run.task_id}`);
    assert.equal(run.body.group_id, group.group_id);
    assert.equal(run.body.input_index, 7);
    assert.deepEqual(run.body.input, { company: 'Company 7, Inc.', founded: 1907 });
    const singles = await h.request('GET', '/task?limit=200');
    assert.ok(!singles.body.some((t: Json) => t.group_id), 'runs are hidden from GET /task');
    const runs = await h.request('GET', `/task?limit=200&group_id=${group.group_id}`);
    assert.equal(runs.body.length, 200);
    assert.ok(runs.body.every((t: Json) => t.group_id === group.group_id));
    assert.match(runs.headers.get('link')!, new RegExp(`group_id=${group.group_id}`));
  });

  it('counts a repeated _key as a duplicate and never runs it twice, across requests', async () => {
    behaviour = writeOneRow;
    const created = await h.request('POST', '/group', {
      body: { task: SPEC, inputs: [{ _key: 'a', company: 'Acme' }, { _key: 'b', company: 'Bolt' }, { _key: 'a', company: 'Acme again' }] },
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.inputs, 3);
    assert.equal(created.body.duplicates, 1);
    const added = await h.request('POST', `/group/${created.body.group_id}/inputs`, { body: { inputs: [{ _key: 'b', company: 'Bolt' }, { _key: 'c', company: 'Cog' }] } });
    assert.equal(added.status, 200, added.text);
    assert.equal(added.body.inputs, 5);
    assert.equal(added.body.duplicates, 2);
    const group = await waitGroup(h, created.body.group_id, settled);
    assert.equal(group.counts.completed, 3);
    const rows = (await h.request('GET', `/group/${group.group_id}/rows`)).body.rows;
    assert.deepEqual(rows.map((r: Json) => [r._input, r.company]), [[0, 'Acme'], [1, 'Bolt'], [4, 'Cog']]);
  });

  it('an Idempotency-Key makes a create happen once: twenty at once leave one group', async () => {
    behaviour = writeOneRow;
    const key = `group-${uid()}`;
    const body = { name: `once ${key}`, task: SPEC, inputs: [{ company: 'Once' }] };
    const answers = await Promise.all(Array.from({ length: 20 }, () => h.request('POST', '/group', { body, headers: { 'idempotency-key': key } })));
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200], answers.map((a) => a.text).join('\n'));
    assert.equal(new Set(answers.map((a) => a.body.group_id)).size, 1, 'every answer names the one group');
    assert.equal(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length, 19);
    const listed = (await h.request('GET', '/group?limit=200')).body.filter((g: Json) => g.name === body.name);
    assert.equal(listed.length, 1);
    const reused = await h.request('POST', '/group', { body: { ...body, max_parallel: 2 }, headers: { 'idempotency-key': key } });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.param, 'Idempotency-Key');
    await waitGroup(h, answers[0]!.body.group_id, settled);
  });

  it('refuses bad inputs with their index and column, and stores nothing', async () => {
    const before = (await h.request('GET', '/group?limit=200')).body.length;
    const bad = await h.request('POST', '/group', { body: { task: SPEC, inputs: [{ company: 'Fine' }, { company: 'Bad', founded: 'long ago' }] } });
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.body.param, 'inputs[1].founded');
    assert.match(bad.body.message, /inputs\[1\].*founded.*integer/);
    const missing = await h.request('POST', '/group', { body: { task: SPEC, inputs: [{ founded: 1999 }] } });
    assert.equal(missing.status, 422);
    assert.equal(missing.body.param, 'inputs[0].company');
    const unknown = await h.request('POST', '/group', { body: { task: SPEC, inputs: [{ company: 'X', ceo: 'Y' }] } });
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.param, 'inputs[0].ceo');

    const csvId = await uploadFile(h, 'bad.csv', 'text/csv', 'company,founded\nGood,1990\nWorse,soon\n');
    const badCsv = await h.request('POST', '/group', { body: { task: SPEC, input_upload_id: csvId } });
    assert.equal(badCsv.status, 422, badCsv.text);
    assert.equal(badCsv.body.param, 'input_upload_id[1].founded');
    assert.match(badCsv.body.message, /record 1 \(line 3\)/);

    const jsonlId = await uploadFile(h, 'bad.jsonl', 'application/x-ndjson', '{"company":"A"}\nnot json\n');
    const badJsonl = await h.request('POST', '/group', { body: { task: SPEC, input_upload_id: jsonlId } });
    assert.equal(badJsonl.status, 422);
    assert.equal(badJsonl.body.param, 'input_upload_id[1]');

    const twoTables = await h.request('POST', '/group', { body: { task: { ...SPEC, outputs: [...SPEC.outputs, { id: 'more', kind: 'table', columns: [{ name: 'x' }] }] }, inputs: [{ company: 'A' }] } });
    assert.equal(twoTables.status, 422);
    assert.equal(twoTables.body.param, 'task.outputs');
    const clash = await h.request('POST', '/group', { body: { task: { ...SPEC, input_columns: [{ name: 'hq' }] }, inputs: [{ hq: 'A' }] } });
    assert.equal(clash.status, 422);
    assert.equal(clash.body.param, 'task.input_columns[0].name');
    const noColumns = await h.request('POST', '/group', { body: { task: { ...SPEC, input_columns: undefined }, inputs: [{ company: 'A' }] } });
    assert.equal(noColumns.body.param, 'task.input_columns');
    const tooMany = await h.request('POST', '/group', { body: { task: SPEC, inputs: Array.from({ length: 1001 }, () => ({ company: 'A' })) } });
    assert.equal(tooMany.status, 422);
    const asTask = await h.request('POST', '/task/start', { body: { task: SPEC } });
    assert.equal(asTask.status, 422);
    assert.equal(asTask.body.param, 'task.input_columns');

    assert.equal((await h.request('GET', '/group?limit=200')).body.length, before, 'no group was stored');
    assert.equal((await h.request('GET', '/group/grp_nope')).status, 404);
    assert.equal((await h.request('GET', '/group/grp_nope')).body.error, 'group_not_found');
  });

  it('starts a single task created during a large group before the group\'s backlog', async () => {
    behaviour = async (input, body) => {
      await new Promise((r) => setTimeout(r, 20));
      return writeOneRow(input, body);
    };
    const created = await h.request('POST', '/group', { body: { task: SPEC, inputs: Array.from({ length: 300 }, (_, i) => ({ company: `Big ${i}` })), max_parallel: 8 } });
    assert.equal(created.status, 200, created.text);
    await waitGroup(h, created.body.group_id, (g) => g.counts.completed >= 16);
    const single = await h.request('POST', '/task', { body: { prompt: `A single question ${uid()}` } });
    assert.equal(single.status, 200, single.text);
    const idle = await h.request('GET', `/task/${single.body.task_id}/state?wait=30`);
    assert.equal(idle.body.active, false, 'the single task finished');
    const group = (await h.request('GET', `/group/${created.body.group_id}`)).body;
    assert.ok(group.counts.pending > 100, `the single task finished while most of the group still waited (pending ${group.counts.pending})`);
    const stopped = await h.request('POST', `/group/${created.body.group_id}/stop`);
    assert.equal(stopped.status, 200);
  });

  it('stops what is pending once max_credits is spent', async (t) => {
    behaviour = writeOneRow;
    const account = await h.request('POST', '/admin/accounts', { key: 'admin-secret-for-tests', body: { name: `budget ${uid()}`, credits: 1000 } });
    const key = account.body.api_key;
    // Every model call costs credits at the default prices; a tiny cap is reached by the first runs.
    const created = await h.request('POST', '/group', { key, body: { task: SPEC, inputs: Array.from({ length: 40 }, (_, i) => ({ company: `Cap ${i}` })), max_parallel: 2, max_credits: 0.000001 } });
    assert.equal(created.status, 200, created.text);
    const group = await waitGroup(h, created.body.group_id, settled, 60_000, key);
    t.diagnostic(`counts ${JSON.stringify(group.counts)}, credits_used ${group.credits_used}`);
    assert.equal(group.status, 'finished');
    assert.ok(group.credits_used >= 0.000001);
    const ran = group.counts.completed + group.counts.failed;
    assert.ok(ran >= 1 && ran <= 4, 'only the runs started before the cap was reached ran (cut off mid-way once it was: failed)');
    assert.equal(group.counts.stopped, 40 - ran);
  });

  it('stops a running group, and retries failed runs as new runs', async () => {
    const release = new Set<number>();
    behaviour = async (input, body) => {
      if (input.values.company.startsWith('Fail')) return { status: 400, errorMessage: 'this input breaks the model' };
      await until('release', () => release.has(input.index) || input.values.company.startsWith('Quick'), { timeoutMs: 30_000 });
      return writeOneRow(input, body);
    };
    const created = await h.request('POST', '/group', {
      body: { task: SPEC, inputs: [{ company: 'Fail A' }, { company: 'Quick B' }, { company: 'Fail C' }, { company: 'Quick D' }], max_parallel: 2 },
    });
    let group = await waitGroup(h, created.body.group_id, settled);
    assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 2, failed: 2, stopped: 0 });
    const firstTry = (await h.request('GET', `/task?group_id=${group.group_id}`)).body.length;

    behaviour = writeOneRow;
    const retried = await h.request('POST', `/group/${group.group_id}/retry`);
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.body.status, 'running');
    group = await waitGroup(h, group.group_id, settled);
    assert.deepEqual(group.counts, { pending: 0, running: 0, completed: 4, failed: 0, stopped: 0 });
    assert.equal((await h.request('GET', `/task?group_id=${group.group_id}`)).body.length, firstTry + 2, 'each retry is a new run');
    const rows = (await h.request('GET', `/group/${group.group_id}/rows`)).body.rows;
    assert.deepEqual(rows.map((r: Json) => r._input), [0, 1, 2, 3]);
    const stopFinished = await h.request('POST', `/group/${group.group_id}/stop`);
    assert.equal(stopFinished.body.status, 'finished', 'stopping a group with nothing left to run changes nothing');

    // Stop: two runs hang at the model, the rest wait; stop ends both kinds.
    behaviour = async (input, body) => {
      await until('release', () => release.has(input.index), { timeoutMs: 30_000 }).catch(() => {});
      return writeOneRow(input, body);
    };
    const slow = await h.request('POST', '/group', { body: { task: SPEC, inputs: Array.from({ length: 10 }, (_, i) => ({ company: `Slow ${i}` })), max_parallel: 2 } });
    await until('two runs at the model', () => inFlight >= 2, { timeoutMs: 10_000 });
    const stopped = await h.request('POST', `/group/${slow.body.group_id}/stop`);
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.status, 'stopped');
    assert.deepEqual(stopped.body.counts, { pending: 0, running: 0, completed: 0, failed: 0, stopped: 10 });
    for (let i = 0; i < 10; i++) release.add(i);
  });

  it('streams run events and done, and resumes with Last-Event-ID over the group\'s whole life', async () => {
    behaviour = writeOneRow;
    const created = await h.request('POST', '/group', { body: { task: SPEC, inputs: [{ company: 'S1' }, { company: 'S2' }, { company: 'S3' }], max_parallel: 1 } });
    const stream = await readSse(h.url, `/group/${created.body.group_id}/stream`, { key: h.key }, 30_000);
    const { events } = stream;
    assert.ok(stream.completed, 'the stream ended at done');
    const types = events.map((e) => e.event);
    assert.equal(types[0], 'group');
    assert.equal(events[0]!.json.reason, 'created');
    const runs = events.filter((e) => e.event === 'run').map((e) => e.json);
    assert.deepEqual(runs.filter((r) => r.status === 'running').map((r) => r.input), [0, 1, 2]);
    assert.deepEqual(runs.filter((r) => r.status === 'completed').map((r) => r.input).sort(), [0, 1, 2]);
    const done = events.at(-1)!.json;
    assert.equal(events.at(-1)!.event, 'done');
    assert.equal(done.group.status, 'finished');
    const ids = events.map((e) => Number(e.id));
    assert.deepEqual(ids, ids.map((_, i) => i + 1), 'gap-free sequence numbers');

    // Resume from the middle: the rest, once, then the stream ends at done.
    const resumed = await readSse(h.url, `/group/${created.body.group_id}/stream`, { key: h.key, headers: { 'last-event-id': '3' } });
    assert.deepEqual(resumed.events.map((e) => Number(e.id)), ids.slice(3));
    // Nothing new after done: 204, by either resume point.
    const none = await h.request('GET', `/group/${created.body.group_id}/stream`, { headers: { 'last-event-id': String(ids.at(-1)) } });
    assert.equal(none.status, 204);
    assert.equal((await h.request('GET', `/group/${created.body.group_id}/stream?after=${ids.at(-1)}`)).status, 204);
    const tooFar = await h.request('GET', `/group/${created.body.group_id}/stream`, { headers: { 'last-event-id': '99999999999' } });
    assert.equal(tooFar.status, 422);
    assert.equal(tooFar.body.param, 'Last-Event-ID');

    // Inputs that were all duplicates leave the group idle after its done: the stream still ends.
    await h.request('POST', `/group/${created.body.group_id}/inputs`, { body: { inputs: [{ company: 'S1', _key: 'k' }] } });
    await waitGroup(h, created.body.group_id, settled);
    const allDuplicates = await h.request('POST', `/group/${created.body.group_id}/inputs`, { body: { inputs: [{ company: 'S1', _key: 'k' }] } });
    assert.equal(allDuplicates.body.duplicates, 1);
    assert.equal(allDuplicates.body.status, 'finished');
    const idleAgain = await readSse(h.url, `/group/${created.body.group_id}/stream`, { key: h.key }, 10_000);
    assert.ok(idleAgain.completed, 'an idle group\'s stream ends at its last event');

    // More inputs later: the group runs again, and its stream goes on past the earlier done.
    await h.request('POST', `/group/${created.body.group_id}/inputs`, { body: { inputs: [{ company: 'S4' }] } });
    const again = await readSse(h.url, `/group/${created.body.group_id}/stream`, { key: h.key });
    const dones = again.events.filter((e) => e.event === 'done');
    assert.equal(dones.length, 3, 'the stream went past the earlier dones to the last');
    assert.equal(dones.at(-1)!.json.group.counts.completed, 5);
  });

  it('lists groups newest first with a cursor', async () => {
    const page1 = await h.request('GET', '/group?limit=2');
    assert.equal(page1.status, 200);
    assert.equal(page1.body.length, 2);
    const cursor = page1.headers.get('x-next-cursor')!;
    assert.ok(cursor);
    const page2 = await h.request('GET', `/group?limit=2&cursor=${cursor}`);
    assert.ok(page2.body.every((g: Json) => g.group_id < page1.body[1].group_id));
    // A cursor is a group id this server issued: anything else would start a page anywhere.
    for (const bad of ['zzz', 'grp_1', 'tsk_01M88GN8AZ0HKC907QD2AZB9JF']) {
      const res = await h.request('GET', `/group?cursor=${encodeURIComponent(bad)}`);
      assert.equal(res.status, 422, `${bad}: ${res.text}`);
      assert.equal(res.body.param, 'cursor', res.text);
    }
  });
});
