/**
 * Cell-level support (decisions §17.1) through the real HTTP API: a scripted fake model fetches a
 * page from a loopback web server and writes rows whose values the page's quotes hold, or do not,
 * written another way than the page writes them. The tests read what a user sees: each source's
 * `supports`, each row's `_support`, the output listing's cell counts, `citation_accuracy` on the
 * Task body and the `done` event, what the model was told, `citations: "require_supported"`, and
 * `POST /task/{task_id}/recheck`. With QUARRY_TEST_STORE=postgres they run on PostgreSQL.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { FakeReply, FakeRequestBody } from '../kit/fake-openai-server.js';
import { startLoopbackServer, type LoopbackServer } from '../kit/loopback-server.js';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import { taskEvents } from '../kit/task-api.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
type Json = any;

/** The page: its figures written as a page writes them, with typographic marks and accents. */
const PAGE = [
  '<!doctype html><html><head><meta charset="utf-8"><title>Hornsea 2</title></head><body><main><article>',
  '<p>Ørsted’s Hornsea\u00a02 wind farm — 1,386\u00a0MW of capacity — went into full operation on 31 August 2022.</p>',
  '<p>It produced 5,2 TWh in 2023, enough for about 1.3 million homes, at a cost of £3.36bn.</p>',
  '</article></main></body></html>',
].join('\n');
/** The page's sentences as a model types them: plain apostrophe, dashes and spaces. */
const CAPACITY_QUOTE = "Ørsted's Hornsea 2 wind farm - 1,386 MW of capacity - went into full operation on 31 August 2022.";
const OUTPUT_QUOTE = 'It produced 5,2 TWh in 2023, enough for about 1.3 million homes, at a cost of £3.36bn.';

const COLUMNS = [
  { name: 'farm', type: 'string', required: true },
  { name: 'operator', type: 'string' },
  { name: 'capacity_mw', type: 'number' },
  { name: 'homes', type: 'integer' },
  { name: 'twh_2023', type: 'number' },
  { name: 'opened', type: 'date' },
  { name: 'offshore', type: 'boolean' },
];
const TABLE = { id: 'farms', kind: 'table', columns: COLUMNS };

type Step = FakeReply | ((body: FakeRequestBody) => FakeReply);

function call(name: string, args: unknown): FakeReply {
  return { toolCalls: [{ name, arguments: args }] };
}

/** The tool messages of one request, in order. */
function toolMessages(body: FakeRequestBody | undefined): string[] {
  assert.ok(body, 'the model was asked again after the tool call');
  return (body.messages ?? []).filter((m) => m.role === 'tool').map((m) => String(m.content));
}

describe('cell support through the API', () => {
  let h: Harness;
  let web: LoopbackServer;
  let pageHits = 0;
  /** Per case marker: the replies in order, and every request of it. */
  const scripts = new Map<string, { steps: Step[]; requests: FakeRequestBody[] }>();
  let next = 0;

  before(async () => {
    web = await startLoopbackServer((_req: IncomingMessage, res: ServerResponse) => {
      pageHits++;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGE);
    });
    h = await startHarness({ env: { QUARRY_FETCH_ALLOW_PRIVATE: '1' } });
    h.model!.setResponder((body) => {
      const first = String((body.messages ?? []).find((m) => m.role === 'user')?.content ?? '');
      const script = scripts.get(/\[case:(\w+)\]/.exec(first)?.[1] ?? '');
      if (!script) return { text: 'No script for this task.' };
      script.requests.push(body);
      const step = script.steps[(body.messages ?? []).filter((m) => m.role === 'assistant').length] ?? { text: 'Done.' };
      return typeof step === 'function' ? step(body) : step;
    });
  });
  after(async () => {
    await h.close();
    await web.close();
  });

  const page = () => `${web.url}/hornsea.html`;

  async function run(task: Json, steps: Step[]): Promise<{ taskId: string; requests: FakeRequestBody[] }> {
    const id = `c${++next}`;
    const script = { steps, requests: [] as FakeRequestBody[] };
    scripts.set(id, script);
    const res = await h.request('POST', '/task/start', { body: { task: { ...task, prompt: `[case:${id}] Collect the wind farms.` } } });
    assert.equal(res.status, 200, res.text);
    await waitIdle(h, res.body.task_id, 20_000);
    return { taskId: res.body.task_id, requests: script.requests };
  }

  async function rowsOf(taskId: string): Promise<Json[]> {
    const res = await h.request('GET', `/task/${taskId}/outputs/farms?limit=100`);
    assert.equal(res.status, 200, res.text);
    return res.body.rows;
  }

  const RIGHT = { farm: 'Hornsea 2', operator: 'Orsted', capacity_mw: 1386, homes: 1_300_000, twh_2023: 5.2, opened: '2022-08-31', offshore: true };
  const WRONG = { farm: 'Hornsea 3', operator: 'Vattenfall', capacity_mw: 1368, homes: 1_200_000, twh_2023: 52, opened: '2022-08-30', offshore: true };
  const sources = [{ url: '', quote: CAPACITY_QUOTE }, { url: '', quote: OUTPUT_QUOTE }];
  const cite = () => sources.map((s) => ({ ...s, url: page() }));

  describe('rows with right and wrong values, flagged', () => {
    let ran: { taskId: string; requests: FakeRequestBody[] };
    let rows: Json[];

    before(async () => {
      ran = await run({ outputs: [TABLE] }, [
        call('fetch_url', { url: page() }),
        () => call('write_rows', {
          output: 'farms',
          rows: [
            { ...RIGHT, _sources: cite() },
            { ...WRONG, _sources: cite() },
            // One source backing one column: the others are checked by nothing.
            { farm: 'Hornsea 2', capacity_mw: 1386, homes: 1_300_000, _sources: [{ url: page(), quote: CAPACITY_QUOTE, fields: ['capacity_mw'] }] },
            // No quote: the page was read, no cell is checked.
            { farm: 'Hornsea 2', capacity_mw: 1386, _sources: [{ url: page() }] },
          ],
        }),
        { text: 'Done.' },
      ]);
      rows = await rowsOf(ran.taskId);
    });

    it('each quote_found source says, per column, whether its quote holds the value; booleans are null', () => {
      assert.equal(rows.length, 4);
      assert.deepEqual(rows[0]._sources.map((s: Json) => s.supports), [
        { farm: true, operator: true, capacity_mw: true, homes: false, twh_2023: false, opened: true, offshore: null },
        { farm: false, operator: false, capacity_mw: false, homes: true, twh_2023: true, opened: false, offshore: null },
      ]);
      assert.deepEqual(rows[2]._sources[0].supports, { capacity_mw: true });
      assert.equal(rows[3]._sources[0].check, 'page_read');
      assert.equal(rows[3]._sources[0].supports, undefined);
    });

    it('_support: supported when any source holds the value, unsupported when checked and none does, unchecked otherwise', () => {
      assert.deepEqual(rows[0]._support, { farm: 'supported', operator: 'supported', capacity_mw: 'supported', homes: 'supported', twh_2023: 'supported', opened: 'supported', offshore: 'unchecked' });
      assert.deepEqual(rows[1]._support, { farm: 'unsupported', operator: 'unsupported', capacity_mw: 'unsupported', homes: 'unsupported', twh_2023: 'unsupported', opened: 'unsupported', offshore: 'unchecked' });
      assert.deepEqual(rows[2]._support, { farm: 'unchecked', capacity_mw: 'supported', homes: 'unchecked' });
      assert.deepEqual(rows[3]._support, { farm: 'unchecked', capacity_mw: 'unchecked' });
    });

    it('the listing counts cells; the Task body and the done event carry citation_accuracy', async () => {
      const listing = (await h.request('GET', `/task/${ran.taskId}/outputs`)).body.outputs[0];
      assert.deepEqual([listing.supported_cells, listing.unsupported_cells, listing.unchecked_cells], [7, 6, 6]);
      const task = (await h.request('GET', `/task/${ran.taskId}`)).body;
      assert.equal(task.citation_accuracy, 0.5385);
      const done = (await taskEvents(h, ran.taskId)).filter((e) => e.type === 'done');
      assert.equal(done.at(-1).citation_accuracy, 0.5385);
    });

    it('the model is told which values its quotes do not hold', () => {
      const told = toolMessages(ran.requests[2]).at(-1)!;
      assert.match(told, /^Wrote 4 rows to farms/);
      assert.ok(told.includes(`- row 2, column homes: the value 1200000 is not in source 1 (${page()}) quote ${JSON.stringify(CAPACITY_QUOTE)}, nor in source 2 (${page()}) quote ${JSON.stringify(OUTPUT_QUOTE)}`), told);
      assert.ok(told.includes('- row 2, column opened: the value "2022-08-30" is not in'), told);
      assert.ok(!told.includes('row 1,'), 'row 1 is fully supported');
    });

    it('recheck checks every row again against the snapshots: nothing fetched, nothing changed, twice', async () => {
      const hits = pageHits;
      const before = await rowsOf(ran.taskId);
      const first = await h.request('POST', `/task/${ran.taskId}/recheck`);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(first.body, { rows: 4, changed: 0 });
      const second = await h.request('POST', `/task/${ran.taskId}/recheck`, { body: {} });
      assert.deepEqual(second.body, { rows: 4, changed: 0 });
      assert.deepEqual(await rowsOf(ran.taskId), before);
      assert.equal(pageHits, hits, 'the page was not fetched again');
    });
  });

  it('recheck brings a row stored without cell checks up to date, once, and sets the counts', async () => {
    const ran = await run({ outputs: [TABLE] }, [
      call('fetch_url', { url: page() }),
      () => call('write_rows', { output: 'farms', rows: [{ ...RIGHT, _sources: cite() }, { ...WRONG, _sources: cite() }] }),
      { text: 'Done.' },
    ]);
    const checked = await rowsOf(ran.taskId);
    // As a row written before cells were checked is stored: no supports, no _support, no counts.
    const { store } = h.quarry;
    const old = checked.map((r) => JSON.stringify({ ...r, _sources: r._sources.map(({ supports: _s, ...s }: Json) => s), _support: undefined }));
    await store.rows.rewrite(ran.taskId, 'farms', old.map((data, i) => ({ rowNumber: i + 1, data })), { verified: 2, cells: { supported: 0, unsupported: 0, unchecked: 0 } });
    await store.tasks.update(ran.taskId, { supportedCells: 0, unsupportedCells: 0 });
    assert.equal((await rowsOf(ran.taskId))[0]._support, undefined);
    assert.equal((await h.request('GET', `/task/${ran.taskId}`)).body.citation_accuracy, null);

    const hits = pageHits;
    const first = await h.request('POST', `/task/${ran.taskId}/recheck`);
    assert.deepEqual(first.body, { rows: 2, changed: 2 });
    assert.deepEqual(await rowsOf(ran.taskId), checked);
    const listing = (await h.request('GET', `/task/${ran.taskId}/outputs`)).body.outputs[0];
    assert.deepEqual([listing.verified_rows, listing.supported_cells, listing.unsupported_cells, listing.unchecked_cells], [2, 6, 6, 2]);
    assert.equal((await h.request('GET', `/task/${ran.taskId}`)).body.citation_accuracy, 0.5);
    assert.deepEqual((await h.request('POST', `/task/${ran.taskId}/recheck`)).body, { rows: 2, changed: 0 });
    assert.equal(pageHits, hits, 'nothing was fetched');
  });

  it('recheck of an unknown task is 404 task_not_found; of a task with no rows, {rows: 0, changed: 0}', async () => {
    const unknown = await h.request('POST', '/task/tsk_doesnotexist/recheck');
    assert.equal(unknown.status, 404, unknown.text);
    assert.equal(unknown.body.error, 'task_not_found');
    const empty = await h.request('POST', '/task/start', { body: { task: { prompt: 'Nothing yet.', outputs: [TABLE] } } });
    await waitIdle(h, empty.body.task_id, 20_000);
    const res = await h.request('POST', `/task/${empty.body.task_id}/recheck`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { rows: 0, changed: 0 });
    assert.equal((await h.request('GET', `/task/${empty.body.task_id}`)).body.citation_accuracy, null);
  });

  it('citations: require_supported refuses a row with an unsupported cell, naming row, column, value, source and quote; the repaired row is stored', async () => {
    const ran = await run({ outputs: [TABLE], citations: 'require_supported' }, [
      call('fetch_url', { url: page() }),
      () => call('write_rows', { output: 'farms', rows: [{ farm: 'Hornsea 2', capacity_mw: 1368, opened: '2022-08-31' }], sources: [{ url: page(), quote: CAPACITY_QUOTE }] }),
      () => call('write_rows', { output: 'farms', rows: [{ farm: 'Hornsea 2', capacity_mw: 1386, opened: '2022-08-31' }], sources: [{ url: page(), quote: CAPACITY_QUOTE }] }),
      { text: 'Done.' },
    ]);
    const refused = toolMessages(ran.requests[2]).at(-1)!;
    assert.match(refused, /^No rows were written; fix these and call again:/);
    assert.ok(refused.includes(`- row 1, column capacity_mw: the value 1368 is not in source 1 (${page()}) quote ${JSON.stringify(CAPACITY_QUOTE)}`), refused);
    assert.ok(!refused.includes('column opened'), '2022-08-31 is the date the quote writes as 31 August 2022');
    assert.match(refused, /requires every value a quote is checked for to appear in that quote/);
    assert.match(toolMessages(ran.requests[3]).at(-1)!, /^Wrote 1 rows to farms/);
    const rows = await rowsOf(ran.taskId);
    assert.equal(rows.length, 1, 'nothing of the refused call was stored');
    assert.deepEqual(rows[0]._support, { farm: 'supported', capacity_mw: 'supported', opened: 'supported' });
    assert.equal((await h.request('GET', `/task/${ran.taskId}`)).body.citation_accuracy, 1);
  });
});
