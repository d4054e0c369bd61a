/**
 * `client.groups` against a real server with the fake model, over real HTTP: a group made from a
 * local CSV file (uploaded, then created), its merged rows iterated over several pages and
 * exported, its stream read to `done`, cut in the middle and resumed with Last-Event-ID, and
 * resumed by hand with `lastEventId`; groups listed by cursor; a create whose answer was lost,
 * resent under its Idempotency-Key; inputs added from a JSON Lines file; stop and retry; a
 * group's runs listed with `tasks.list({ group_id })`; the errors.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_KEY, startHarness, type Harness } from '../kit/harness.js';
import { until } from '../kit/bounded-waits.js';
import { fakeModel, uid, userText } from '../kit/task-api.js';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';
import type { GroupEvent as ContractGroupEvent } from '../../src/contract/index.js';
import {
  NotFoundError, QuarryClient, ValidationError, type Fetch, type GroupDetail, type GroupEvent, type GroupRow,
} from '../../packages/client/src/index.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

// The client's group events are written by hand (the stream's schema is not in the OpenAPI
// document): they must stay the contract's, member for member, both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const eventsMatchContract: Same<GroupEvent, ContractGroupEvent> = true;
void eventsMatchContract;

const SPEC = {
  name: 'Company facts',
  prompt: 'For each company, find its headquarters city.',
  input_columns: [{ name: 'company', type: 'string' as const, required: true }, { name: 'founded', type: 'integer' as const }],
  outputs: [{ id: 'facts', kind: 'table' as const, columns: [{ name: 'hq', type: 'string' as const }] }],
};

/** The input a run's turn was given, read back from the message the model got. */
function inputOf(body: FakeRequestBody): { index: number; values: Json } | null {
  const m = /Input (\d+):\n(\{.*\})/.exec(userText(body));
  return m ? { index: Number(m[1]), values: JSON.parse(m[2]!) } : null;
}

const step = (body: FakeRequestBody) => (body.messages ?? []).filter((m) => m.role === 'assistant').length;

/** A run writes one row naming its input, then ends; an input whose company starts with "Fail" breaks the model while `failing` holds. */
function reply(input: { values: Json }, body: FakeRequestBody, failing: boolean): FakeReply {
  if (failing && String(input.values.company).startsWith('Fail')) return { status: 400, errorMessage: 'this input breaks the model' };
  return step(body) === 0 ? { toolCalls: [{ name: 'write_rows', arguments: { output: 'facts', rows: [{ hq: `HQ of ${input.values.company}` }] } }] } : { text: 'Done.' };
}

describe('client.groups', () => {
  let h: Harness;
  let tmp: string;
  let failing = true;
  /** Inputs whose runs wait at the model until released (for stop). */
  const held = new Set<string>();

  /** A client of a new account of its own, so lists hold only what the test made. */
  async function newClient(fetch?: Fetch): Promise<QuarryClient> {
    const admin = new QuarryClient({ baseURL: h.url, adminKey: ADMIN_KEY });
    const { api_key } = await admin.admin.accounts.create({ name: `groups-${uid()}`, credits: 100 });
    return new QuarryClient({ baseURL: h.url, apiKey: api_key, retryBaseDelayMs: 50, fetch });
  }

  function writeFile(name: string, text: string): string {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, text);
    return file;
  }

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-groups-client-'));
    h = await startHarness({ listen: true, env: { QUARRY_RATE_LIMIT_PER_MIN: '1000000', QUARRY_MAX_CONCURRENT_TURNS: '16' } });
    fakeModel(h).setResponder(async (body) => {
      const input = inputOf(body);
      if (!input) return { text: 'Not a group run.' };
      if (held.has(input.values.company)) await until(`${input.values.company} released`, () => !held.has(input.values.company), { timeoutMs: 30_000 }).catch(() => {});
      return reply(input, body, failing);
    });
  });
  after(async () => {
    held.clear();
    await h?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('creates a group from a CSV file, streams it to done, iterates every merged row over pages, and exports them', async () => {
    const requests: URL[] = [];
    const client = await newClient((input, init) => {
      requests.push(new URL(input));
      return fetch(input, init);
    });
    const lines = ['company,founded', ...Array.from({ length: 250 }, (_, i) => `"Company ${i}, Inc.",${1900 + (i % 100)}`)];
    const file = writeFile('companies.csv', `${lines.join('\n')}\n`);
    const created = await client.groups.createFromFile(file, { task: SPEC, name: 'from a file', max_parallel: 8, max_credits: 50 });
    assert.match(created.group_id, /^grp_/);
    assert.equal(created.name, 'from a file');
    assert.equal(created.inputs, 250);
    assert.equal(created.max_parallel, 8);
    assert.equal(created.max_credits, 50);
    assert.deepEqual(created.spec.input_columns?.map((c) => c.name), ['company', 'founded']);
    // Uploaded first (a signed URL, then the PUT), then created from the upload.
    assert.deepEqual(requests.map((u) => u.pathname.replace(/upl_\w+/, 'upl_*')), ['/upload-url', '/upload/upl_*', '/group']);

    const stream = client.groups.stream(created.group_id);
    const events: GroupEvent[] = [];
    for await (const event of stream) events.push(event);
    assert.equal(events[0]!.type, 'group');
    assert.equal(events.at(-1)!.type, 'done');
    assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1), 'every event once, in order');
    assert.equal(stream.lastEventId, events.length);
    const runs = events.filter((e) => e.type === 'run');
    assert.equal(runs.filter((e) => e.status === 'completed').length, 250);
    const done = events.at(-1)!;
    assert.ok(done.type === 'done');
    assert.equal(done.group.status, 'finished');
    assert.deepEqual(done.group.counts, { pending: 0, running: 0, completed: 250, failed: 0, stopped: 0 });

    // Every merged row, 100 a page: three requests.
    requests.length = 0;
    const rows: GroupRow[] = [];
    for await (const row of client.groups.iterateRows(created.group_id, { pageSize: 100 })) rows.push(row);
    assert.equal(rows.length, 250);
    rows.forEach((row, i) => {
      assert.equal(row._input, i);
      assert.equal(row.company, `Company ${i}, Inc.`);
      assert.equal(row.founded, 1900 + (i % 100));
      assert.equal(row.hq, `HQ of Company ${i}, Inc.`);
      assert.equal(row._run.status, 'completed');
    });
    assert.deepEqual(requests.map((u) => [u.pathname, u.searchParams.get('limit'), u.searchParams.get('offset')]), [
      [`/group/${created.group_id}/rows`, '100', '0'],
      [`/group/${created.group_id}/rows`, '100', '100'],
      [`/group/${created.group_id}/rows`, '100', '200'],
    ]);
    const first = await client.groups.iterateRows(created.group_id, { pageSize: 100, offset: 200 });
    assert.equal(first.total, 250);
    assert.equal(first.offset, 200);
    assert.equal(first.data.length, 50);
    assert.equal(first.hasNextPage(), false);

    const page = await client.groups.rows(created.group_id, { limit: 10, offset: 245 });
    assert.equal(page.total, 250);
    assert.deepEqual(page.rows.map((r) => r._input), [245, 246, 247, 248, 249]);

    const csv = await client.groups.export(created.group_id, 'csv');
    assert.equal(csv.filename, `${created.group_id}.csv`);
    const csvLines: string[] = [];
    for await (const line of csv.lines()) csvLines.push(line);
    assert.equal(csvLines[0], '_input,company,founded,hq,_sources,_task_id,_run_status');
    assert.equal(csvLines.length, 251);
    assert.match(csvLines[1]!, /^0,"Company 0, Inc.",1900,"HQ of Company 0, Inc.",,tsk_\w+,completed$/);
    const jsonl = await (await client.groups.export(created.group_id, 'jsonl')).text();
    assert.deepEqual(jsonl.trim().split('\n').map((l) => JSON.parse(l)._input), rows.map((r) => r._input));

    // The runs are tasks of the group, listed only with its id.
    const listed: string[] = [];
    for await (const run of client.tasks.list({ group_id: created.group_id, limit: 200 })) listed.push(run.task_id);
    assert.equal(listed.length, 250);
    assert.deepEqual(new Set(listed), new Set(rows.map((r) => r._run.task_id)));
    const singles = await client.tasks.list({ limit: 200 });
    assert.equal(singles.data.length, 0, 'runs are hidden from the plain task list');
  });

  it('resumes a cut stream with Last-Event-ID, and a later stream from lastEventId', async () => {
    let cut = true;
    const lastEventIds: (string | null)[] = [];
    // Cuts the first stream connection right after its third event.
    const client = await newClient(async (input, init) => {
      const res = await fetch(input, init);
      if (!new URL(input).pathname.endsWith('/stream')) return res;
      lastEventIds.push(new Headers(init.headers).get('last-event-id'));
      if (!cut || !res.body) return res;
      cut = false;
      return new Response(cutAfterFrames(res.body, 3), { status: res.status, headers: res.headers });
    });
    const group = await client.groups.create({ task: SPEC, inputs: [{ company: 'S1' }, { company: 'S2' }, { company: 'S3' }], max_parallel: 1 });
    const stream = client.groups.stream(group.group_id);
    const seqs: number[] = [];
    for await (const event of stream) seqs.push(event.seq);
    assert.equal(stream.reconnects, 1);
    assert.deepEqual(lastEventIds, [null, '3'], 'the reconnect resumed after the third event');
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'each event once, none missed');

    const rest: number[] = [];
    for await (const event of client.groups.stream(group.group_id, { lastEventId: 4 })) rest.push(event.seq);
    assert.deepEqual(rest, seqs.slice(4));
    // Nothing after the last event of a group with nothing to run: the stream ends at once (204).
    const none = client.groups.stream(group.group_id, { lastEventId: seqs.at(-1)! });
    assert.equal(await none.finalDone(), undefined);

    // More inputs: the group runs again, and its stream goes past the earlier done to the next.
    await client.groups.addInputs(group.group_id, { inputs: [{ company: 'S4' }] });
    const again = await client.groups.stream(group.group_id, { lastEventId: seqs.at(-1)! }).finalDone();
    assert.equal(again?.group.counts.completed, 4);
  });

  it('lists groups newest first, page by page', async () => {
    const client = await newClient();
    const made: GroupDetail[] = [];
    for (const name of ['one', 'two', 'three']) made.push(await client.groups.create({ name, task: SPEC, inputs: [{ company: name }] }));
    const all: string[] = [];
    for await (const group of client.groups.list({ limit: 2 })) all.push(group.group_id);
    assert.deepEqual(all, made.map((g) => g.group_id).reverse());
    const page = await client.groups.list({ limit: 2 });
    assert.deepEqual(page.data.map((g) => g.name), ['three', 'two']);
    assert.equal(page.nextCursor, made[1]!.group_id);
    const last = await page.getNextPage();
    assert.deepEqual(last.data.map((g) => g.name), ['one']);
    assert.equal(last.hasNextPage(), false);
  });

  it('resends a create whose answer was lost under the same Idempotency-Key: one group', async () => {
    const keys: (string | null)[] = [];
    let lose = true;
    const client = await newClient(async (input, init) => {
      const res = await fetch(input, init);
      if (new URL(input).pathname !== '/group' || init.method !== 'POST') return res;
      keys.push(new Headers(init.headers).get('idempotency-key'));
      if (!lose) return res;
      // The group was made; its answer never arrives.
      lose = false;
      await res.body?.cancel();
      throw new TypeError('fetch failed');
    });
    const group = await client.groups.create({ name: 'once', task: SPEC, inputs: [{ company: 'Once' }] });
    assert.equal(keys.length, 2);
    assert.match(keys[0]!, /^idem_/);
    assert.equal(keys[1], keys[0], 'the resend carried the same key');
    const all = [];
    for await (const g of client.groups.list()) all.push(g.group_id);
    assert.deepEqual(all, [group.group_id], 'the resend replayed the first create');
  });

  it('retries failed runs, adds inputs from a JSON Lines file, and stops a running group', async () => {
    const client = await newClient();
    failing = true;
    const group = await client.groups.create({ task: SPEC, inputs: [{ company: 'Fail A' }, { company: 'Fine B' }, { company: 'Fail C' }], max_parallel: 2 });
    let done = await client.groups.stream(group.group_id).finalDone();
    assert.deepEqual(done?.group.counts, { pending: 0, running: 0, completed: 1, failed: 2, stopped: 0 });
    const failedRuns = [];
    for await (const run of client.groups.runs(group.group_id, { status: 'failed', limit: 1 })) failedRuns.push([run.input_index, run.input.company, run.status, Boolean(run.error?.message)]);
    assert.deepEqual(failedRuns, [[0, 'Fail A', 'failed', true], [2, 'Fail C', 'failed', true]], 'every failed run, page by page');

    failing = false;
    const retried = await client.groups.retry(group.group_id, { include: ['failed', 'stopped'] });
    assert.equal(retried.status, 'running');
    done = await client.groups.stream(group.group_id).finalDone();
    assert.deepEqual(done?.group.counts, { pending: 0, running: 0, completed: 3, failed: 0, stopped: 0 });
    const unchanged = await client.groups.retry(group.group_id);
    assert.equal(unchanged.status, 'finished', 'nothing failed: nothing to retry');

    const more = writeFile('more.jsonl', '{"company":"Fine D","_key":"d"}\n{"company":"Fine E","founded":2001}\n{"company":"Fine D again","_key":"d"}\n');
    const added = await client.groups.addInputsFromFile(group.group_id, more);
    assert.equal(added.inputs, 6);
    assert.equal(added.duplicates, 1);
    done = await client.groups.stream(group.group_id).finalDone();
    assert.equal(done?.group.counts.completed, 5);
    const rows = [];
    for await (const row of client.groups.iterateRows(group.group_id)) rows.push([row._input, row.company]);
    assert.deepEqual(rows, [[0, 'Fail A'], [1, 'Fine B'], [2, 'Fail C'], [3, 'Fine D'], [4, 'Fine E']]);

    for (let i = 0; i < 6; i++) held.add(`Slow ${i}`);
    const slow = await client.groups.create({ task: SPEC, inputs: Array.from({ length: 6 }, (_, i) => ({ company: `Slow ${i}` })), max_parallel: 2 });
    assert.equal(slow.counts.running, 2);
    const stopped = await client.groups.stop(slow.group_id);
    held.clear();
    assert.equal(stopped.status, 'stopped');
    assert.deepEqual(stopped.counts, { pending: 0, running: 0, completed: 0, failed: 0, stopped: 6 });
    assert.equal((await client.groups.stop(slow.group_id)).status, 'stopped', 'a second stop changes nothing');
    assert.equal((await client.groups.stream(slow.group_id).finalDone())?.group.status, 'stopped');
  });

  it('refuses what it cannot run: an unknown group, a bad input file, a file of no known format', async () => {
    const requests: string[] = [];
    const client = await newClient((input, init) => {
      requests.push(new URL(input).pathname);
      return fetch(input, init);
    });
    for (const call of [() => client.groups.get('grp_nope'), () => client.groups.rows('grp_nope'), () => client.groups.stream('grp_nope').finalDone(), () => client.groups.stop('grp_nope')]) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof NotFoundError, String(err));
      assert.equal(err.error, 'group_not_found');
    }

    const bad = writeFile('bad.csv', 'company,founded\nGood,1990\nWorse,soon\n');
    const invalid = await client.groups.createFromFile(bad, { task: SPEC }).then(() => undefined, (e: unknown) => e);
    assert.ok(invalid instanceof ValidationError, String(invalid));
    assert.equal(invalid.param, 'input_upload_id[1].founded');
    assert.equal((await client.groups.list()).data.length, 0, 'no group was made');

    requests.length = 0;
    const unknown = writeFile('companies.txt', 'company\nAcme\n');
    await assert.rejects(client.groups.createFromFile(unknown, { task: SPEC }), /Cannot tell whether .*companies\.txt is CSV or JSON Lines/);
    assert.deepEqual(requests, [], 'nothing was sent');
    const asCsv = await client.groups.createFromFile(unknown, { task: SPEC, format: 'csv' });
    assert.equal(asCsv.inputs, 1);
  });
});

/** A body that passes the first `n` SSE frames with an `id:` through, then fails as a cut connection would. */
function cutAfterFrames(body: ReadableStream<Uint8Array>, n: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let text = '';
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        const frames = text.split('\n\n');
        const stored = frames.slice(0, -1).filter((f) => /^id: /m.test(f));
        if (stored.length >= n) {
          // Up to the end of the n-th stored frame, and nothing after it.
          let end = 0;
          let seen = 0;
          for (const frame of frames.slice(0, -1)) {
            end += frame.length + 2;
            if (/^id: /m.test(frame) && ++seen === n) break;
          }
          controller.enqueue(encoder.encode(text.slice(0, end)));
          await reader.cancel();
          controller.error(new TypeError('terminated'));
          return;
        }
        const chunk = await reader.read();
        if (chunk.done) {
          controller.close();
          return;
        }
        text += decoder.decode(chunk.value, { stream: true });
      }
    },
  });
}
