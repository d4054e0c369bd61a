/**
 * Output routes (interface §2.2, §4.1, decisions §3, §8): pages of rows with total counted
 * before limit, limit/offset, choosing an output, the outputs list, one named output, CSV and
 * JSONL exports, the three output kinds, and which output is the active one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../kit/bounded-waits.js';
import { startHarness, waitIdle, type Harness } from '../kit/harness.js';
import type { FakeReply } from '../kit/fake-openai-server.js';

/* eslint-disable @typescript-eslint/no-explicit-any */

const MAKERS = {
  id: 'makers',
  kind: 'table',
  description: 'one row per plant',
  columns: [
    { name: 'company', type: 'string', required: true },
    { name: 'country', type: 'string' },
    { name: 'capacity_gwh', type: 'number' },
    { name: 'source_url', type: 'url' },
  ],
};
const SUMMARY = { id: 'summary', kind: 'report', path: 'reports/summary.md' };
const FACTS = {
  id: 'facts',
  kind: 'records',
  schema: { type: 'object', properties: { claim: { type: 'string' }, n: { type: 'integer' } }, required: ['claim'] },
};
const BIG = { id: 'big', kind: 'table', columns: [{ name: 'label', type: 'string', required: true }, { name: 'value', type: 'integer' }] };

const MAKER_SOURCES = [{ url: 'https://example.com/makers', title: 'Makers list', quote: 'Acme runs a plant', fields: ['company', 'country'] }];
/**
 * A source as stored: the turns here never fetch a page, so write_rows marks every source it
 * checks as not read in the task (decisions §15.1).
 */
const notRead = <S extends object>(source: S) => ({ ...source, verified: false, check: 'not_read' });
const STORED_MAKER_SOURCES = MAKER_SOURCES.map(notRead);
const makerRow = (i: number) => ({ company: `Maker ${i}`, country: i % 2 ? 'Österreich' : '中国 🏭', capacity_gwh: i * 1.5, source_url: `https://example.com/m/${i}` });
/** A row's `_support` when no source of it was checked against a quote: every value unchecked. */
const unchecked = (values: Record<string, unknown>) => ({ _support: Object.fromEntries(Object.keys(values).map((k) => [k, 'unchecked'])) });
const MAKER_COUNT = 25;
const BIG_COUNT = 3000;

function write(output: string, rows: unknown[], sources?: unknown[]): FakeReply {
  return { toolCalls: [{ name: 'write_rows', arguments: { output, rows, ...(sources ? { sources } : {}) } }] };
}

/** Splits a CSV file into records (RFC 4180: quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else if (c === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

describe('output routes', () => {
  let h: Harness;
  let taskId: string;

  before(async () => {
    h = await startHarness({ env: { QUARRY_STARTER_CREDITS: '1000', QUARRY_RATE_LIMIT_PER_MIN: '100000' } });
    h.model!.script(
      write('makers', [{ ...makerRow(1), _sources: [{ url: 'https://example.com/acme', title: 'Acme' }] }, ...Array.from({ length: MAKER_COUNT - 1 }, (_, i) => makerRow(i + 2))], MAKER_SOURCES),
      write('big', Array.from({ length: BIG_COUNT }, (_, i) => ({ label: `row, "${i + 1}"`, value: i + 1 })), [{ url: 'https://example.com/big' }]),
      write('summary', [{ heading: 'Overview', markdown: '# Overview\n\nSome *text*, with a comma.' }, { heading: 'Details', markdown: 'Points:\n- one\n- two' }], [{ url: 'https://example.com/report' }]),
      write('facts', [{ claim: 'first', n: 1 }, { claim: 'second', n: 2, _sources: [{ url: 'https://example.com/second', quote: 'second' }] }], [{ url: 'https://example.com/facts' }]),
      { text: 'All written.' },
    );
    const res = await h.request('POST', '/task/start', { body: { task: { name: 'Outputs', prompt: 'Fill the outputs.', outputs: [MAKERS, BIG, SUMMARY, FACTS] } } });
    assert.equal(res.status, 200, res.text);
    taskId = res.body.task_id;
    await waitIdle(h, taskId, 20_000);
    const outputs = await h.request('GET', `/task/${taskId}/outputs`);
    const counts = Object.fromEntries(outputs.body.outputs.map((o: any) => [o.id, o.row_count]));
    assert.deepEqual(counts, { makers: MAKER_COUNT, big: BIG_COUNT, summary: 2, facts: 2 }, 'the scripted turn wrote every output');
  });
  after(() => h.close());

  it('counts total before limit and pages with limit and offset', async () => {
    const first = await h.request('GET', `/task/${taskId}/output?output=makers&limit=10`);
    assert.equal(first.status, 200, first.text);
    assert.match(first.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(first.body.total, MAKER_COUNT, 'total counts every row, not just this page');
    assert.deepEqual(first.body.rows.map((r: any) => r._row), Array.from({ length: 10 }, (_, i) => i + 1));
    assert.deepEqual(first.body.output, { id: 'makers', kind: 'table', path: 'outputs/makers.csv' });

    const last = await h.request('GET', `/task/${taskId}/output?output=makers&limit=10&offset=20`);
    assert.equal(last.body.total, MAKER_COUNT);
    assert.deepEqual(last.body.rows.map((r: any) => r._row), [21, 22, 23, 24, 25]);
    assert.deepEqual(last.body.rows.map((r: any) => r.company), ['Maker 21', 'Maker 22', 'Maker 23', 'Maker 24', 'Maker 25']);
    assert.deepEqual(last.body.rows.map((r: any) => r.country), ['Österreich', '中国 🏭', 'Österreich', '中国 🏭', 'Österreich'], 'text outside ASCII comes back as written');
    assert.equal(Number(last.headers.get('content-length')), Buffer.byteLength(last.text), 'Content-Length counts bytes');

    const past = await h.request('GET', `/task/${taskId}/output?output=makers&offset=25`);
    assert.equal(past.body.total, MAKER_COUNT);
    assert.deepEqual(past.body.rows, []);
    const farPast = await h.request('GET', `/task/${taskId}/output?output=makers&offset=1000`);
    assert.deepEqual(farPast.body.rows, []);

    const named = await h.request('GET', `/task/${taskId}/outputs/makers?limit=7&offset=7`);
    assert.equal(named.status, 200, named.text);
    assert.equal(named.body.total, MAKER_COUNT);
    assert.deepEqual(named.body.rows.map((r: any) => r._row), [8, 9, 10, 11, 12, 13, 14]);
    assert.deepEqual(named.body.output, { id: 'makers', kind: 'table', path: 'outputs/makers.csv' });

    // Walking the pages gives every row once, in order.
    const walked: number[] = [];
    for (let offset = 0; offset < MAKER_COUNT; offset += 4) {
      const page = await h.request('GET', `/task/${taskId}/outputs/makers?limit=4&offset=${offset}`);
      walked.push(...page.body.rows.map((r: any) => r._row));
    }
    assert.deepEqual(walked, Array.from({ length: MAKER_COUNT }, (_, i) => i + 1));
  });

  it('defaults to 100 rows, allows up to 50000, and refuses limits outside 1..50000', async () => {
    const byDefault = await h.request('GET', `/task/${taskId}/output?output=big`);
    assert.equal(byDefault.body.total, BIG_COUNT);
    assert.equal(byDefault.body.rows.length, 100, 'the default limit on /output is 100');
    const all = await h.request('GET', `/task/${taskId}/outputs/big?limit=50000`);
    assert.equal(all.status, 200);
    assert.equal(all.body.rows.length, BIG_COUNT);
    assert.deepEqual(all.body.rows.at(-1), { _row: BIG_COUNT, label: `row, "${BIG_COUNT}"`, value: BIG_COUNT, _sources: [notRead({ url: 'https://example.com/big' })], ...unchecked({ label: 1, value: 1 }) });
    for (const bad of ['0', '50001', '-3', 'ten']) {
      const res = await h.request('GET', `/task/${taskId}/output?output=big&limit=${bad}`);
      assert.equal(res.status, 422, `limit=${bad}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_request');
      assert.equal(res.body.param, 'limit');
    }
    const badOffset = await h.request('GET', `/task/${taskId}/outputs/big?offset=-1`);
    assert.equal(badOffset.status, 422);
    assert.equal(badOffset.body.param, 'offset');
  });

  it('rows carry _row and _sources (with the fields a source supports)', async () => {
    const res = await h.request('GET', `/task/${taskId}/output?output=makers&limit=2`);
    assert.deepEqual(res.body.rows, [
      { _row: 1, ...makerRow(1), _sources: [notRead({ url: 'https://example.com/acme', title: 'Acme' })], ...unchecked(makerRow(1)) },
      { _row: 2, ...makerRow(2), _sources: STORED_MAKER_SOURCES, ...unchecked(makerRow(2)) },
    ]);
  });

  it('output= picks another output; an unknown output is 404 not_found', async () => {
    const summary = await h.request('GET', `/task/${taskId}/output?output=summary`);
    assert.equal(summary.status, 200);
    assert.deepEqual(summary.body.output, { id: 'summary', kind: 'report', path: 'reports/summary.md' });
    assert.equal(summary.body.total, 2);

    for (const path of [`/task/${taskId}/output?output=nosuch`, `/task/${taskId}/outputs/nosuch`, `/task/${taskId}/outputs/nosuch?format=csv`]) {
      const res = await h.request('GET', path);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.equal(res.body.error, 'not_found', path);
      assert.equal(typeof res.body.message, 'string');
    }
    const unknownTask = await h.request('GET', '/task/no-such-task/output');
    assert.equal(unknownTask.status, 404);
    assert.equal(unknownTask.body.error, 'task_not_found');
    const unknownTaskNamed = await h.request('GET', '/task/no-such-task/outputs/makers');
    assert.equal(unknownTaskNamed.body.error, 'task_not_found');
    const unknownTaskList = await h.request('GET', '/task/no-such-task/outputs');
    assert.equal(unknownTaskList.body.error, 'task_not_found');
  });

  it('GET /task/{id}/outputs lists every output with id, kind, path and row_count', async () => {
    const res = await h.request('GET', `/task/${taskId}/outputs`);
    assert.equal(res.status, 200);
    const outputs = res.body.outputs as any[];
    assert.deepEqual(outputs.map((o) => [o.id, o.kind, o.path, o.row_count]), [
      ['makers', 'table', 'outputs/makers.csv', MAKER_COUNT],
      ['big', 'table', 'outputs/big.csv', BIG_COUNT],
      ['summary', 'report', 'reports/summary.md', 2],
      ['facts', 'records', 'outputs/facts.jsonl', 2],
    ]);
    // No page was read in this task, so no row is verified.
    assert.deepEqual(outputs.map((o) => [o.id, o.verified_rows, o.unverified_rows]), [
      ['makers', 0, MAKER_COUNT],
      ['big', 0, BIG_COUNT],
      ['summary', 0, 2],
      ['facts', 0, 2],
    ]);
    assert.equal(outputs[0].description, 'one row per plant');
    assert.deepEqual(outputs[0].columns.map((c: any) => [c.name, c.type]), [['company', 'string'], ['country', 'string'], ['capacity_gwh', 'number'], ['source_url', 'url']]);
    assert.equal(outputs[2].columns, undefined, 'a report has no columns');
    for (const o of outputs) assert.ok(typeof o.updated_at === 'string' && !Number.isNaN(Date.parse(o.updated_at)), `${o.id} has updated_at`);
    const task = await h.request('GET', `/task/${taskId}`);
    assert.equal(task.body.output_count, 4);
  });

  it('report and records outputs keep their own row shapes', async () => {
    const summary = await h.request('GET', `/task/${taskId}/outputs/summary`);
    assert.deepEqual(summary.body.rows, [
      { _row: 1, heading: 'Overview', markdown: '# Overview\n\nSome *text*, with a comma.', _sources: [notRead({ url: 'https://example.com/report' })], ...unchecked({ heading: 1, markdown: 1 }) },
      { _row: 2, heading: 'Details', markdown: 'Points:\n- one\n- two', _sources: [notRead({ url: 'https://example.com/report' })], ...unchecked({ heading: 1, markdown: 1 }) },
    ]);
    const facts = await h.request('GET', `/task/${taskId}/outputs/facts`);
    assert.deepEqual(facts.body.output, { id: 'facts', kind: 'records', path: 'outputs/facts.jsonl' });
    assert.deepEqual(facts.body.rows, [
      { _row: 1, claim: 'first', n: 1, _sources: [notRead({ url: 'https://example.com/facts' })], ...unchecked({ claim: 1, n: 1 }) },
      { _row: 2, claim: 'second', n: 2, _sources: [notRead({ url: 'https://example.com/second', quote: 'second' })], ...unchecked({ claim: 1, n: 1 }) },
    ]);
  });

  it('format=csv exports the whole output as CSV, whatever the limit', async () => {
    const res = await h.request('GET', `/task/${taskId}/output?output=makers&format=csv&limit=5`);
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^text\/csv/);
    const records = parseCsv(res.text);
    assert.deepEqual(records[0], ['_row', 'company', 'country', 'capacity_gwh', 'source_url', '_sources']);
    assert.equal(records.length, 1 + MAKER_COUNT, 'every row, not one page');
    assert.deepEqual(records[1], ['1', 'Maker 1', 'Österreich', '1.5', 'https://example.com/m/1', 'https://example.com/acme [not_read]']);
    assert.deepEqual(records[25], ['25', 'Maker 25', 'Österreich', '37.5', 'https://example.com/m/25', 'https://example.com/makers [not_read]']);

    // A large export (more than one write's worth) arrives whole, quoting intact.
    const big = await h.request('GET', `/task/${taskId}/outputs/big?format=csv`);
    const bigRecords = parseCsv(big.text);
    assert.equal(bigRecords.length, 1 + BIG_COUNT);
    assert.deepEqual(bigRecords.slice(1).map((r) => Number(r[0])), Array.from({ length: BIG_COUNT }, (_, i) => i + 1));
    assert.deepEqual(bigRecords[BIG_COUNT], [String(BIG_COUNT), `row, "${BIG_COUNT}"`, String(BIG_COUNT), 'https://example.com/big [not_read]']);

    const report = parseCsv((await h.request('GET', `/task/${taskId}/outputs/summary?format=csv`)).text);
    assert.deepEqual(report, [
      ['_row', 'heading', 'markdown', '_sources'],
      ['1', 'Overview', '# Overview\n\nSome *text*, with a comma.', 'https://example.com/report [not_read]'],
      ['2', 'Details', 'Points:\n- one\n- two', 'https://example.com/report [not_read]'],
    ]);
    const records2 = parseCsv((await h.request('GET', `/task/${taskId}/outputs/facts?format=csv`)).text);
    assert.equal(records2.length, 3);
    assert.deepEqual(records2[0], ['_row', 'record', '_sources']);
    assert.deepEqual(JSON.parse(records2[1]![1]!), { claim: 'first', n: 1 });
  });

  it('format=jsonl exports one JSON row per line, the same rows the JSON pages give', async () => {
    const res = await h.request('GET', `/task/${taskId}/outputs/big?format=jsonl&limit=3`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/(x-ndjson|jsonl|x-jsonlines|json-lines)/);
    const lines = res.text.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, BIG_COUNT, 'every row, not one page');
    const paged = await h.request('GET', `/task/${taskId}/outputs/big?limit=50000`);
    assert.deepEqual(lines.map((l) => JSON.parse(l)), paged.body.rows);

    const facts = await h.request('GET', `/task/${taskId}/output?output=facts&format=jsonl`);
    const factsPaged = await h.request('GET', `/task/${taskId}/output?output=facts`);
    assert.deepEqual(facts.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l)), factsPaged.body.rows);
  });

  it('Accept: text/csv exports as CSV too', async () => {
    const named = await h.request('GET', `/task/${taskId}/outputs/makers`, { headers: { accept: 'text/csv' } });
    assert.equal(named.status, 200);
    assert.match(named.headers.get('content-type') ?? '', /^text\/csv/);
    assert.equal(parseCsv(named.text).length, 1 + MAKER_COUNT);
    const active = await h.request('GET', `/task/${taskId}/output?output=summary`, { headers: { accept: 'text/csv, application/json;q=0.5' } });
    assert.match(active.headers.get('content-type') ?? '', /^text\/csv/);
    assert.deepEqual(parseCsv(active.text)[0], ['_row', 'heading', 'markdown', '_sources']);
    const json = await h.request('GET', `/task/${taskId}/outputs/makers?limit=1`, { headers: { accept: 'application/json' } });
    assert.match(json.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(json.body.rows.length, 1);
  });

  it('the active output is the one most recently written', async () => {
    // After the first turn: facts was written last.
    let page = await h.request('GET', `/task/${taskId}/output?limit=1`);
    assert.equal(page.body.output.id, 'facts');
    assert.equal((await h.request('GET', `/task/${taskId}`)).body.active_output, 'facts');

    h.model!.script(write('makers', [makerRow(26)], MAKER_SOURCES), { text: 'Added one.' });
    assert.equal((await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Add a maker.' } })).status, 200);
    await waitIdle(h, taskId);
    page = await h.request('GET', `/task/${taskId}/output?limit=1&offset=25`);
    assert.equal(page.body.output.id, 'makers');
    assert.equal(page.body.total, MAKER_COUNT + 1);
    assert.deepEqual(page.body.rows, [{ _row: 26, ...makerRow(26), _sources: STORED_MAKER_SOURCES, ...unchecked(makerRow(26)) }]);
    assert.equal((await h.request('GET', `/task/${taskId}`)).body.active_output, 'makers');
    const csv = await h.request('GET', `/task/${taskId}/output?format=csv`);
    assert.equal(parseCsv(csv.text).length, 2 + MAKER_COUNT, 'the export without output= is the active output too');

    h.model!.script(write('summary', [{ heading: 'More', markdown: 'text' }]), { text: 'Added a section.' });
    assert.equal((await h.request('POST', `/task/${taskId}/continue`, { body: { message: 'Add a section.' } })).status, 200);
    await waitIdle(h, taskId);
    page = await h.request('GET', `/task/${taskId}/output`);
    assert.equal(page.body.output.id, 'summary');
    assert.equal(page.body.total, 3);
  });

  it('before any row is written, the active output is the first declared, with no rows', async () => {
    h.model!.script({ hang: true });
    const res = await h.request('POST', '/task/start', { body: { task: { prompt: 'Nothing yet.', outputs: [SUMMARY, MAKERS] } } });
    const fresh = res.body.task_id as string;
    try {
      // The turn holds its model call (so the next task's turn cannot take the hanging reply).
      await until('the turn\'s model call', () => h.model!.pending() === 1);
      const page = await h.request('GET', `/task/${fresh}/output`);
      assert.equal(page.status, 200);
      assert.deepEqual(page.body, { total: 0, rows: [], output: { id: 'summary', kind: 'report', path: 'reports/summary.md' } });
      const list = await h.request('GET', `/task/${fresh}/outputs`);
      assert.deepEqual(list.body.outputs.map((o: any) => [o.id, o.row_count]), [['summary', 0], ['makers', 0]]);
      const csv = await h.request('GET', `/task/${fresh}/outputs/makers?format=csv`);
      assert.deepEqual(parseCsv(csv.text), [['_row', 'company', 'country', 'capacity_gwh', 'source_url', '_sources']]);
    } finally {
      await h.request('POST', `/task/${fresh}/stop`, { body: {} });
      await waitIdle(h, fresh);
    }
  });

  it('a task with no outputs answers {total: 0, rows: [], output: null}', async () => {
    const res = await h.request('POST', '/task', { body: { prompt: 'Just think, declare nothing.' } });
    const bare = res.body.task_id as string;
    await waitIdle(h, bare);
    const page = await h.request('GET', `/task/${bare}/output`);
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(page.body, { total: 0, rows: [], output: null });
    const list = await h.request('GET', `/task/${bare}/outputs`);
    assert.deepEqual(list.body, { outputs: [] });
    const named = await h.request('GET', `/task/${bare}/output?output=makers`);
    assert.equal(named.status, 404);
    assert.equal(named.body.error, 'not_found');
    assert.equal((await h.request('GET', `/task/${bare}`)).body.active_output, null);
  });
});
